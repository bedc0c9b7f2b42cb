"""The position channel of the stack: where a position scheme may act on a Transformer, and the one record of
positions the stack computes per forward and hands every layer.

Self-attention without positions is permutation-equivariant (Vaswani et al. 2017, Sect. 3.5); a scheme puts
the order back at one or more of these places (x: the stack's input; q_i, k_j, v_j: one head's query of
position i, key and value of position j; d_k the head size):

    (a) input    x_t ← x_t + P(t)                         absolute: sinusoids (Sect. 3.5), learned (Table 3,
                                                          row E; BERT, GPT)
    (b) scores   e_ij = q_i·k_j / √d_k + b_ij              a bias per head / query / key: Shaw et al. (2018)
                                                          b_ij = q_i·a^K_ij / √d_z; ALiBi (Press et al. 2022)
                                                          b_ij = −m_h·(i − j); DeBERTa's (He et al. 2021) c2p
                                                          + p2c terms q_i·K^r_δ(i,j) + k_j·Q^r_δ(j,i)
    (c) rotation q_i ← R_i q_i,  k_j ← R_j k_j             rotary (Su et al. 2021): R_iᵀR_j = R_{j−i}, so
                                                          q_i·k_j depends on j − i only
    (v) values   z_i = Σ_j α_ij v_j + Σ_j α_ij a^V_ij      Shaw et al.'s Eq. 3 (a^V: the values' term)
    (d) a second query stream (XLNet, Yang et al. 2019): queries g (B, T, d_model) of their own that attend to
        the content stream's keys and values with their own mask (seq2bert/nn/layers.py, ``QueryStream``)

Two roles, both injected by keyword and both optional (None: today's models, unchanged and as fast):

    PositionScheme      the stack's (TransformerStack(positions=…)): ``positions(T, past)`` → Positions, once
                        per forward, and (a) ``embed``. Its ``Positions.bias`` (h | 1, T_q, T_k), if any, is a
                        score bias every self-attention adds (ALiBi: one for the whole stack).
    AttentionPositions  each self-attention's (MultiHeadAttention(position=…)), with the layer's own
                        parameters if any: (c) ``rotate``, (b) ``score_bias``, (v) ``value_term``.

A float score bias goes through torch's fused kernel as its ``attn_mask`` (seq2bert/nn/multihead.py); only a
value term, which needs the weights α, takes the explicit computation.

Incremental decoding: with a key/value cache of ``past`` steps, the T new queries sit at positions past … past
+ T − 1 and the keys at 0 … past + T − 1 (the cached ones first), so the query at t against keys 0 … t
sees the same positions as in the full pass. The positions are the sequence's indices, the same for every
row: left padding moves all of a row's real tokens alike, which a relative scheme ((b), (c), (v)) does not
see. Shapes: Positions.query (T_q,), key (T_k,), index (T_q, T_k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Positions:
    """What the stack computes once per forward for every layer: the positions of the queries ``query``
    (T_q,) and of the keys ``key`` (T_k,), long; a scheme's per-pair ``index`` (T_q, T_k), long (Shaw et
    al.'s clip(j − i, k) + k), and a score ``bias`` (h | 1, T_q, T_k), float, that every self-attention
    adds; a scheme's ``encoding`` (n, d_model) of the relations ``index`` points into (Transformer-XL's
    sinusoids of i − j, which each layer projects with its own W_R); and, when the stack is given segment
    ids, ``other_segment`` (B, T_q, T_k), bool: whether query i and key j lie in different segments (XLNet's
    relative segment encodings)."""

    query: torch.Tensor
    key: torch.Tensor
    index: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    encoding: torch.Tensor | None = None
    other_segment: torch.Tensor | None = None

    @property
    def distance(self) -> torch.Tensor:
        """j − i: (T_q, T_k), long."""
        return self.key[None, :] - self.query[:, None]

    def at_rows(self, rows: torch.Tensor) -> Positions:
        """The positions of P queries per batch row that sit where the queries ``rows`` (B, P) of these sit
        (XLNet's query stream read at its P predicted positions only): ``query`` (B, P), ``index`` (B, 1, P,
        T_k), ``bias`` (B, h | 1, P, T_k), ``other_segment`` (B, P, T_k); the keys and encoding as they are."""
        batch = torch.arange(rows.size(0), device=rows.device)[:, None]  # (B, 1)
        return Positions(
            query=self.query[rows],
            key=self.key,
            index=None if self.index is None else self.index[rows][:, None],
            bias=None if self.bias is None else self.bias[:, rows].transpose(0, 1),
            encoding=self.encoding,
            other_segment=None if self.other_segment is None else self.other_segment[batch, rows],
        )


class PositionScheme(nn.Module):
    """The stack's half of a scheme. The base computes the positions only and adds nothing to the input."""

    def positions(self, length: int, past: int = 0, device: torch.device | str | None = None) -> Positions:
        """T = ``length`` new queries at past … past + T − 1, keys at 0 … past + T − 1."""
        return Positions(
            query=torch.arange(past, past + length, device=device),  # (T_q,)
            key=torch.arange(past + length, device=device),  # (T_k,)
        )

    def embed(self, x: torch.Tensor, positions: Positions) -> torch.Tensor:
        """(a): the stack's input x (B, T, d_model) at ``positions.query`` → (B, T, d_model)."""
        return x


