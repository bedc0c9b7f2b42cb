"""The position-wise feed-forward network (Vaswani et al. 2017, Sect. 3.3):

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2                                               Eq. 2

"two linear transformations with a ReLU activation in between", d_model → d_ff → d_model, applied to each
position separately. BERT and GPT use GELU, Marian checkpoints often SiLU ("swish"): ``activation``.
Dropout after the activation is ``activation_dropout`` (0 in the paper; Marian and fairseq have it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,  # exact (erf) GELU, as BERT
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2's tanh approximation
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),  # the same, transformers' other name
    "swish": F.silu,
    "silu": F.silu,
}


class PositionwiseFeedForward(nn.Module):
    """Eq. 2: x (B, T, d_model) → (B, T, d_model) through d_ff hidden units."""

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        *,
        activation: str = "relu",
        activation_dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        self.w_1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w_2 = nn.Linear(d_ff, d_model, bias=bias)
        self.activation = activation
        self.act = ACTIVATIONS[activation]
        self.dropout = nn.Dropout(activation_dropout)

    def linear_roles(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """W_1 and W_2 (what LoRA adapts: nn/lora.py)."""
        return {"w_1": (("ffn_in", self.w_1.out_features),), "w_2": (("ffn_out", self.w_2.out_features),)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(self.dropout(self.act(self.w_1(x))))  # Eq. 2
