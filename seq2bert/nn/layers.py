"""The Transformer layer (Vaswani et al. 2017, Sect. 3.1), one class for the encoder's, the decoder's and a
decoder-only model's layers, with the norm placement explicit.

    "We employ a residual connection around each of the two sub-layers, followed by layer normalization.
    That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))."                     Sect. 3.1
    "We apply dropout to the output of each sub-layer, before it is added to the sub-layer input." Sect. 5.4

    norm_first=False (post-norm: the paper, BERT, GPT-1, Marian):  x ← LayerNorm(x + Dropout(Sublayer(x)))
    norm_first=True  (pre-norm: GPT-2, most later models):         x ← x + Dropout(Sublayer(LayerNorm(x)))

A layer is self-attention, then — in the encoder-decoder's decoder only — attention over the encoder output
("encoder-decoder attention", Sect. 3.2.3), then the position-wise feed-forward network. Whether the
self-attention is causal is the mask's business (the stack builds it, seq2bert/nn/stack.py); with a
``cache`` the layer takes only the new steps and keeps every earlier step's keys and values. Positions
(seq2bert/nn/positions.py) reach the self-attention as the stack computed them (``positions``); the layer
may also carry a second query stream (``QueryStream``, XLNet's) through the same sub-layers.

The layer takes its sub-modules ready-made (attention, feed-forward), so a variant swaps a module instead
of copying a layer; ``transformer_layer`` builds the usual one from sizes. A pre-norm stack needs one more
LayerNorm after its last layer: the stack's ``final_norm``. Shapes: x (B, T, d_model), memory (B, S,
d_model); masks as in seq2bert/nn/masks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from seq2bert.nn.feed_forward import PositionwiseFeedForward
from seq2bert.nn.multihead import KVCache, MultiHeadAttention
from seq2bert.nn.positions import AttentionPositions, Positions


class SublayerConnection(nn.Module):
    """The residual connection around one sub-layer, with its LayerNorm before or after (``norm_first``)."""

    def __init__(self, d_model: int, *, dropout: float = 0.0, norm_first: bool = False, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))  # Sect. 3.1: LayerNorm(x + Sublayer(x))


@dataclass
class LayerCache:
    """What one layer keeps between decoding steps: its self-attention keys/values (growing) and, in an
    encoder-decoder, the cross-attention keys/values of the source (computed once)."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=KVCache)

    def reorder(self, index: torch.Tensor, *, source: bool = True) -> LayerCache:
        """Rows ``index`` (N,); ``source=False`` keeps the cross-attention cache as it is (shared by a
        group of rows, see MultiHeadAttention)."""
        cross = self.cross_attn.reorder(index) if source else self.cross_attn
        return LayerCache(self.self_attn.reorder(index), cross)

    def rewind(self, n: int) -> LayerCache:
        """Forget the last ``n`` decoded steps (the self-attention's; the source's keys stay)."""
        self.self_attn.rewind(n)
        return self


@dataclass
class QueryStream:
    """(d) A second stream of queries: XLNet's two-stream self-attention (Yang et al. 2019, Sect. 2.3):

        g_i ← Attention(Q = g_i, KV = h_{z<t}; θ)      query stream: position z_t, but not its content
        h_i ← Attention(Q = h_i, KV = h_{z≤t}; θ)      content stream (the layer's x)

    with the same parameters θ (the layer's attention, residuals, norms and feed-forward network). ``hidden``
    (B, T, d_model): the stream's rows, at the content rows' positions; ``mask``: which content keys each of
    its queries sees (masks.py's convention, broadcastable to (B, h, T, T); XLNet's: the permutation's
    earlier positions, not itself). With ``rows`` (B, P) the stream has P rows (B, P, d_model), each at the
    position of that content row (XLNet's predicted positions: the stream computed only where it is read),
    and its mask is (B, 1 | h, P, T_k)."""

    hidden: torch.Tensor
    mask: torch.Tensor | None = None
    rows: torch.Tensor | None = None


@dataclass
class LayerOutput:
    """The layer's output (B, T, d_model) and, when asked, its attention weights (B, h, T, T_k); with a query
    stream, the stream's output ``stream`` (B, T, d_model)."""

    hidden: torch.Tensor
    self_weights: torch.Tensor | None = None
    cross_weights: torch.Tensor | None = None
    stream: torch.Tensor | None = None


