"""The scalar mix of ELMo (Peters et al. 2018, Sect. 3.2, Eq. 1): a task's own weighting of the layers of a
pretrained network, learned with the task — the one place an ELMo representation has task parameters::

    ELMo_k^task = γ^task Σ_{j=0}^{L} s_j^task h_{k,j}^LM        s^task = softmax(w^task),  γ^task a scale

h_{k,j} is layer j's vector of token k (for the biLM: j = 0 the token layer, j ≥ 1 the LSTM layers). With w
at zero and γ at one (the start), the mix is the average of the layers.

Options the paper describes:

* ``layer_norm``: each layer normalised before the weighting ("in some cases", Sect. 3.2). As AllenNLP does
  it, the mean and variance of a layer are taken over the real tokens of the batch and all their features
  (one pair of statistics per layer, padding left out), so a token's mix depends on its batch when it is on.
* ``dropout``: on the mix ("a moderate amount of dropout to ELMo", Sect. 3.3).
* ``penalty(λ)``: the regulariser that keeps the weights near the average, λ Σ_j (w_j − w̄)². The paper writes
  λ‖w‖²₂; softmax ignores a shift of every w_j, and Σ_j (w_j − w̄)² is that norm without the shift (w̄ the
  mean weight): it pulls s toward equal weights and leaves alone what s cannot see. Add it to the task loss.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class ScalarMix(nn.Module):
    """γ Σ_j softmax(w)_j h_j over ``num_layers`` layers of equal shape (B, T, D) → (B, T, D)."""

    def __init__(
        self,
        num_layers: int,
        *,
        layer_norm: bool = False,
        dropout: float = 0.0,
        initial_weights: Sequence[float] | None = None,
        eps: float = 1e-12,
    ):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        if initial_weights is not None and len(initial_weights) != num_layers:
            raise ValueError(f"{len(initial_weights)} initial weights for {num_layers} layers")
        w = (
            torch.zeros(num_layers)
            if initial_weights is None
            else torch.tensor(initial_weights, dtype=torch.float)
        )
        self.weights = nn.Parameter(w)  # w^task, before the softmax
        self.gamma = nn.Parameter(torch.ones(()))  # γ^task
        self.layer_norm, self.eps = layer_norm, eps
        self.dropout = nn.Dropout(dropout)

    @property
    def s(self) -> torch.Tensor:
        """The layer weights s = softmax(w): (L + 1,)."""
        return torch.softmax(self.weights, dim=0)

    def normalise(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """One layer (B, T, D) normalised by its mean and variance over the real tokens and features."""
        if mask is None:
            mean, var = h.mean(), h.var(unbiased=False)
        else:
            m = mask[..., None].to(h.dtype)  # (B, T, 1)
            count = m.sum() * h.size(-1)
            mean = (h * m).sum() / count
            var = (((h - mean) * m) ** 2).sum() / count
        return (h - mean) / torch.sqrt(var + self.eps)

    def forward(self, layers: Sequence[torch.Tensor], mask: torch.Tensor | None = None) -> torch.Tensor:
        """``layers``: L + 1 tensors (B, T, D); ``mask`` (B, T), 1 at real tokens (layer_norm needs it with
        padding)."""
        if len(layers) != self.weights.numel():
            raise ValueError(f"{len(layers)} layers for a mix of {self.weights.numel()}")
        s = self.s
        if self.layer_norm:
            layers = [self.normalise(h, mask) for h in layers]
        mixed = sum(s_j * h_j for s_j, h_j in zip(s, layers, strict=True))  # Σ_j s_j h_j: (B, T, D)
        return self.dropout(self.gamma * mixed)

    def penalty(self, strength: float) -> torch.Tensor:
        """λ Σ_j (w_j − w̄)²: the pull toward equal layer weights, to add to the task's loss."""
        return strength * ((self.weights - self.weights.mean()) ** 2).sum()
