"""Scaled dot-product and multi-head attention (Vaswani et al. 2017, Sect. 3.2), with a key/value cache.

    Attention(Q, K, V) = softmax(QKᵀ / √d_k) V                                    Eq. 1
    MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O                            Sect. 3.2.2
        where head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
    W_i^Q, W_i^K ∈ R^{d_model × d_k},  W_i^V ∈ R^{d_model × d_v},  W^O ∈ R^{h·d_v × d_model}

Shapes: queries (B, T_q, d_model), keys and values (B, T_k, d_model); per head (B, h, T, d_k). Masks follow
seq2bert/nn/masks.py: boolean, True where a query may attend, broadcastable to (B, h, T_q, T_k).

The h per-head projections are stored as one matrix each (W^Q = [W_1^Q … W_h^Q], d_model × h·d_k); for
self-attention Q, K and V come from one fused projection [W^Q W^K W^V] (one matmul instead of three), for
cross-attention Q from the decoder and [W^K W^V] from the encoder output, computed once per source.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.nn.masks import is_causal
from seq2bert.nn.positions import AttentionPositions, Positions, scaled
from seq2bert.nn.sesame import seen_keys
from seq2bert.precision import full_precision, widen

FEW_QUERIES = 8  # queries per row up to which the explicit computation beats the fused kernel


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    dropout: float = 0.0,
    need_weights: bool = False,
    scale: float | None = None,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eq. 1. q (B, h, T_q, d_k), k (B, h, T_k, d_k), v (B, h, T_k, d_v) → (B, h, T_q, d_v) and, when
    ``need_weights``, the weights (B, h, T_q, T_k) (after dropout, as they were used).

    Without ``need_weights`` this is torch's fused kernel (flash / memory-efficient where available); with
    it, the explicit computation below, which gives the same values (tests/nn/test_multihead.py). A few
    queries per row (at most ``FEW_QUERIES``: incremental decoding, one query per beam of a shared source)
    also take the explicit path: two small batched matmuls beat the fused kernel's set-up there (2–4× on a
    CPU, in bf16 most). A mask that is exactly the causal one (masks.is_causal)
    goes to the fused kernel as ``is_causal``, which then skips the scores above the diagonal.
    ``dropout`` is the probability P_drop on the weights; pass 0 in evaluation. ``scale``: the factor of QKᵀ
    (None: 1/√d_k, the paper's; some GPT-2 variants use others). A query that may attend to no key at all (a
    left pad of a causal model) gets zero weights and a zero output, as torch's fused kernel gives it.

    ``bias`` (float, broadcastable to (B, h, T_q, T_k)): added to the scaled scores, QKᵀ/√d_k + b (a position
    scheme's, seq2bert/nn/positions.py); the fused kernel takes it as its float ``attn_mask``, −∞ where
    ``mask`` is False."""
    if not need_weights and q.size(-2) > FEW_QUERIES:
        k = k.to(q.dtype)  # a cache keeps widened keys (KVCache)
        if bias is not None:  # QKᵀ/√d_k + b, −∞ on the illegal connections
            b = bias.to(q.dtype)
            mask = b if mask is None else torch.where(mask, b, float("-inf"))
        elif is_causal(mask, q.size(-2)) and k.size(-2) == q.size(-2):  # only the diagonal's lower side
            return F.scaled_dot_product_attention(
                q, k, v, dropout_p=dropout, is_causal=True, scale=scale
            ), None
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scale), None
    with full_precision(q):  # scores and softmax in fp32 under autocast, as in torch's fused kernel
        scores = batched(widen(q), widen(k).transpose(-2, -1))  # QKᵀ: (B, h, T_q, T_k)
        scores = scores / math.sqrt(q.size(-1)) if scale is None else scores * scale  # QKᵀ/√d_k
        if bias is not None:
            scores = scores + widen(bias)  # QKᵀ/√d_k + b
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))  # Sect. 3.2.3: illegal connections → −∞
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:  # a row without any visible key: a softmax of −∞ only (NaN) → weights 0
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        weights = weights.to(q.dtype)
    if dropout:
        weights = F.dropout(weights, dropout)
    return batched(weights, v), (weights if need_weights else None)  # (B, h, T_q, d_v)