class AttentionPositions(nn.Module):
    """One self-attention's half of a scheme (the base does nothing). ``uses_weights``: ``value_term`` reads
    the attention weights, so the attention computes them explicitly (no fused kernel)."""

    uses_weights = False

    def rotate(self, x: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        """(c): queries or keys x (B, h, T, d_k) at positions ``at`` (T,) → (B, h, T, d_k)."""
        return x

    def score_bias(
        self, q: torch.Tensor, k: torch.Tensor, positions: Positions, scale: float
    ) -> torch.Tensor | None:
        """(b): a bias (B | 1, h | 1, T_q, T_k) added to the scaled scores QKᵀ·scale of queries q (B, h, T_q,
        d_k) and keys k (B, h, T_k, d_k), cached ones included (a term of the keys' own: DeBERTa's
        position-to-content); ``scale`` is the attention's (1/√d_k unless it says otherwise). None: no
        bias."""
        return None

    def value_term(self, weights: torch.Tensor, positions: Positions) -> torch.Tensor | None:
        """(v): Σ_j α_ij a_ij of the weights α (B, h, T_q, T_k) → (B, h, T_q, d_v), added to the heads."""
        return None


class AbsolutePositions(PositionScheme):
    """(a) as a scheme: x_t ← x_t + P(t) with a table P (an ``nn.Embedding`` of learned positions or a
    SinusoidalPositionalEncoding), positions (…) → (…, d_model). Today's models add their positions in their
    embeddings instead (the same sum; kept so that their state-dict keys stay where checkpoints have them)."""

    def __init__(self, table: nn.Module):
        super().__init__()
        self.table = table

    def embed(self, x: torch.Tensor, positions: Positions) -> torch.Tensor:
        return x + self.table(positions.query)  # (B, T, d_model) + (T, d_model)


class RelativePositions(PositionScheme):
    """The stack's half of relative position representations (Shaw, Uszkoreit & Vaswani 2018, Sect. 3.2): the
    index of each pair, clip(j − i, k) + k ∈ {0 … 2k} with clip(x, k) = max(−k, min(k, x)), computed once
    for every layer; each layer has its RelativePositionRepresentations."""

    def __init__(self, max_relative_position: int):
        super().__init__()
        if max_relative_position < 1:
            raise ValueError(f"max_relative_position: must be at least 1, got {max_relative_position}")
        self.k = max_relative_position

    def positions(self, length: int, past: int = 0, device: torch.device | str | None = None) -> Positions:
        p = super().positions(length, past, device)
        p.index = p.distance.clamp(-self.k, self.k) + self.k  # clip(j − i, k) + k: (T_q, T_k)
        return p


class RelativePositionRepresentations(AttentionPositions):
    """Shaw, Uszkoreit & Vaswani (2018), "Self-Attention with Relative Position Representations", Sect. 3:
    the edge between positions i and j carries a^K_ij, a^V_ij ∈ R^{d_z}, learned, shared across heads:

        z_i  = Σ_j α_ij (x_j W^V + a^V_ij),   α_ij = softmax_j(e_ij)                          Eq. 3
        e_ij = x_i W^Q (x_j W^K + a^K_ij)ᵀ / √d_z                                            Eq. 4
        a^K_ij = w^K_clip(j−i, k),  a^V_ij = w^V_clip(j−i, k),  clip(x, k) = max(−k, min(k, x))  Sect. 3.2

    2k + 1 vectors w_{−k} … w_k of each kind per layer (``keys``: (2k + 1, d_k), ``values``: (2k + 1, d_v),
    row r holds w_{r−k}). Computed without a (T_q, T_k, d) tensor (Sect. 3.3): q_i·a^K_ij is entry
    clip(j − i, k) + k of the row q_i (w^K)ᵀ, and Σ_j α_ij a^V_ij = Σ_r (Σ_{j in bucket r} α_ij) w^V_r."""

    uses_weights = True

    def __init__(self, d_k: int, d_v: int, max_relative_position: int):
        super().__init__()
        self.k = max_relative_position
        self.keys = nn.Embedding(2 * self.k + 1, d_k)  # w^K_{−k … k}
        self.values = nn.Embedding(2 * self.k + 1, d_v)  # w^V_{−k … k}
        for table in (self.keys, self.values):
            nn.init.normal_(table.weight, 0.0, d_k**-0.5)

    def score_bias(
        self, q: torch.Tensor, k: torch.Tensor, positions: Positions, scale: float
    ) -> torch.Tensor:
        # Eq. 4, its second term: q_i·a^K_ij = (q_i (w^K)ᵀ)[clip(j − i, k) + k], times 1/√d_z
        qw = q @ self.keys.weight.t().to(q.dtype)  # (B, h, T_q, 2k + 1)
        index = positions.index.expand(*qw.shape[:-1], -1)  # (B, h, T_q, T_k)
        return torch.gather(qw, -1, index) * scale  # (B, h, T_q, T_k)

    def value_term(self, weights: torch.Tensor, positions: Positions) -> torch.Tensor:
        # Eq. 3, its second term: Σ_j α_ij a^V_ij = Σ_r (Σ_{j: clip(j − i, k) + k = r} α_ij) w^V_r
        index = positions.index.expand_as(weights)  # (B, h, T_q, T_k)
        # (B, h, T_q, 2k + 1), summed in fp32 (the weights are bf16 under autocast)
        buckets = weights.new_zeros(*weights.shape[:-1], 2 * self.k + 1, dtype=torch.float32)
        buckets = buckets.scatter_add(-1, index, weights.float())
        return (buckets @ self.values.weight.float()).to(weights.dtype)  # (B, h, T_q, d_v)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's head slopes m_h (Press, Smith & Lewis 2022, Sect. 3): the geometric sequence starting at and
    multiplied by 2^(−8/h), for h a power of 2 (h,)."""
    if num_heads & (num_heads - 1):
        raise ValueError(f"ALiBi slopes: the number of heads must be a power of 2, got {num_heads}")
    ratio = 2.0 ** (-8.0 / num_heads)
    return torch.tensor([ratio ** (h + 1) for h in range(num_heads)])


class ALiBi(PositionScheme):
    """Attention with linear biases (Press, Smith & Lewis 2022), a bias of the scores only, the same in every
    layer and so computed once per forward by the stack:

        softmax(q_i Kᵀ + m_h · [−(i − 0), …, −(i − j), …])        Sect. 3 (causal: keys j ≤ i)

    Written as m_h · (j − i), which is −m_h·|i − j| for the keys a causal query sees. No input positions."""

    def __init__(self, num_heads: int):
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)  # m_h: (h,)

    def positions(self, length: int, past: int = 0, device: torch.device | str | None = None) -> Positions:
        p = super().positions(length, past, device)
        p.bias = self.slopes.to(device)[:, None, None] * p.distance.to(self.slopes.dtype)  # (h, T_q, T_k)
        return p


class RotaryPositions(AttentionPositions):
    """Rotary position embedding (Su et al. 2021, RoFormer, Eq. 34): each pair of dimensions (2i, 2i + 1) of a
    query or key at position m is turned by the angle m·θ_i, θ_i = 10000^(−2i/d):

        R_m x = [x_{2i} cos mθ_i − x_{2i+1} sin mθ_i,  x_{2i} sin mθ_i + x_{2i+1} cos mθ_i]_i

    so that (R_m q)·(R_n k) = qᵀ R_{n−m} k depends on n − m only. No parameters."""

    def __init__(self, d_k: int, base: float = 10000.0):
        super().__init__()
        if d_k % 2:
            raise ValueError(f"rotary positions: d_k must be even, got {d_k}")
        theta = base ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # θ_i: (d_k / 2,)
        self.register_buffer("theta", theta.float(), persistent=False)

    def rotate(self, x: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        angle = at.to(self.theta.dtype)[:, None] * self.theta  # m·θ_i: (T, d_k / 2)
        cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]  # (B, h, T, d_k / 2) each
        turned = torch.stack(
            [even * cos - odd * sin, even * sin + odd * cos], dim=-1
        )  # (B, h, T, d_k / 2, 2)
        return turned.flatten(-2)  # (B, h, T, d_k), the pairs interleaved back


def scaled(q: torch.Tensor, scale: float | None) -> float:
    """The factor of QKᵀ: ``scale``, or 1/√d_k of q (…, d_k)."""
    return 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
