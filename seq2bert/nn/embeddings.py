"""Token embeddings and positional encodings (Vaswani et al. 2017, Sect. 3.4 and 3.5).

    "In the embedding layers, we multiply those weights by √d_model."                          Sect. 3.4
    PE(pos, 2i) = sin(pos / 10000^{2i/d_model}),  PE(pos, 2i+1) = cos(pos / 10000^{2i/d_model})   Sect. 3.5

The paper interleaves sine and cosine (even / odd dimensions); tensor2tensor, fairseq and Marian put all
the sines first and all the cosines second — the same frequencies in another order (``interleaved=False``).
Learned positions (the paper's Table 3, row E; GPT and BERT) are an ``nn.Embedding`` over positions.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_table(num_positions: int, d_model: int, *, interleaved: bool = True) -> torch.Tensor:
    """PE (num_positions, d_model) of Sect. 3.5; ``interleaved=False``: [sin … | cos …] (Marian, fairseq)."""
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]  # (P, 1)
    i = torch.arange((d_model + 1) // 2, dtype=torch.float64)  # (⌈d/2⌉,): the sine dimensions 2i
    angle = pos / 10000 ** (2 * i / d_model)  # pos / 10000^{2i/d_model}: (P, ⌈d/2⌉)
    sin, cos = torch.sin(angle), torch.cos(angle)[:, : d_model // 2]
    if interleaved:
        pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = sin, cos
    else:
        pe = torch.cat([sin, cos], dim=1)
    return pe.float()


@torch.no_grad()
def init_sinusoidal_(positions: nn.Embedding, std: float) -> None:
    """Learned positions (a parameter still) started from the sinusoids of Sect. 3.5 scaled to root mean
    square ``std``, the scale of the table's usual N(0, std²) start: neighbouring positions alike from the
    first step, where a random table leaves them unrelated until training orders them."""
    table = sinusoidal_table(*positions.weight.shape)  # entries of root mean square 1/√2
    positions.weight.copy_(table * (std * math.sqrt(2.0)))


class SinusoidalPositionalEncoding(nn.Module):
    """Fixed positional encodings, looked up by position: positions (…) → (…, d_model). Not a parameter and
    not saved with the weights (it is a function of d_model) unless ``persistent`` (a checkpoint layout that
    stores the table, DistilBERT's); positions past the table are computed anew."""

    def __init__(
        self, d_model: int, max_positions: int = 1024, *, interleaved: bool = True, persistent: bool = False
    ):
        super().__init__()
        self.d_model, self.interleaved = d_model, interleaved
        self.register_buffer(
            "table", sinusoidal_table(max_positions, d_model, interleaved=interleaved), persistent=persistent
        )

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        needed = int(positions.max()) + 1 if positions.numel() else 0
        if needed > self.table.size(0):
            self.table = sinusoidal_table(needed, self.d_model, interleaved=self.interleaved).to(self.table)
        return self.table[positions]


class ScaledEmbedding(nn.Embedding):
    """Token embeddings multiplied by ``scale`` (√d_model in the Transformer, Sect. 3.4; 1 for BERT / GPT).

    Its ``weight`` (V, d_model) can be shared with the output projection and between source and target
    ("we share the same weight matrix between the two embedding layers and the pre-softmax linear
    transformation", Sect. 3.4)."""

    def __init__(
        self, num_embeddings: int, d_model: int, *, padding_idx: int | None = None, scale: float = 1.0
    ):
        super().__init__(num_embeddings, d_model, padding_idx=padding_idx)
        self.scale = scale

    @classmethod
    def transformer(
        cls, num_embeddings: int, d_model: int, *, padding_idx: int | None = None
    ) -> ScaledEmbedding:
        return cls(num_embeddings, d_model, padding_idx=padding_idx, scale=math.sqrt(d_model))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return super().forward(input_ids) * self.scale
