"""Learning Phrase Representations using RNN Encoder-Decoder for Statistical Machine Translation
(Cho, van Merriënboer, Gulcehre, Bahdanau, Bougares, Schwenk & Bengio, 2014).

An encoder RNN reads x_1 … x_T into its last hidden state h_T, summarised as the context vector c; a decoder
RNN generates y_1 … y_T' with c given to *every* step — unlike Sutskever et al., where the fixed vector
only starts the decoder (Sect. 2.2; the gated hidden unit, Sect. 2.3; the layer-by-layer equations in
Appendix A):

    c = tanh(V h_T)                                                  Appendix A (summary of the source)
    h'_0 = tanh(V' c)                                                Appendix A (decoder initial state)
    h'_t = f(h'_{t−1}, y_{t−1}, c)                                   Sect. 2.2 (a GRU)
    p(y_t | y_<t, x) = g(h'_t, y_{t−1}, c)                           Sect. 2.2 (maxout deep output, App. A)

Departures from the paper, marked where they happen:
- the GRUs are torch's: the candidate state is tanh(W x + r ∘ (U h + b)) where the paper (Eq. 8) resets
  before the product, tanh(W x + U (r ∘ h)); the decoder GRU takes [e(y_{t−1}); c] as its input, so c also
  enters outside the reset gate. This lets the whole decoder run as one fused GRU under teacher forcing;
- with ``num_layers`` > 1 (the paper has one layer) c is an input of the first decoder layer and V' makes
  one initial state per layer;
- dropout on embeddings and before the output layer; sub-word vocabularies instead of 15,000 words.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.encoder_decoder import EncoderDecoder
from seq2bert.models.outputs import DecoderOutput
from seq2bert.models.seq2seq.config import ChoConfig
from seq2bert.nn.heads import MaxoutDeepOutput
from seq2bert.nn.rnn import FusedRNN, widen


@dataclass
class ChoState:
    """Decoder state: the GRU hidden states h' (L, B, n) and the context c (B, n)."""

    h: torch.Tensor
    c: torch.Tensor


class ChoEncoderDecoder(EncoderDecoder):
    """GRU encoder → context c → GRU decoder that sees c at every step, with a maxout deep output."""

    def __init__(self, config: ChoConfig):
        super().__init__(config)
        E, n, L, p = config.embedding_dim, config.hidden_size, config.num_layers, config.dropout
        self.src_embed = nn.Embedding(config.src_vocab_size, E, padding_idx=config.pad_token_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, E, padding_idx=config.pad_token_id)
        self.encoder = FusedRNN("gru", E, n, num_layers=L, dropout=p)
        self.V = nn.Linear(n, n)  # c = tanh(V h_T)
        self.V_prime = nn.Linear(n, L * n)  # h'_0 = tanh(V' c), one block per decoder layer
        self.decoder = FusedRNN("gru", E + n, n, num_layers=L, dropout=p)  # input [e(y_{t−1}); c]
        self.dropout = nn.Dropout(p)  # departure: the paper used no dropout
        self.output = MaxoutDeepOutput(n + E + n, config.maxout_size, config.tgt_vocab_size, dropout=p)
        init_paper_style(self, pad_token_id=config.pad_token_id)

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        output_attentions: bool = False,
    ) -> ChoState:
        """input_ids, attention_mask: (B, S) → the initial decoder state (h'_0, c). (No attention weights.)"""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        lengths = attention_mask.sum(dim=1).clamp(min=1)  # (B,)
        x = self.dropout(self.src_embed(input_ids))  # (B, S, E)
        _, h_n = self.encoder(x, lengths=lengths)  # (L, B, n): the state after each row's last real token
        c = torch.tanh(self.V(h_n[-1]))  # c = tanh(V h_T), (B, n)
        L, B, n = h_n.shape
        h0 = torch.tanh(self.V_prime(c)).view(B, L, n).transpose(0, 1).contiguous()  # h'_0: (L, B, n)
        # the recurrent state stays fp32 under bf16 autocast
        return ChoState(widen(h0), c)

    def decode(
        self, decoder_input_ids: torch.Tensor, state: ChoState, *, output_attentions: bool = False
    ) -> DecoderOutput:
        """decoder_input_ids (B, T) = [BOS] y_1 … y_{T−1} → logits (B, T, V) and the state after step T.
        No attention: the decoder sees the one context c."""
        y = self.dropout(self.tgt_embed(decoder_input_ids))  # e(y_{t−1}): (B, T, E)
        c = state.c.unsqueeze(1).expand(-1, y.size(1), -1)  # the same c at every step: (B, T, n)
        out, h = self.decoder(torch.cat([y, c], dim=-1), state.h)  # h'_t = f(h'_{t−1}, y_{t−1}, c): (B, T, n)
        logits = self.output(self.dropout(out), y, c)  # g(h'_t, y_{t−1}, c): (B, T, V)
        return DecoderOutput(logits, ChoState(widen(h), state.c), hidden_states=out)

    @staticmethod
    def reorder(state: ChoState, index: torch.Tensor) -> ChoState:
        """Select batch rows ``index`` (N,) for beam search."""
        return ChoState(state.h.index_select(1, index), state.c.index_select(0, index))


def init_paper_style(model: nn.Module, std: float = 0.01, pad_token_id: int | None = None) -> None:
    """Cho et al. (2014, Sect. 4.1.1) and Bahdanau et al. (2015, B.1): weight matrices from N(0, std²), recurrent
    matrices W_hh orthogonal (one block per gate), biases 0; embeddings from N(0, std²), [PAD] row 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf.startswith("bias"):
                p.zero_()
            elif leaf.startswith("weight_hh"):
                n = p.size(1)
                for block in p.split(n, dim=0):  # (n, n) per gate
                    nn.init.orthogonal_(block)
            else:
                nn.init.normal_(p, 0.0, std)
        for module in model.modules():
            if isinstance(module, nn.Embedding) and pad_token_id is not None:
                module.weight[pad_token_id].zero_()
