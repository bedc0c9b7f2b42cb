"""Encoder and decoder layers of the Transformer (Vaswani et al. 2017, Sect. 3.1), with the norm placement
explicit.

    "We employ a residual connection around each of the two sub-layers, followed by layer normalization.
    That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))."                     Sect. 3.1
    "We apply dropout to the output of each sub-layer, before it is added to the sub-layer input." Sect. 5.4

    norm_first=False (post-norm: the paper, BERT, Marian):  x ← LayerNorm(x + Dropout(Sublayer(x)))
    norm_first=True  (pre-norm: GPT-2, most later models):  x ← x + Dropout(Sublayer(LayerNorm(x)))

A pre-norm stack needs one more LayerNorm after its last layer; the stacks that use these layers add it.
The layers take their sub-modules ready-made (attention, feed-forward), so a variant swaps a module instead
of copying a layer. Shapes: x (B, T, d_model), memory (B, S, d_model); masks as in seq2bert/nn/masks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from seq2bert.nn.feed_forward import PositionwiseFeedForward
from seq2bert.nn.multihead import KVCache, MultiHeadAttention


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


class EncoderLayer(nn.Module):
    """Sect. 3.1, encoder: multi-head self-attention, then the position-wise feed-forward network."""

    def __init__(
        self,
        d_model: int,
        self_attn: MultiHeadAttention,
        feed_forward: PositionwiseFeedForward,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
    ):
        super().__init__()
        self.self_attn = self_attn
        self.self_attn_sublayer = SublayerConnection(d_model, dropout=dropout, norm_first=norm_first, eps=eps)
        self.feed_forward = feed_forward
        self.ffn_sublayer = SublayerConnection(d_model, dropout=dropout, norm_first=norm_first, eps=eps)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        need_weights: bool = False,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, S, d_model) → (B, S, d_model), and the self-attention weights (B, h, S, S) if asked.

        ``positions`` (B, Q) long: the output only at these positions of each row, (B, Q, d_model). Every
        position still gives keys and values; the queries, W^O and the feed-forward run on Q rows, not S —
        for a last layer most of whose outputs nobody reads (BERT's masked LM, BertModel). The mask must
        then broadcast over the queries (a padding mask, (B, 1, 1, S))."""
        weights = None
        memory = None
        if positions is not None:
            if mask is not None and mask.size(-2) != 1:
                raise ValueError("a layer computed at some positions takes a padding mask (B, 1, 1, S)")
            if self.self_attn_sublayer.norm_first:
                memory = self.self_attn_sublayer.norm(x)  # keys and values see what the queries see
            else:
                memory = x
            x = x.gather(1, positions.unsqueeze(-1).expand(-1, -1, x.size(-1)))  # (B, Q, d_model)

        def attend(y: torch.Tensor) -> torch.Tensor:
            nonlocal weights
            out, weights = self.self_attn(y, memory, mask=mask, need_weights=need_weights)
            return out

        x = self.self_attn_sublayer(x, attend)
        return self.ffn_sublayer(x, self.feed_forward), weights


@dataclass
class DecoderLayerCache:
    """What one decoder layer keeps between steps: its self-attention keys/values (growing) and the
    cross-attention keys/values of the source (computed once)."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=KVCache)

    def reorder(self, index: torch.Tensor) -> DecoderLayerCache:
        return DecoderLayerCache(self.self_attn.reorder(index), self.cross_attn.reorder(index))


class DecoderLayer(nn.Module):
    """Sect. 3.1, decoder: masked multi-head self-attention, multi-head attention over the encoder output
    ("encoder-decoder attention", Sect. 3.2.3), then the position-wise feed-forward network."""

    def __init__(
        self,
        d_model: int,
        self_attn: MultiHeadAttention,
        cross_attn: MultiHeadAttention,
        feed_forward: PositionwiseFeedForward,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
    ):
        super().__init__()
        sublayer = dict(dropout=dropout, norm_first=norm_first, eps=eps)
        self.self_attn = self_attn
        self.self_attn_sublayer = SublayerConnection(d_model, **sublayer)
        self.cross_attn = cross_attn
        self.cross_attn_sublayer = SublayerConnection(d_model, **sublayer)
        self.feed_forward = feed_forward
        self.ffn_sublayer = SublayerConnection(d_model, **sublayer)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        *,
        cache: DecoderLayerCache | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """x (B, T, d_model) → (B, T, d_model), self-attention weights (B, h, T, T_past + T) and
        cross-attention weights (B, h, T, S) when asked. With a ``cache``, x holds only the new steps."""
        self_weights = cross_weights = None

        def self_attend(y: torch.Tensor) -> torch.Tensor:
            nonlocal self_weights
            out, self_weights = self.self_attn(
                y, mask=self_mask, cache=None if cache is None else cache.self_attn, need_weights=need_weights
            )
            return out

        def cross_attend(y: torch.Tensor) -> torch.Tensor:
            nonlocal cross_weights
            out, cross_weights = self.cross_attn(
                y,
                memory,
                mask=memory_mask,
                cache=None if cache is None else cache.cross_attn,
                need_weights=need_weights,
            )
            return out

        x = self.self_attn_sublayer(x, self_attend)
        x = self.cross_attn_sublayer(x, cross_attend)
        return self.ffn_sublayer(x, self.feed_forward), self_weights, cross_weights