class TransformerLayer(nn.Module):
    """Sect. 3.1: self-attention, optional attention over a memory (``cross_attn``), feed-forward; each in
    a residual connection with its LayerNorm after (post-norm) or before (``norm_first``)."""

    def __init__(
        self,
        d_model: int,
        self_attn: MultiHeadAttention,
        feed_forward: nn.Module,
        *,
        cross_attn: MultiHeadAttention | None = None,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
    ):
        super().__init__()
        sublayer = dict(dropout=dropout, norm_first=norm_first, eps=eps)
        self.self_attn = self_attn
        self.self_attn_sublayer = SublayerConnection(d_model, **sublayer)
        self.cross_attn = cross_attn
        self.cross_attn_sublayer = SublayerConnection(d_model, **sublayer) if cross_attn is not None else None
        self.feed_forward = feed_forward
        self.ffn_sublayer = SublayerConnection(d_model, **sublayer)

    @property
    def norm_first(self) -> bool:
        return self.self_attn_sublayer.norm_first

    def attention_scores(self, x: torch.Tensor) -> torch.Tensor:
        """The self-attention scores before the softmax (MultiHeadAttention.scores) of this layer's input x
        (B, T, d_model) → (B, h, T, T): of x itself after a post-norm layer's previous sub-layer, of norm(x)
        in a pre-norm layer."""
        return self.self_attn.scores(self.attention_input(x))

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the self-attention reads of the layer's input x (B, T, d_model): x after a post-norm layer's
        previous sub-layer, norm(x) in a pre-norm layer."""
        return self.self_attn_sublayer.norm(x) if self.norm_first else x

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        *,
        cache: LayerCache | None = None,
        need_weights: bool = False,
        positions: Positions | None = None,
        stream: QueryStream | None = None,
        past: torch.Tensor | None = None,
        real: torch.Tensor | None = None,
    ) -> LayerOutput:
        """x (B, T, d_model) → (B, T, d_model); the weights (B, h, T, T_past + T) of self-attention and
        (B, h, T, S) of cross-attention when asked. With a ``cache``, x holds only the new steps and
        ``mask`` covers the cached keys too. ``positions``: the stack's (seq2bert/nn/positions.py), handed
        to the self-attention. ``stream``: a second query stream, whose self-attention reads the keys and
        values of the content stream's (x's) attention input; its output is ``LayerOutput.stream``.
        ``past`` (B, M, d_model): the previous segment's states of this layer (Transformer-XL's memory),
        read as keys and values before x's own by both streams, without a gradient (SG(·), Sect. 3.2);
        ``mask`` then covers M + T keys. ``real`` (B, T) bool: x's real tokens, when ``mask`` does not tell
        them (XLNet's padding sees itself), for what works along them only (SesameBERT's blur)."""
        if (stream is not None or past is not None) and cache is not None:
            raise ValueError("a query stream or a past segment reads whole keys: it takes no cache")
        out = LayerOutput(x)
        content = None if stream is None else self.attention_input(x)  # the query stream's keys and values
        if past is not None:  # what the self-attention reads of the previous segment's layer input
            past = self.attention_input(past.detach())

        def self_attend(y: torch.Tensor) -> torch.Tensor:
            kv_cache = None if cache is None else cache.self_attn
            keys = None if past is None else torch.cat([past, y], dim=1)  # h̃ = [SG(h_{τ−1}) ∘ h_τ]
            given = {} if real is None else {"real": real}  # attentions written before it take none
            h, out.self_weights = self.self_attn(
                y, keys, mask=mask, cache=kv_cache, need_weights=need_weights, positions=positions, **given
            )
            return h

        def cross_attend(y: torch.Tensor) -> torch.Tensor:
            kv_cache = None if cache is None else cache.cross_attn
            h, out.cross_weights = self.cross_attn(
                y, memory, memory_mask, cache=kv_cache, need_weights=need_weights
            )
            return h

        x = self.self_attn_sublayer(x, self_attend)
        if self.cross_attn is not None:
            x = self.cross_attn_sublayer(x, cross_attend)
        out.hidden = self.ffn_sublayer(x, self.feed_forward)
        if stream is not None:
            keys = content if past is None else torch.cat([past, content], dim=1)
            out.stream = self.query_stream(stream, keys, memory, memory_mask, positions)
        return out

    def query_stream(
        self,
        stream: QueryStream,
        content: torch.Tensor,
        memory: torch.Tensor | None,
        memory_mask: torch.Tensor | None,
        positions: Positions | None,
    ) -> torch.Tensor:
        """The query stream g (B, T | P, d_model) through this layer: its queries attend to the keys and values
        of ``content`` (B, T, d_model), the content stream's self-attention input, then the same sub-layers."""

        if stream.rows is not None and positions is not None:  # P queries, each at its row's position
            positions = positions.at_rows(stream.rows)

        def attend(y: torch.Tensor) -> torch.Tensor:
            return self.self_attn(y, content, stream.mask, positions=positions)[0]

        g = self.self_attn_sublayer(stream.hidden, attend)
        if self.cross_attn is not None:
            g = self.cross_attn_sublayer(g, lambda y: self.cross_attn(y, memory, memory_mask)[0])
        return self.ffn_sublayer(g, self.feed_forward)


def transformer_layer(
    d_model: int,
    num_heads: int,
    d_ff: int,
    *,
    cross: bool = False,
    dropout: float = 0.0,
    attention_dropout: float = 0.0,
    activation: str = "relu",
    activation_dropout: float = 0.0,
    norm_first: bool = False,
    eps: float = 1e-5,
    d_k: int | None = None,
    d_v: int | None = None,
    position: AttentionPositions | None = None,
) -> TransformerLayer:
    """The usual layer from its sizes: h = ``num_heads`` heads (d_k = d_v = d_model / h unless given), an
    FFN of ``d_ff`` units, and with ``cross`` the attention over the encoder output. ``position``: the
    self-attention's half of a position scheme (seq2bert/nn/positions.py)."""

    def attention(is_cross: bool) -> MultiHeadAttention:
        return MultiHeadAttention(
            d_model,
            num_heads,
            d_k=d_k,
            d_v=d_v,
            dropout=attention_dropout,
            cross=is_cross,
            position=None if is_cross else position,
        )

    self_attn = attention(False)
    cross_attn = attention(True) if cross else None
    ffn = PositionwiseFeedForward(d_model, d_ff, activation=activation, activation_dropout=activation_dropout)
    return TransformerLayer(
        d_model, self_attn, ffn, cross_attn=cross_attn, dropout=dropout, norm_first=norm_first, eps=eps
    )
