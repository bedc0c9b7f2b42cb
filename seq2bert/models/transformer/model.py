"""Attention Is All You Need (Vaswani et al., 2017): the Transformer encoder-decoder.

Figure 1, read bottom to top (section numbers of arXiv:1706.03762v7):

    encoder:  x = Dropout(√d_model · E x + PE)                    Sect. 3.4, 3.5, 5.4 (dropout on the sums)
              N × [ self-attention (Sect. 3.2.2), feed-forward (Eq. 2) ], each in a residual + LayerNorm
    decoder:  y = Dropout(√d_model · E y + PE)
              N × [ masked self-attention (Sect. 3.2.3), attention over the encoder output, feed-forward ]
    output:   p(y_t | y_<t, x) = softmax(y W_Eᵀ)                   Sect. 3.4: the embedding matrix is the
                                                                   pre-softmax projection (tie_word_embeddings)

The blocks are the generic ones of seq2bert/nn (multihead.py, layers.py, embeddings.py, feed_forward.py,
masks.py); this file only assembles them. Decoding is incremental: ``encode`` runs the encoder once;
each ``step`` (seq2bert/models/encoder_decoder.py) feeds one token per row and keeps every layer's
self-attention keys/values in a cache, and the cross-attention keys/values of the source are computed on the
first step only (seq2bert/decoding drives it).

Departures from the paper, and choices it leaves open, marked where they happen: ``normalize_before``
(pre-norm) adds a final LayerNorm after each stack; weights start from Xavier-uniform matrices and
N(0, d_model^−½) embeddings (the paper does not say; fairseq's choice, which keeps √d_model · E x at unit
scale); ``final_logits_bias`` and split sinusoids exist for Marian checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.encoder_decoder import EncoderDecoder
from seq2bert.models.outputs import DecoderOutput
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.nn.embeddings import ScaledEmbedding, SinusoidalPositionalEncoding
from seq2bert.nn.layers import LayerCache, TransformerLayer, transformer_layer
from seq2bert.nn.positions import RelativePositionRepresentations, RelativePositions
from seq2bert.nn.stack import TransformerStack


@dataclass
class TransformerState:
    """What decoding carries from step to step: the encoder output (B_s, S, d_model), its mask (B_s, S), one
    cache per decoder layer and the number of target positions already decoded.

    The decoder may run ``group`` rows per source row (beam search: the K beams of an input, rows b·K …
    b·K + K − 1): the source side (memory, mask, cross-attention keys/values) is then kept once per input
    and the self-attention caches once per decoder row. ``encoder_attentions``: each encoder layer's
    self-attention weights (B, h, S, S), when ``encode`` was asked for them."""

    memory: torch.Tensor
    mask: torch.Tensor
    caches: list[LayerCache]
    t: int = 0
    group: int = 1
    encoder_attentions: tuple[torch.Tensor, ...] | None = None


class Embedder(nn.Module):
    """Dropout(scale · E x + P): token embeddings plus positions (Sect. 3.4, 3.5, 5.4); without ``positions``
    (relative positions, which enter the attention instead) Dropout(scale · E x). ``tokens`` may be shared
    with another Embedder (shared source/target vocabulary)."""

    def __init__(self, tokens: ScaledEmbedding, positions: nn.Module | None, dropout: float):
        super().__init__()
        self.tokens, self.positions = tokens, positions
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """input_ids (B, T) at positions offset … offset + T − 1 → (B, T, d_model)."""
        x = self.tokens(input_ids)  # (B, T, d_model)
        if self.positions is None:
            return self.dropout(x)
        positions = torch.arange(offset, offset + input_ids.size(1), device=input_ids.device)  # (T,)
        return self.dropout(x + self.positions(positions))


class Transformer(EncoderDecoder):
    """The encoder-decoder of Figure 1: two stacks of seq2bert/nn/stack.py; ``forward`` trains with teacher
    forcing, ``start`` / ``step`` / ``reorder`` / ``repeat`` decode incrementally (encoder_decoder.py)."""

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        c = config
        d = c.d_model
        scale = d**0.5 if c.scale_embedding else 1.0  # Sect. 3.4: "we multiply those weights by √d_model"
        src_tokens = ScaledEmbedding(c.src_vocab_size, d, padding_idx=c.pad_token_id, scale=scale)
        tgt_tokens = (
            src_tokens
            if c.share_embeddings
            else ScaledEmbedding(c.tgt_vocab_size, d, padding_idx=c.pad_token_id, scale=scale)
        )
        src_embed = Embedder(src_tokens, self.make_positions(), c.dropout)
        tgt_embed = Embedder(tgt_tokens, self.make_positions(), c.dropout)
        encoder_layers = [
            self.make_layer(c.encoder_attention_heads, c.encoder_ffn_dim) for _ in range(c.encoder_layers)
        ]
        decoder_layers = [
            self.make_layer(c.decoder_attention_heads, c.decoder_ffn_dim, cross=True)
            for _ in range(c.decoder_layers)
        ]
        # departure: a pre-norm stack ends with a LayerNorm (its last residual sum is never normalised)
        norms = [nn.LayerNorm(d, eps=c.layer_norm_eps) if c.normalize_before else None for _ in range(2)]
        schemes = [self.make_scheme() for _ in range(2)]
        self.encoder = TransformerStack(src_embed, encoder_layers, final_norm=norms[0], positions=schemes[0])
        self.decoder = TransformerStack(
            tgt_embed, decoder_layers, final_norm=norms[1], causal=True, positions=schemes[1]
        )
        self.output = nn.Linear(d, c.tgt_vocab_size, bias=c.final_logits_bias)  # the pre-softmax projection
        self.reset_parameters()
        if c.tie_word_embeddings:  # Sect. 3.4: the same matrix as the target embedding
            self.output.weight = tgt_tokens.weight
        self.register_load_state_dict_pre_hook(upgrade_state_dict)

    def make_positions(self) -> nn.Module | None:
        """The absolute positions the embeddings add (None with relative positions)."""
        c = self.config
        if c.position_embedding == "relative":  # Shaw et al. 2018, Table 1: no absolute positions
            return None
        if c.position_embedding == "learned":  # Table 3, row E
            return nn.Embedding(c.max_position_embeddings, c.d_model)
        return SinusoidalPositionalEncoding(
            c.d_model, c.max_position_embeddings, interleaved=c.interleave_sinusoids
        )

    def make_scheme(self) -> RelativePositions | None:
        """A stack's position scheme: relative indices clip(j − i, k) + k (Shaw et al. 2018), or None."""
        c = self.config
        return RelativePositions(c.max_relative_position) if c.position_embedding == "relative" else None

    def make_layer(self, heads: int, d_ff: int, *, cross: bool = False) -> TransformerLayer:
        c = self.config
        position = None
        if c.position_embedding == "relative":  # each self-attention's a^K, a^V (Shaw et al. 2018, Sect. 3)
            d_k, d_v = c.d_k or c.d_model // heads, c.d_v or c.d_model // heads
            position = RelativePositionRepresentations(d_k, d_v, c.max_relative_position)
        return transformer_layer(
            c.d_model,
            heads,
            d_ff,
            cross=cross,
            dropout=c.dropout,
            attention_dropout=c.attention_dropout,
            activation=c.activation_function,
            activation_dropout=c.activation_dropout,
            norm_first=c.normalize_before,
            eps=c.layer_norm_eps,
            d_k=c.d_k or None,
            d_v=c.d_v or None,
            position=position,
        )

    def reset_parameters(self) -> None:
        """Xavier-uniform matrices (the relative position tables w^K, w^V too), zero biases, N(0, d_model^−½)
        embeddings with a zero padding row."""
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
            elif "norm" not in name and p.dim() == 1:
                nn.init.zeros_(p)
        for stack in (self.encoder, self.decoder):
            nn.init.normal_(stack.embeddings.tokens.weight, 0.0, self.config.d_model**-0.5)
            with torch.no_grad():
                stack.embeddings.tokens.weight[self.config.pad_token_id].zero_()

    # --- the encoder: x → memory
    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        output_attentions: bool = False,
    ) -> TransformerState:
        """input_ids, attention_mask (B, S) → the encoder output and an empty decoder cache; with
        ``output_attentions``, each layer's self-attention weights (B, h, S, S) in the state."""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        mask = attention_mask.bool()
        out = self.encoder(input_ids, mask, output_attentions=output_attentions)  # (B, S, d_model)
        attentions = tuple(out.attentions) if output_attentions else None
        return TransformerState(
            out.last_hidden_state, mask, self.decoder.new_caches(), encoder_attentions=attentions
        )

    # --- the decoder: y_<t, memory → logits
    def decode(
        self, decoder_input_ids: torch.Tensor, state: TransformerState, *, output_attentions: bool = False
    ) -> DecoderOutput:
        """decoder_input_ids (B, T) at positions t … t + T − 1 → logits (B, T, V) and the state after them.
        ``output_attentions``: every layer's weights, and ``attentions`` (B, T, S) = the last decoder layer's
        attention over the source, averaged over heads (what the alignment plots draw).

        The new steps' keys and values join each layer's cache, so decoding all at once (teacher forcing,
        state.t = 0) or one step at a time gives the same logits (tests/models/test_transformer.py)."""
        out = self._decoder(decoder_input_ids, state, output_attentions)
        logits = self.output(out.last_hidden_state)  # (B, T, V)
        t = state.t + decoder_input_ids.size(1)
        new = TransformerState(
            state.memory, state.mask, state.caches, t, state.group, state.encoder_attentions
        )
        if not output_attentions:
            return DecoderOutput(logits, new, hidden_states=out.last_hidden_state)
        return DecoderOutput(
            logits,
            new,
            hidden_states=out.last_hidden_state,
            attentions=out.cross_attentions[-1].mean(dim=1),
            encoder_attentions=state.encoder_attentions,
            decoder_attentions=tuple(out.attentions),
            cross_attentions=tuple(out.cross_attentions),
        )

    def _decoder(self, decoder_input_ids: torch.Tensor, state: TransformerState, output_attentions: bool):
        return self.decoder(
            decoder_input_ids,  # causal: Sect. 3.2.3
            memory=state.memory,
            memory_mask=state.mask,
            caches=state.caches,
            offset=state.t,
            output_attentions=output_attentions,
        )

    def output_layer(self) -> nn.Linear:
        return self.output  # the pre-softmax projection (tied to the target embedding, Sect. 3.4)

    def decoder_states(self, decoder_input_ids: torch.Tensor, state: TransformerState) -> torch.Tensor:
        return self._decoder(decoder_input_ids, state, False).last_hidden_state  # (B, T, d_model)

    @staticmethod
    def reorder(state: TransformerState, index: torch.Tensor) -> TransformerState:
        """Rows ``index`` (N,) of the batch, caches included (beam search).

        After ``repeat`` only the self-attention caches move: each row must stay within its group (an
        input's beams), so the source side, kept once per input, is unchanged."""
        if state.group > 1:
            caches = [c.reorder(index, source=False) for c in state.caches]
            return TransformerState(state.memory, state.mask, caches, state.t, state.group)
        return TransformerState(
            state.memory.index_select(0, index),
            state.mask.index_select(0, index),
            [cache.reorder(index) for cache in state.caches],
            state.t,
        )

    @staticmethod
    def reserve(state: TransformerState, n: int) -> TransformerState:
        """Room for ``n`` target tokens in every self-attention cache, made at its first fill (a static
        cache: KVCache.reserve)."""
        for cache in state.caches:
            cache.self_attn.reserve(n)
        return state

    @staticmethod
    def rewind(state: TransformerState, n: int) -> TransformerState:
        """The state before the last ``n`` target tokens fed (speculative decoding: the self-attention caches
        shrink in place; the source side stays)."""
        if n == 0:
            return state
        caches = [c.rewind(n) for c in state.caches]
        return TransformerState(state.memory, state.mask, caches, state.t - n, state.group)

    @staticmethod
    def repeat(state: TransformerState, k: int) -> TransformerState:
        """Each decoder row becomes k consecutive rows that share one copy of its source (beam search)."""
        if state.group != 1:
            raise ValueError("repeat: the state is already repeated")
        index = torch.arange(state.memory.size(0), device=state.memory.device).repeat_interleave(k)
        caches = [c.reorder(index, source=False) for c in state.caches]
        return TransformerState(state.memory, state.mask, caches, state.t, k)


# the keys of checkpoints written before the encoder and decoder were stacks (seq2bert/nn/stack.py)
RENAMED = (
    ("src_embed.", "encoder.embeddings."),
    ("tgt_embed.", "decoder.embeddings."),
    ("encoder_norm.", "encoder.final_norm."),
    ("decoder_norm.", "decoder.final_norm."),
)


def upgrade_state_dict(module, state_dict, prefix, *args) -> None:
    """Rename, in place, the keys of an older checkpoint (encoder.N. → encoder.layers.N., …): checkpoints
    written before load after."""
    for key in [k for k in state_dict if k.startswith(prefix)]:
        rest = key[len(prefix) :]
        new = rest
        for old, renamed in RENAMED:
            if rest.startswith(old):
                new = renamed + rest[len(old) :]
        head, _, tail = new.partition(".")
        if head in ("encoder", "decoder") and tail.split(".")[0].isdigit():
            new = f"{head}.layers.{tail}"
        if new != rest:
            state_dict[prefix + new] = state_dict.pop(key)
