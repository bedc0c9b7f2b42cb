"""Sequence to Sequence Learning with Neural Networks (Sutskever, Vinyals & Le, 2014).

A deep LSTM reads the source sentence, one token at a time, into a fixed-size vector v — its final hidden
and cell states — and a second deep LSTM, started from v, generates the target (Sect. 2, Eq. 1):

    p(y_1, …, y_T' | x_1, …, x_T) = ∏_{t=1}^{T'} p(y_t | v, y_1, …, y_{t−1})

where each p(y_t | v, y_<t) is a softmax over the target vocabulary. Two findings of the paper are options
here: reversing the source sentence (Sect. 3.3: "we found it extremely valuable") and depth (4 layers).

Departures from the paper, marked where they happen:
- dropout between layers and on embeddings/outputs (the paper used none; it helps small data such as Multi30k);
- sub-word vocabularies (BPE) instead of the paper's 160,000 / 80,000 most frequent words with an UNK token.

As in the paper, the encoder and decoder are two different LSTMs with their own embeddings.

The model implements ``encode``, ``decode`` and ``reorder``; the teacher-forced ``forward``, the decoding
protocol and ``generate`` are every encoder-decoder's (seq2bert/models/encoder_decoder.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from seq2bert.models.encoder_decoder import EncoderDecoder
from seq2bert.models.outputs import DecoderOutput
from seq2bert.models.seq2seq.config import Seq2SeqConfig
from seq2bert.nn.rnn import reverse_padded, run_fused


@dataclass
class LSTMState:
    """The decoder state: hidden and cell states of every layer, each (L, B, H)."""

    h: torch.Tensor
    c: torch.Tensor


class Seq2Seq(EncoderDecoder):
    """Deep LSTM encoder → fixed vector v = (h_T, c_T) of every layer → deep LSTM decoder."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__(config)
        E, H, L, p = config.embedding_dim, config.hidden_size, config.num_layers, config.dropout
        self.src_embed = nn.Embedding(config.src_vocab_size, E, padding_idx=config.pad_token_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, E, padding_idx=config.pad_token_id)
        self.encoder = nn.LSTM(E, H, num_layers=L, dropout=p if L > 1 else 0.0, batch_first=True)
        self.decoder = nn.LSTM(E, H, num_layers=L, dropout=p if L > 1 else 0.0, batch_first=True)
        self.dropout = nn.Dropout(p)  # departure: the paper used no dropout
        self.output = nn.Linear(H, config.tgt_vocab_size)  # the softmax layer of Eq. 1
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sect. 3.4: "We initialized all of the LSTM's parameters with the uniform distribution between -0.08 and 0.08"."""
        r = self.config.init_range
        for param in self.parameters():
            nn.init.uniform_(param, -r, r)
        with torch.no_grad():
            self.src_embed.weight[self.config.pad_token_id].zero_()
            self.tgt_embed.weight[self.config.pad_token_id].zero_()

    # --- encoder: x_1 … x_T → v
    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        output_attentions: bool = False,
    ) -> LSTMState:
        """input_ids, attention_mask: (B, S) with right padding → v: LSTMState with h, c of shape (L, B, H).
        (There are no attention weights to output.)"""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        lengths = attention_mask.sum(dim=1).clamp(min=1)  # (B,)
        if self.config.reverse_source:  # Sect. 3.3: reverse the order of the words of the source
            input_ids = reverse_padded(input_ids, lengths)
        x = self.dropout(self.src_embed(input_ids))  # (B, S, E)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (h, c) = run_fused(
            self.encoder, packed
        )  # each (L, B, H): the state after each row's last real token
        return LSTMState(h, c)

    # --- decoder: p(y_t | v, y_<t)
    def decode(
        self, decoder_input_ids: torch.Tensor, state: LSTMState, *, output_attentions: bool = False
    ) -> DecoderOutput:
        """decoder_input_ids: (B, T) = [BOS] y_1 … y_{T−1} → logits (B, T, V) and the state after step T.
        There is no attention: the decoder sees only the fixed vector v."""
        y = self.dropout(self.tgt_embed(decoder_input_ids))  # (B, T, E)
        out, (h, c) = run_fused(self.decoder, y, (state.h, state.c))  # out: (B, T, H)
        logits = self.output(self.dropout(out))  # (B, T, V)
        return DecoderOutput(logits, LSTMState(h, c), hidden_states=out)

    @staticmethod
    def reorder(state: LSTMState, index: torch.Tensor) -> LSTMState:
        """Select batch rows ``index`` (N,) of the state (for beam search): (L, B, H) → (L, N, H)."""
        return LSTMState(state.h.index_select(1, index), state.c.index_select(1, index))
