"""The span-boundary objective (SBO) of SpanBERT (Joshi et al. 2019, Sect. 3.2, arXiv:1907.10529v3).

Each token x_i of a masked span (s, e) is predicted again, now only from the encoder's outputs at the two
tokens just outside the span, x_{s−1} and x_{e+1}, and from its position in the span:

    y_i = f(x_{s−1}, x_{e+1}, p_{i−s+1})                                                       Eq. 1
    h_0 = [x_{s−1}; x_{e+1}; p_{i−s+1}]
    h_1 = LayerNorm(GeLU(W_1 h_0))
    y_i = LayerNorm(GeLU(W_2 h_1))                                                             Eq. 2

y_i is then scored against the vocabulary by the output embedding the MLM head uses (tied to the input
embeddings), and the two losses are added for every span token:

    L(x_i) = L_MLM(x_i) + L_SBO(x_i) = −log P(x_i | x_i) − log P(x_i | y_i)                   Eq. 3

``boundary_targets`` turns the spans of an instance into the per-token indices the head reads (the left and
right boundary positions and the relative position i − s, 0-based: p_{i−s+1} is row i − s of the table).
Departure, marked: SpanBERT's spans are at most 10 *words*, so a span may be longer than 10 WordPieces;
a relative position past the end of the table is clipped to its last row (make the table long enough,
``positions``, and nothing is clipped).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.objectives.cross_entropy import IGNORE_INDEX


class SpanBoundaryHead(nn.Module):
    """Eq. 2: a two-layer feed-forward network with GeLU and layer normalisation on the two boundary states
    and a relative position embedding; d = hidden_size, P = positions, D = position_size (d by default)."""

    def __init__(
        self,
        hidden_size: int,
        positions: int = 10,
        position_size: int | None = None,
        layer_norm_eps: float = 1e-12,
    ):
        super().__init__()
        d, D = hidden_size, position_size or hidden_size
        self.position_embeddings = nn.Embedding(positions, D)  # p_1 … p_P
        self.W1 = nn.Linear(2 * d + D, d)
        self.norm1 = nn.LayerNorm(d, eps=layer_norm_eps)
        self.W2 = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=layer_norm_eps)

    def forward(self, left: torch.Tensor, right: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """left, right (N, d): x_{s−1}, x_{e+1}; position (N,): i − s (0-based) → y_i (N, d)."""
        position = position.clamp(max=self.position_embeddings.num_embeddings - 1)  # departure: clipped
        h0 = torch.cat([left, right, self.position_embeddings(position)], -1)  # (N, 2d + D)
        h1 = self.norm1(F.gelu(self.W1(h0)))  # (N, d)
        return self.norm2(F.gelu(self.W2(h1)))  # (N, d)


def boundary_targets(spans: list[tuple[int, int]], length: int) -> tuple[list[int], list[int], list[int]]:
    """For an instance of ``length`` tokens whose masked spans are ``spans`` (s, e inclusive), three lists of
    ``length``: at each span token i the boundary positions s − 1 and e + 1 and the relative position i − s,
    0 elsewhere. The boundaries of a span at the edge of the text are [CLS] and [SEP] (spans never cover a
    special token)."""
    left, right, position = [0] * length, [0] * length, [0] * length
    for s, e in spans:
        if s < 1 or e + 1 >= length:
            raise ValueError(f"span ({s}, {e}) has no boundary inside {length} tokens")
        for i in range(s, e + 1):
            left[i], right[i], position[i] = s - 1, e + 1, i - s
    return left, right, position


def span_boundary_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_SBO: mean cross-entropy of the span tokens, logits (N, V) and their targets (N,), in fp32."""
    return F.cross_entropy(logits.float(), targets, ignore_index=IGNORE_INDEX)