def batched(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a (…, n, m) @ b (…, m, p), the leading dimensions equal, as one bmm over views of both: a cache's keys
    (a strided slice of its buffer) and their transpose are read where they lie, where ``@`` would first
    copy them into a contiguous tensor at every step."""
    out = torch.bmm(a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]))  # (…·, n, p)
    return out.view(*a.shape[:-2], *out.shape[-2:])


class KVCache:
    """Keys and values one attention layer has already computed: (B, h, T, d_k) and (B, h, T, d_v).

    Decoder self-attention appends one step at a time; cross-attention fills it once per source. ``key`` and
    ``value`` are views of the filled part of buffers kept for the purpose:
    - room ahead: steps are written into a buffer (B, h, capacity, d) whose capacity doubles when it is full,
      as a growing array does, so a step copies only its own keys and values (concatenating would copy every
      earlier step again, O(T²) over a decode). A first fill is kept as it is given (cross-attention is
      never appended to).
    - widened keys: from the first step appended on, the keys are kept in at least fp32 (bf16 keys of
      autocast widened once, as they are written): a single query's scores are computed in fp32 from every
      key (scaled_dot_product_attention), which would otherwise widen the whole cache at every step;
      cross-attention filled for incremental decoding keeps its keys widened already, and contiguous
      (MultiHeadAttention.forward).
    - reordering in place: beam search's ``reorder`` gathers the rows into a second buffer of the same room
      and swaps the two, so no step allocates (fresh memory costs its page faults on a CPU).
    - a static cache: ``reserve(n)`` makes room for n more steps at once (a search knows its longest
      hypothesis), so the buffers are allocated once and never grown or copied during the decode.
    Where autograd records the keys (a cache used in training) steps are concatenated and rows gathered into
    new tensors instead: writing into a buffer that earlier steps saved for their backward would void it."""

    def __init__(self, key: torch.Tensor | None = None, value: torch.Tensor | None = None):
        self._key, self._value = key, value  # (B, h, capacity, d)
        self.length = 0 if key is None else key.size(2)
        self._owned = False  # whether the buffers are ours to write into (not a first fill as given)
        self._spare: tuple[torch.Tensor, torch.Tensor] | None = None  # reorder's second buffers
        self._reserved = 0  # room asked for before the first fill (reserve on an empty cache)

    @property
    def key(self) -> torch.Tensor | None:
        return None if self._key is None else self._key[:, :, : self.length]

    @property
    def value(self) -> torch.Tensor | None:
        return None if self._value is None else self._value[:, :, : self.length]

    @property
    def capacity(self) -> int:
        return 0 if self._key is None else self._key.size(2)

    def append(self, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the keys / values of new steps (B, h, t, d); return all of them so far (views)."""
        if self._key is None:
            self._key, self._value, self.length = key, value, key.size(2)
            if self._reserved and not _recorded(key):
                self.reserve(max(self._reserved - self.length, 0))
            return self.key, self.value
        past, n = self.length, self.length + key.size(2)
        if _recorded(key, self._key):
            self._key, self._value = torch.cat([self.key, key], 2), torch.cat([self.value, value], 2)
            self.length, self._owned = n, False
            return self._key, self._value
        if n > self.capacity or not self._owned:  # double the room: amortised O(1) copies per step
            capacity = max(n, 2 * self.capacity)
            self._key = self._grown(self._key, capacity, widen(key).dtype)  # the keys in fp32: see above
            self._value = self._grown(self._value, capacity, value.dtype)
            self._owned, self._spare = True, None
        self._key[:, :, past:n] = key
        self._value[:, :, past:n] = value
        self.length = n
        return self.key, self.value

    def reserve(self, n: int) -> KVCache:
        """Room for ``n`` more steps than the cache holds, made now (on an empty cache: at its first fill)."""
        if self._key is None:
            self._reserved = n
            return self
        need = self.length + n
        if not _recorded(self._key) and (need > self.capacity or not self._owned):
            self._key = self._grown(self._key, need, widen(self._key).dtype)
            self._value = self._grown(self._value, need, self._value.dtype)
            self._owned, self._spare = True, None
        return self

    def rewind(self, n: int) -> KVCache:
        """Forget the last ``n`` steps (speculative decoding drops the proposals it did not keep); the room
        stays, and the next steps are written over them."""
        if not 0 <= n <= self.length:
            raise ValueError(f"rewind: {n} steps asked, the cache holds {self.length}")
        self.length -= n
        return self

    def _grown(self, x: torch.Tensor, capacity: int, dtype: torch.dtype) -> torch.Tensor:
        """(B, h, capacity, d) of ``dtype`` holding x's filled part."""
        out = x.new_empty(*x.shape[:2], capacity, x.size(3), dtype=dtype)
        out[:, :, : self.length] = x[:, :, : self.length]
        return out

    def reorder(self, index: torch.Tensor) -> KVCache:
        """Rows ``index`` (N,) of the batch (beam search follows its surviving beams): this cache, its rows
        gathered in place (only the filled part is copied, into the second buffers, which are then swapped)."""
        if self._key is None:
            return self
        L = self.length
        if _recorded(self._key, self._value):
            self._key, self._value = (x[:, :, :L].index_select(0, index) for x in (self._key, self._value))
            self._owned, self._spare = False, None
            return self
        shape = (index.numel(), *self._key.shape[1:])
        spare = self._spare
        if spare is None or spare[0].shape != shape:
            spare = self._key.new_empty(shape), self._value.new_empty((*shape[:3], self._value.size(3)))
        for source, target in zip((self._key, self._value), spare, strict=True):
            torch.index_select(source[:, :, :L], 0, index, out=target[:, :, :L])
        # the old buffers become the spare ones, unless they were a first fill (not ours to write into)
        self._spare = (self._key, self._value) if self._owned else None
        self._key, self._value = spare
        self._owned = True
        return self


def attend_at(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    positions: Positions,
    position: AttentionPositions | None,
    dropout: float,
    need_weights: bool,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eq. 1 with positions (seq2bert/nn/positions.py): q (B, h, T_q, d_k), k (B, h, T_k, d_k), v (B, h, T_k,
    d_v) → (B, h, T_q, d_v) and the weights (B, h, T_q, T_k) when ``need_weights``; q and k already rotated.

        e_ij = q_i·k_j·scale + b_ij,   b = positions.bias + position.score_bias          (b)
        z_i  = Σ_j α_ij v_j + position.value_term(α)_i                                  (v)

    Without a value term the scores' bias goes through torch's fused kernel."""
    bias = positions.bias  # (h | 1, T_q, T_k), shared by every layer
    if position is not None:
        own = position.score_bias(q, k, positions, scaled(q, scale))  # (B | 1, h | 1, T_q, T_k)
        if own is not None:
            bias = own if bias is None else bias + own
    explicit = need_weights or (position is not None and position.uses_weights)
    heads, weights = scaled_dot_product_attention(
        q, k, v, mask, dropout=dropout, need_weights=explicit, scale=scale, bias=bias
    )  # (B, h, T_q, d_v)
    if position is not None and weights is not None:
        term = position.value_term(weights, positions)  # (B, h, T_q, d_v)
        if term is not None:
            heads = heads + term
    return heads, (weights if need_weights else None)


def _incremental(queries: int, k: torch.Tensor) -> bool:
    """Whether a cross-attention cache is filled for incremental decoding — few queries per memory row
    (``queries`` ≤ FEW_QUERIES, the explicit path's), nothing recorded for a backward — rather than by a
    teacher-forced pass (training, evaluation), which reads it once through the fused kernel."""
    return queries <= FEW_QUERIES and not _recorded(k)


def _recorded(*xs: torch.Tensor) -> bool:
    """Whether autograd records operations on any of xs."""
    return torch.is_grad_enabled() and any(x.requires_grad for x in xs)


class MultiHeadAttention(nn.Module):
    """Multi-head attention, Sect. 3.2.2, for self-attention (``cross=False``: Q, K, V from one input through
    the fused projection ``qkv``) or cross-attention (``cross=True``: Q through ``q``, K and V from the
    memory through ``kv``). d_k = d_v = d_model / h unless given (Table 3, rows A and B); ``scale`` multiplies
    QKᵀ (None: 1/√d_k). ``position``: this self-attention's half of a position scheme (rotation, score bias,
    value term: seq2bert/nn/positions.py), applied when ``forward`` is given the stack's ``positions``."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        d_k: int | None = None,
        d_v: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        cross: bool = False,
        scale: float | None = None,
        position: AttentionPositions | None = None,
    ):
        super().__init__()
        if cross and position is not None:
            raise ValueError("position: for self-attention (cross-attention sees no positions of its own)")
        if d_k is None or d_v is None:
            if d_model % num_heads:
                raise ValueError(f"d_model {d_model} is not divisible by the {num_heads} heads")
        self.h = num_heads
        self.d_k = d_k or d_model // num_heads
        self.d_v = d_v or d_model // num_heads
        self.dropout = dropout
        self.cross = cross
        self.scale = scale
        hk, hv = self.h * self.d_k, self.h * self.d_v
        if cross:
            self.q = nn.Linear(d_model, hk, bias=bias)  # W^Q
            self.kv = nn.Linear(d_model, hk + hv, bias=bias)  # [W^K W^V]
        else:
            self.qkv = nn.Linear(d_model, 2 * hk + hv, bias=bias)  # [W^Q W^K W^V]
        self.out = nn.Linear(hv, d_model, bias=bias)  # W^O
        self.position = position  # no state-dict keys when None (or without parameters)
        # SesameBERT's Gaussian blurring of the heads' output along the sequence (nn/sesame.py), when attached
        self.blur: nn.Module | None = None
        # the heads' original numbers (after prune_heads, those kept), and a gate ξ (h,) on each head's output
        # whose gradient measures its importance (Michel et al. 2019; recipes/prune.py), when set
        self.heads = list(range(num_heads))
        self.head_gate: torch.Tensor | None = None

    def linear_roles(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """Its Linear layers and the rows each projection holds in them (what LoRA adapts: nn/lora.py)."""
        hk, hv = self.h * self.d_k, self.h * self.d_v
        if self.cross:  # W^Q; [W^K W^V]
            projections = {"q": (("query", hk),), "kv": (("key", hk), ("value", hv))}
        else:  # [W^Q W^K W^V]
            projections = {"qkv": (("query", hk), ("key", hk), ("value", hv))}
        return {**projections, "out": (("output", self.out.out_features),)}

    @torch.no_grad()
    def prune_heads(self, heads: Iterable[int]) -> None:
        """Remove the heads numbered ``heads`` (their original numbers, ``self.heads``) — their rows of W^Q, W^K,
        W^V and their columns of W^O — keeping at least one (Michel et al. 2019; transformers' prune_heads)."""
        if self.cross:
            raise ValueError("prune_heads: of a self-attention")
        gone = set(heads) & set(self.heads)
        keep = [i for i, h in enumerate(self.heads) if h not in gone]  # positions among the current heads
        if not keep:
            raise ValueError(f"prune_heads: {sorted(gone)} would leave no head")
        if len(keep) == self.h:
            return
        hk = self.h * self.d_k

        def rows(offset: int, d: int) -> list[int]:
            return [offset + i * d + j for i in keep for j in range(d)]

        index = torch.tensor(rows(0, self.d_k) + rows(hk, self.d_k) + rows(2 * hk, self.d_v))
        self.qkv = _sliced(self.qkv, index.to(self.qkv.weight.device), dim=0)  # [W^Q W^K W^V]: their rows
        self.out = _sliced(self.out, torch.tensor(rows(0, self.d_v), device=self.out.weight.device), dim=1)
        self.heads, self.h = [self.heads[i] for i in keep], len(keep)

    def split_heads(self, x: torch.Tensor, d: int) -> torch.Tensor:
        """(B, T, h·d) → (B, h, T, d); one step (T = 1, decoding) is a view of the same memory."""
        B, T, _ = x.shape
        if T == 1:
            return x.view(B, self.h, 1, d)
        return x.view(B, T, self.h, d).transpose(1, 2)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """The self-attention scores before the softmax, QKᵀ/√d_k of Eq. 1 (times ``scale`` when given),
        unmasked and without positions (seq2bert/nn/positions.py): x (B, T, d_model) → (B, h, T, T). What
        TinyBERT distils (Jiao et al. 2019, Eq. 7); the forward never builds them on its fused path, so they
        are computed again from the layer's input."""
        if self.cross:
            raise ValueError("scores: of self-attention (a cross-attention's keys come from the memory)")
        hk = self.h * self.d_k
        q, k, _ = self.qkv(x).split([hk, hk, self.h * self.d_v], dim=-1)
        q, k = self.split_heads(q, self.d_k), self.split_heads(k, self.d_k)  # (B, h, T, d_k)
        with full_precision(q):
            qk = widen(q) @ widen(k).transpose(-2, -1)  # QKᵀ: (B, h, T, T)
        return qk / math.sqrt(self.d_k) if self.scale is None else qk * self.scale

    def project_memory(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention keys and values of the encoder output (B, S, d_model) → (B, h, S, d_k), (B, h, S, d_v)."""
        k, v = self.kv(memory).split([self.h * self.d_k, self.h * self.d_v], dim=-1)
        return self.split_heads(k, self.d_k), self.split_heads(v, self.d_v)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        cache: KVCache | None = None,
        need_weights: bool = False,
        positions: Positions | None = None,
        real: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, T, d_model) → (B, T, d_model), and the weights (B, h, T, T_k) when ``need_weights``.

        Self-attention: with a ``cache``, x holds only the new steps, whose keys and values are appended to
        it (the mask must then cover the cached keys too: see masks.causal_mask's ``past``).
        Self-attention with a ``memory``: the queries are x (B, T_q, d_model), some positions of ``memory``
        (B, T, d_model), whose every position gives keys and values through the same fused weights — a layer
        whose output is needed at a few positions only (BERT's masked LM) computes just those.
        Cross-attention: ``memory`` (B_s, S, d_model) is projected, or its projection taken from ``cache``
        (filled on the first call). x may hold g rows per memory row (B = g · B_s; beam search keeps the g
        beams of an input next to each other): rows b·g … b·g + g − 1 all attend to memory row b, so they
        are folded into g·T queries of that row rather than copying the memory g times.

        ``positions`` (self-attention; the stack's, seq2bert/nn/positions.py): the queries sit at
        positions.query, the keys at positions.key (with a cache, the new steps' keys at positions.query; with
        a ``memory``, the memory's at positions.key); ``position`` rotates them, biases the scores, adds its
        value term, and positions.bias is added to the scores. ``real`` (B, T) bool: the real tokens, for the
        blur, when ``mask`` does not tell them."""
        hk = self.h * self.d_k
        B, T, _ = x.shape
        if self.cross:
            if cache is not None and cache.key is not None:
                k, v = cache.key, cache.value  # computed once per source
            else:
                if memory is None:
                    raise ValueError("cross-attention needs the memory (or a filled cache)")
                k, v = self.project_memory(memory)  # (B_s, h, S, d_k), (B_s, h, S, d_v)
                if cache is not None and _incremental(B // memory.size(0) * T, k):
                    # kept for the steps to come with widened keys, as self-attention's (KVCache), and
                    # contiguous: every step's explicit attention reads them as they are
                    k, v = widen(k).contiguous(), v.contiguous()
                if cache is not None:
                    cache.append(k, v)
            g = B // k.size(0)  # decoder rows per memory row
            if g * k.size(0) != B:
                raise ValueError(f"{B} query rows do not divide into the memory's {k.size(0)} rows")
            q = self.split_heads(self.q(x.reshape(k.size(0), g * T, -1)), self.d_k)  # (B_s, h, g·T, d_k)
        else:
            g = 1
            if memory is None:
                q, k, v = self.qkv(x).split([hk, hk, self.h * self.d_v], dim=-1)
            else:  # queries at some positions only (x), keys and values from every position of memory
                if cache is not None:
                    raise ValueError("self-attention over given keys does not take a cache")
                w, b = self.qkv.weight, self.qkv.bias
                q = F.linear(x, w[:hk], None if b is None else b[:hk])  # W^Q at the query rows only
                k, v = F.linear(memory, w[hk:], None if b is None else b[hk:]).split(
                    [hk, self.h * self.d_v], -1
                )
            q, k, v = (
                self.split_heads(q, self.d_k),
                self.split_heads(k, self.d_k),
                self.split_heads(v, self.d_v),
            )
            if positions is not None and self.position is not None:  # (c): rotated before they are cached
                q = self.position.rotate(q, positions.query)
                k = self.position.rotate(k, positions.query if memory is None else positions.key)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, h, past + T, d)
        p = self.dropout if self.training else 0.0
        if positions is not None and not self.cross:
            heads, weights = attend_at(q, k, v, mask, positions, self.position, p, need_weights, self.scale)
        else:
            heads, weights = scaled_dot_product_attention(
                q, k, v, mask, dropout=p, need_weights=need_weights, scale=self.scale
            )
        if self.head_gate is not None:  # ξ_i · head_i
            heads = heads * self.head_gate.to(heads.dtype).view(1, -1, 1, 1)
        # Concat(head_1 … head_h): (B, T, h·d_v); with g > 1 the g·T queries go back to their g rows
        concat = heads.view(B, 1, -1) if T == 1 and g == 1 else heads.transpose(1, 2).reshape(B, T, -1)
        if weights is not None and g > 1:  # (B_s, h, g·T, S) → (B, h, T, S)
            weights = weights.unflatten(2, (g, T)).transpose(1, 2).reshape(B, self.h, T, -1)
        if self.blur is not None:  # along the whole sequence: queries that are the keys
            if self.cross or memory is not None or cache is not None:
                raise ValueError("blur: along a self-attention's whole sequence (no memory, no cache)")
            concat = self.blur(concat, seen_keys(mask, B, T) if real is None else real)
        return self.out(concat), weights  # W^O


def _sliced(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A Linear with the rows (dim 0: outputs) or columns (dim 1: inputs) ``index`` of ``linear``'s weight."""
    w = linear.weight.index_select(dim, index)
    out = nn.Linear(w.size(1), w.size(0), bias=linear.bias is not None, device=w.device, dtype=w.dtype)
    out.weight.copy_(w)
    if linear.bias is not None:
        out.bias.copy_(linear.bias if dim == 1 else linear.bias.index_select(0, index))
    return out
