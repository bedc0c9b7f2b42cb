"""Effective Approaches to Attention-based Neural Machine Translation (Luong, Pham & Manning, 2015).

A stacked LSTM encoder reads the source into states h̄_1 … h̄_S; a stacked LSTM decoder, started from the
encoder's final states, produces h_t at each target step. Attention then looks at the source *after* h_t is
computed (Sect. 3; the scores and windows are in seq2bert/nn/attention.py):

    a_t(s) = align(h_t, h̄_s) = exp(score(h_t, h̄_s)) / Σ_s' exp(score(h_t, h̄_s'))      Eq. 7
    c_t = Σ_s a_t(s) h̄_s                                          global: all s; local: s ∈ [p_t − D, p_t + D]
    h̃_t = tanh(W_c [c_t; h_t])                                    Eq. 5 (the attentional hidden state)
    p(y_t | y_<t, x) = softmax(W_s h̃_t)                           Eq. 6

Local attention (Sect. 3.2): local-m takes p_t = t; local-p predicts p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))
(Eq. 9) and multiplies the weights by a Gaussian around p_t with σ = D/2 (Eq. 10).

Input feeding (Sect. 3.3): h̃_{t−1} is concatenated with the embedding of y_{t−1} as the decoder's input, so
the model knows its past alignment decisions. Without it, the decoder LSTM runs fused over all steps.

Departures from the paper, and choices it leaves open, marked where they happen: sub-word vocabularies;
padded source positions get zero weight; local-m clips p_t = t to the last source position once the target
is longer than the source; the location score gives zero weight past ``max_source_length`` (the paper's
footnote 6: "for long sentences, we ignore words near the end"). Dropout (Zaremba et al. 2014, as the paper)
is on the non-recurrent connections: embeddings, between layers and before the softmax. With
``reverse_source`` the positions s (and so p_t in local attention) count in the reversed source.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models.attention.config import LuongConfig
from seq2bert.models.encoder_decoder import EncoderDecoder
from seq2bert.models.outputs import DecoderOutput
from seq2bert.nn.attention import LuongAttention
from seq2bert.nn.rnn import FusedRNN, lstm_cell, reverse_padded, run_fused, widen
from seq2bert.precision import full_precision

LOCAL = {"global": None, "local-m": "monotonic", "local-p": "predictive"}


@dataclass
class LuongState:
    """Decoder LSTM states h, c (L, B, H); h̃_{t−1} (B, H) for input feeding; the source h̄ (B, S, H), its
    projected keys (or None), mask (B, S) and lengths (B,); ``t`` = target steps taken."""

    h: torch.Tensor
    c: torch.Tensor
    feed: torch.Tensor
    memory: torch.Tensor
    keys: torch.Tensor | None
    mask: torch.Tensor
    lengths: torch.Tensor
    t: int = 0


class LuongNMT(EncoderDecoder):
    """Stacked LSTM encoder-decoder with Luong's global or local attention and input feeding."""

    def __init__(self, config: LuongConfig):
        super().__init__(config)
        E, H, L, p = config.embedding_dim, config.hidden_size, config.num_layers, config.dropout
        self.src_embed = nn.Embedding(config.src_vocab_size, E, padding_idx=config.pad_token_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, E, padding_idx=config.pad_token_id)
        self.encoder = FusedRNN("lstm", E, H, num_layers=L, dropout=p)
        feed = H if config.input_feeding else 0
        self.decoder = nn.LSTM(E + feed, H, num_layers=L, dropout=p if L > 1 else 0.0, batch_first=True)
        self.attention = LuongAttention(
            H,
            config.score,
            local=LOCAL[config.attention],
            window=config.window,
            max_source_length=config.max_source_length,
        )
        self.W_c = nn.Linear(2 * H, H, bias=False)  # Eq. 5
        self.dropout = nn.Dropout(p)
        self.W_s = nn.Linear(H, config.tgt_vocab_size)  # Eq. 6
        r = config.init_range  # Sect. 4.1: "parameters are uniformly initialized in [−0.1, 0.1]"
        with torch.no_grad():
            for param in self.parameters():
                nn.init.uniform_(param, -r, r)
            self.src_embed.weight[config.pad_token_id].zero_()
            self.tgt_embed.weight[config.pad_token_id].zero_()

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        output_attentions: bool = False,
    ) -> LuongState:
        """input_ids, attention_mask: (B, S) → source states h̄ and the decoder's initial state. (The encoder
        has no attention weights.)"""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        mask = attention_mask.bool()
        lengths = mask.sum(dim=1).clamp(min=1)  # (B,)
        if self.config.reverse_source:
            input_ids = reverse_padded(input_ids, lengths)
        x = self.dropout(self.src_embed(input_ids))  # (B, S, E)
        memory, (h, c) = self.encoder(x, lengths=lengths)  # h̄: (B, S, H); h, c: (L, B, H)
        h, c = widen(h), widen(c)  # the decoder's recurrent state stays fp32 under bf16 autocast
        feed = memory.new_zeros(memory.size(0), self.config.hidden_size)  # h̃_0 = 0
        return LuongState(h, c, feed, memory, self.attention.project_keys(memory), mask, lengths)

    def attend(self, h_t: torch.Tensor, state: LuongState, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        """h_t (B, H) → h̃_t (B, H) and a_t (B, S)."""
        c_t, a_t = self.attention(h_t, state.memory, state.mask, keys=state.keys, t=t, lengths=state.lengths)
        with full_precision(h_t):  # h̃_t is fed to the next step (input feeding): a recurrent state, kept fp32
            h_tilde = torch.tanh(self.W_c(torch.cat([c_t, widen(h_t)], dim=-1)))  # Eq. 5
        return h_tilde, a_t

    def decoder_step(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        """One step of the stacked decoder LSTM (``self.decoder``'s weights, seq2bert.nn.rnn.lstm_cell):
        x (B, I), h, c (L, B, H) → top output (B, H), new h, c. The cell state stays fp32 under autocast."""
        hs, cs = [], []
        for k in range(self.config.num_layers):
            w = [
                getattr(self.decoder, f"{name}_l{k}")
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            ]
            h_k, c_k = lstm_cell(x, (h[k], c[k]), *w)
            hs.append(h_k)
            cs.append(c_k)
            last = k == self.config.num_layers - 1
            x = (
                h_k if last else F.dropout(h_k, self.decoder.dropout, self.training)
            )  # between layers, as nn.LSTM
        return x, torch.stack(hs), torch.stack(cs)

    def decode(
        self, decoder_input_ids: torch.Tensor, state: LuongState, *, output_attentions: bool = False
    ) -> DecoderOutput:
        """decoder_input_ids (B, T) → logits (B, T, V), the state after step T, and a (B, T, S) if asked."""
        y = self.dropout(self.tgt_embed(decoder_input_ids))  # (B, T, E)
        T = y.size(1)
        h, c, feed = state.h, state.c, state.feed
        if not self.config.input_feeding:  # the decoder does not depend on attention: run it fused
            tops, (h, c) = run_fused(self.decoder, y, (h, c))  # (B, T, H)
            h, c = widen(h), widen(c)
        tildes, alphas = [], []
        for i in range(T):
            if self.config.input_feeding:  # Sect. 3.3: input [E y_{t−1}; h̃_{t−1}]
                h_t, h, c = self.decoder_step(torch.cat([y[:, i], feed], dim=-1), h, c)  # (B, H)
            else:
                h_t = tops[:, i]
            feed, a_t = self.attend(h_t, state, state.t + i)
            tildes.append(feed)
            alphas.append(a_t)
        h_tilde = torch.stack(tildes, dim=1)  # (B, T, H)
        logits = self.W_s(self.dropout(h_tilde))  # Eq. 6: (B, T, V)
        new = LuongState(h, c, feed, state.memory, state.keys, state.mask, state.lengths, state.t + T)
        return DecoderOutput(
            logits,
            new,
            attentions=torch.stack(alphas, dim=1) if output_attentions else None,
            hidden_states=h_tilde,
        )

    @staticmethod
    def reorder(state: LuongState, index: torch.Tensor) -> LuongState:
        """Select batch rows ``index`` (N,) for beam search."""

        def rows(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.index_select(0, index)

        return LuongState(
            state.h.index_select(1, index),
            state.c.index_select(1, index),
            rows(state.feed),
            rows(state.memory),
            rows(state.keys),
            rows(state.mask),
            rows(state.lengths),
            state.t,
        )
