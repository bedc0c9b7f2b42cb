"""A stack of Transformer layers: embeddings, N layers, an optional final LayerNorm — the one body of every
Transformer-shaped model in seq2bert.

    x_0 = Embeddings(input_ids)                  token (+ segment) + position embeddings, as the family has them
    x_ℓ = Layer_{s(ℓ)}(x_{ℓ−1}),  ℓ = 1 … N      s(ℓ) = ℓ (own weights), one layer applied N times, or any
                                                  other ``order`` of fewer modules (ALBERT's groups)
    out = FinalNorm(x_N)                          pre-norm stacks only (Sect. 3.1 departure of GPT-2 and later)

The Transformer's encoder is a bidirectional stack, its decoder a ``causal`` stack whose layers also attend
to the encoder output (``memory``); BERT is a bidirectional stack; a decoder-only language model (GPT) is a
causal stack without memory. The stack builds the one mask its layers use (seq2bert/nn/masks.py): padding
from ``attention_mask`` and, when causal, no query sees a later key (Sect. 3.2.3).

Incremental decoding: with ``caches`` (one LayerCache per layer) the input holds only the new steps, which
sit at positions ``offset`` … offset + T − 1 (the embeddings are asked for those positions), and every
layer adds their keys and values to its cache.

Positions (seq2bert/nn/positions.py): with a ``positions`` scheme the stack computes the positions of the
forward once — queries at offset … offset + T − 1, keys at 0 … offset + T − 1, and whatever the scheme adds
(relative indices, a score bias) — lets the scheme add to the embeddings' output (``embed``) and hands them
to every layer's self-attention. Without one (today's models: their embeddings add absolute positions)
the layers are called exactly as before.

A second query stream (XLNet's two-stream attention, layers.QueryStream): ``query_stream`` (B, T, d_model),
at the same positions as input_ids, goes through every layer beside the content stream with its own
``query_stream_mask``; its last state is ``last_query_stream_state`` (the final norm applied too).

Segment recurrence (Transformer-XL, Dai et al. 2019, Sect. 3.2): ``past_states`` holds, per layer, the
hidden states (B, M, d_model) that layer read for the previous segment; its self-attention (and the query
stream's) reads them as keys and values before the segment's own, h̃ = [SG(h_{τ−1}) ∘ h_τ]. The segment's
tokens then sit at positions M … M + T − 1 (give ``offset`` = M and an ``attention_mask`` over M + T
keys). ``self_mask`` (bool, broadcastable to (B, h | 1, T, T_k)) is and-ed with the padding and causal
mask of the content stream (XLNet's permutation: content i sees the tokens before it in the factorisation
order, and itself); ``segment_ids`` (B, T_k) give the positions' ``other_segment``.

SesameBERT (nn/sesame.py; attached by models/sesame.py): with ``excitation`` the last layer's output is
scaled by the gate s_N that the squeeze and excitation computes from every layer's output. With ``top``
(BERT's "+ BiLSTM", nn/bilstm_top.py; attached by models/encoder_options.py) the output goes through it last.

The embeddings module is called as ``embeddings(input_ids, offset=…, **embedding_inputs)`` (segment ids
for BERT, say). Shapes: input_ids (B, T), attention_mask (B, T_k) with 1 on real tokens, where T_k counts
the cached keys too; memory (B_s, S, d_model), memory_mask (B_s, S).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.nn.layers import LayerCache, QueryStream, TransformerLayer
from seq2bert.nn.masks import causal_mask, combine, padding_mask
from seq2bert.nn.positions import Positions, PositionScheme


@dataclass
class StackOutput:
    """The stack's last hidden state (B, T, d_model) and, when asked, every layer's input and output
    (N + 1 tensors: the embeddings first) and attention weights (N tensors (B, h, T, T_k))."""

    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    cross_attentions: tuple[torch.Tensor, ...] | None = None
    last_query_stream_state: torch.Tensor | None = None


class TransformerStack(nn.Module):
    """Embeddings → N Transformer layers → optional final norm.

    ``layers``: N layers with their own weights; or, with ``num_layers`` = N, fewer modules applied in turn
    so that layer ℓ is ``layers[ℓ · len(layers) // N]`` (one module applied N times: ALBERT's all-shared
    parameters); or, with ``order``, layer ℓ is ``layers[order[ℓ]]`` and N = len(order) (ALBERT's groups of
    several layers, each group applied in turn). ``causal``: the self-attention of position t sees positions
    ≤ t only. ``positions``: the stack's half of a position scheme (seq2bert/nn/positions.py; each
    self-attention holds its own half)."""

    def __init__(
        self,
        embeddings: nn.Module,
        layers: Sequence[TransformerLayer],
        *,
        num_layers: int | None = None,
        order: Sequence[int] | None = None,
        final_norm: nn.Module | None = None,
        causal: bool = False,
        positions: PositionScheme | None = None,
    ):
        super().__init__()
        self.embeddings = embeddings
        self.layers = nn.ModuleList(layers)
        if order is None:
            n = num_layers or len(self.layers)
            if n % len(self.layers):
                raise ValueError(f"{n} layers cannot share {len(self.layers)} modules equally")
            order = [i * len(self.layers) // n for i in range(n)]
        elif num_layers is not None and num_layers != len(order):
            raise ValueError(f"num_layers {num_layers} but an order of {len(order)} layers")
        if not order or not all(0 <= m < len(self.layers) for m in order):
            raise ValueError(f"order must name modules 0 … {len(self.layers) - 1}, got {list(order)}")
        self.order = tuple(order)  # the module of each layer
        self.num_layers = len(self.order)
        self.final_norm = final_norm
        self.causal = causal
        self.positions = positions  # no state-dict keys when None (or without parameters)
        # SesameBERT's squeeze and excitation over the layer outputs (nn/sesame.py), when attached: the
        # last layer's output is scaled by its gate s_N
        self.excitation: nn.Module | None = None
        # a module over the output, last (B, T, d_model) and the real tokens → (B, T, d_model), when attached
        self.top: nn.Module | None = None

    def layer(self, i: int) -> TransformerLayer:
        """The module that computes layer i (0-based)."""
        return self.layers[self.order[i]]

    def new_caches(self) -> list[LayerCache]:
        return [LayerCache() for _ in range(self.num_layers)]

    def self_attention_mask(
        self, attention_mask: torch.Tensor | None, length: int, past: int, device: torch.device
    ) -> torch.Tensor | None:
        """(B, 1, T, T_k) / (T, T_k) / None: padding keys hidden; later keys hidden when causal. A single
        new step (T = 1) may see every earlier key, so it needs no causal mask."""
        causal = causal_mask(length, past, device=device) if self.causal and length > 1 else None
        return combine(padding_mask(attention_mask), causal)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        memory: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        caches: list[LayerCache] | None = None,
        offset: int = 0,
        upto: int | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        query_stream: torch.Tensor | None = None,
        query_stream_mask: torch.Tensor | None = None,
        query_stream_rows: torch.Tensor | None = None,
        past_states: Sequence[torch.Tensor] | None = None,
        self_mask: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
        real_tokens: torch.Tensor | None = None,
        **embedding_inputs,
    ) -> StackOutput:
        """input_ids (B, T) at positions offset … offset + T − 1 → StackOutput.

        ``upto``: run the first ``upto`` layers only and skip the final norm (a model that computes its
        last layer its own way, e.g. BERT's sparse prediction). ``query_stream`` (B, T, d_model) and its
        mask (broadcastable to (B, h, T, T)): a second query stream (see the module's docstring); with
        ``query_stream_rows`` (B, P) the stream is (B, P, d_model), its rows at those positions.
        ``real_tokens`` (B, T) bool: the segment's real tokens when the padding is in ``self_mask`` rather
        than ``attention_mask`` (XLNet), for what reads them (SesameBERT's squeeze and blur)."""
        T, device = input_ids.size(1), input_ids.device
        x = self.embeddings(input_ids, offset=offset, **embedding_inputs)  # (B, T, d_model)
        positions = self.position_info(T, offset, device)  # once, for every layer
        extra: dict = {}  # only what is given, so that layers written before the channel are called as ever
        if positions is not None:
            x = self.positions.embed(x, positions)  # (a)
            if segment_ids is not None:  # (B, T_q, T_k): query and key in different segments
                positions.other_segment = segment_ids[:, -T:, None] != segment_ids[:, None, :]
            extra["positions"] = positions
        if real_tokens is not None:
            extra["real"] = real_tokens
        mask = combine(self.self_attention_mask(attention_mask, T, offset, device), self_mask)
        cross_mask = padding_mask(memory_mask)  # (B_s, 1, 1, S)
        hidden, attentions, cross = [x], [], []
        g = query_stream  # (B, T | P, d_model)
        n = self.num_layers if upto is None else upto
        excite = self.excitation is not None and upto is None
        keep = output_hidden_states or excite
        valid = real_tokens
        if valid is None and attention_mask is not None:
            valid = attention_mask[:, -T:].bool()
        for i in range(n):
            layer = self.layer(i)
            cache = None if caches is None else caches[i]
            if g is not None:
                extra["stream"] = QueryStream(g, query_stream_mask, query_stream_rows)
            if past_states is not None:
                extra["past"] = past_states[i]
            out = layer(x, mask, memory, cross_mask, cache=cache, need_weights=output_attentions, **extra)
            x, g = out.hidden, out.stream
            if keep:
                hidden.append(x)
            if output_attentions:
                attentions.append(out.self_weights)
                cross.append(out.cross_weights)
        if self.final_norm is not None and upto is None:
            x = self.final_norm(x)
            g = None if g is None else self.final_norm(g)
            if keep:  # the last entry is the normalised output, as the stack returns it
                hidden[-1] = x
        if excite:  # ũ_N = s_N · u_N, s from every layer's output
            s = self.excitation(hidden[1:], valid)  # (B, N)
            x = (s[:, -1, None, None] * x).to(x.dtype)
            hidden[-1] = x
        if self.top is not None and upto is None:
            x = self.top(x, valid)
            if keep:
                hidden[-1] = x
        return StackOutput(
            last_hidden_state=x,
            hidden_states=tuple(hidden) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None,
            cross_attentions=tuple(cross) if output_attentions and memory is not None else None,
            last_query_stream_state=g,
        )

    def position_info(self, length: int, past: int, device: torch.device) -> Positions | None:
        """The positions of a forward of ``length`` new steps after ``past`` cached ones (None without a
        scheme): queries past … past + T − 1, keys 0 … past + T − 1, and the scheme's indices / bias."""
        return None if self.positions is None else self.positions.positions(length, past, device)
