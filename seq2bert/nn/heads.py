"""Output layers ("heads") that turn hidden states into next-token logits.

The deep output with a maxout hidden layer of Cho et al. (2014, Sect. 4.1.1 and Appendix A) and Bahdanau,
Cho & Bengio (2015, Appendix A.2.2). For the RNN encoder-decoder (and likewise for RNNsearch, with c_i)::

    s'_t = O_h h'_t + O_y e(y_{t−1}) + O_c c          (one affine map of the concatenated inputs)
    s_t[k] = max(s'_t[2k−1], s'_t[2k])                  maxout with pools of 2 (Goodfellow et al. 2013)
    p(y_t | …) = softmax(G s_t)
"""

from __future__ import annotations

import torch
from torch import nn


class MaxoutDeepOutput(nn.Module):
    """Logits from several inputs through one maxout layer: concat inputs (…, I) → (…, maxout_size) → (…, V)."""

    def __init__(
        self, input_size: int, maxout_size: int, vocab_size: int, *, pool: int = 2, dropout: float = 0.0
    ):
        super().__init__()
        self.pool = pool
        self.input = nn.Linear(input_size, pool * maxout_size)  # O_h, O_y, O_c stacked, with one bias
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(maxout_size, vocab_size)  # G

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """inputs (…, I_k) with Σ I_k = input_size → logits (…, V)."""
        s = self.input(torch.cat(inputs, dim=-1))  # (…, pool·l)
        s = s.unflatten(-1, (-1, self.pool)).amax(dim=-1)  # maxout: (…, l)
        return self.output(self.dropout(s))
