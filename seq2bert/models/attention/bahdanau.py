"""Neural Machine Translation by Jointly Learning to Align and Translate (Bahdanau, Cho & Bengio, 2015):
RNNsearch.

A bidirectional RNN encoder turns x_1 … x_T into annotations h_j = [h→_j; h←_j] (Sect. 3.2). The decoder does
not squeeze them into one vector: at each step it looks back at all of them through an alignment model
(Sect. 3.1; equation numbers of arXiv:1409.0473v7):

    p(y_i | y_1, …, y_{i−1}, x) = g(y_{i−1}, s_i, c_i)                  Eq. 4 (maxout deep output, A.2.2)
    s_i = f(s_{i−1}, y_{i−1}, c_i)                                        below Eq. 4 (a GRU, A.2.2)
    c_i = Σ_j α_ij h_j                                                     Eq. 5
    α_ij = exp(e_ij) / Σ_k exp(e_ik)                                       Eq. 6
    e_ij = a(s_{i−1}, h_j) = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)              below Eq. 6; A.1.2
    s_0 = tanh(W_s h←_1)                                                   A.2.2

Order of one decoder step i: α_i and c_i from s_{i−1} (Eq. 5–6), then s_i from (s_{i−1}, y_{i−1}, c_i),
then the output from (y_{i−1}, s_i, c_i) (Eq. 4). Because c_i needs s_{i−1}, the decoder runs one step at a
time even under teacher forcing; the output layer (the costly softmax) runs once over all steps.

Departures from the paper, marked where they happen:
- Appendix A.2.2 writes the output layer with s_{i−1}; we follow Eq. 4 of the main text (s_i), as most
  implementations do;
- the GRUs are torch's: the candidate state is tanh(W E y + C c_i + r_i ∘ (U s_{i−1} + b)), where the
  paper (A.2.2) resets before the product, tanh(W E y + U (r_i ∘ s_{i−1}) + C c_i); and the update reads
  s_i = z_i ∘ s_{i−1} + (1 − z_i) ∘ s̃_i where the paper writes (1 − z_i) ∘ s_{i−1} + z_i ∘ s̃_i (the same
  family with z ↔ 1 − z);
- dropout on embeddings and before the output layer; sub-word vocabularies; deep (num_layers > 1)
  encoders as an option. Padded source positions get zero attention weight.

``attention_type="hard"``: Xu et al.'s (2015) stochastic hard attention on the same alignment model — the
context is the annotation at one location s_i ~ α_i (nn/attention.py, ``hard_alignment``), the most probable
one at test time — trained on the cross-entropy plus REINFORCE with a moving-average baseline
(objectives/reinforce.py; the baseline is the buffer ``reward_baseline``, kept in checkpoints). Departure:
by default each location's reward is its own token's log-likelihood, at λ_r = 0.1 (config.py says why);
``hard_reward="sequence"`` with ``reinforce_weight=1`` is Eq. 12 as written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models.attention.config import BahdanauConfig
from seq2bert.models.encoder_decoder import EncoderDecoder
from seq2bert.models.outputs import DecoderOutput
from seq2bert.models.seq2seq.cho import init_paper_style
from seq2bert.nn.attention import AdditiveAttention, HardAlignment, hard_alignment
from seq2bert.nn.heads import MaxoutDeepOutput
from seq2bert.nn.rnn import FusedRNN, gru_cell, widen
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.reinforce import reinforce_loss


@dataclass
class BahdanauState:
    """Decoder state s (B, n) with the source it attends to: annotations h (B, S, 2n), U_a h (B, S, A), mask (B, S)."""

    s: torch.Tensor
    annotations: torch.Tensor
    keys: torch.Tensor
    mask: torch.Tensor


class RNNSearch(EncoderDecoder):
    """Bidirectional GRU encoder, additive attention, GRU decoder, maxout deep output (Bahdanau et al. 2015)."""

    def __init__(self, config: BahdanauConfig):
        super().__init__(config)
        E, n, A, p = config.embedding_dim, config.hidden_size, config.attention_size, config.dropout
        self.src_embed = nn.Embedding(config.src_vocab_size, E, padding_idx=config.pad_token_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, E, padding_idx=config.pad_token_id)
        self.encoder = FusedRNN("gru", E, n, num_layers=config.num_layers, bidirectional=True, dropout=p)
        self.W_s = nn.Linear(n, n)  # s_0 = tanh(W_s h←_1)
        self.attention = AdditiveAttention(n, 2 * n, A)  # e_ij, Eq. 5–6
        self.decoder = nn.GRUCell(
            E + 2 * n, n
        )  # s_i = f(s_{i−1}, y_{i−1}, c_i), via seq2bert.nn.rnn.gru_cell
        self.dropout = nn.Dropout(p)  # departure: the paper used no dropout
        self.output = MaxoutDeepOutput(E + n + 2 * n, config.maxout_size, config.tgt_vocab_size, dropout=p)
        if config.attention_type == "hard":  # [b, batches seen]: REINFORCE's moving-average baseline
            self.register_buffer("reward_baseline", torch.zeros(2))
        init_paper_style(self, pad_token_id=config.pad_token_id)
        with torch.no_grad():  # B.1: W_a and U_a from N(0, 0.001²), v_a zero
            nn.init.normal_(self.attention.W_a.weight, 0.0, 0.001)
            nn.init.normal_(self.attention.U_a.weight, 0.0, 0.001)
            nn.init.zeros_(self.attention.v_a.weight)

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        output_attentions: bool = False,
    ) -> BahdanauState:
        """input_ids, attention_mask: (B, S) → annotations and the initial decoder state s_0. (The encoder has
        no attention weights.)"""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        mask = attention_mask.bool()
        lengths = mask.sum(dim=1).clamp(min=1)  # (B,)
        x = self.dropout(self.src_embed(input_ids))  # (B, S, E)
        h, h_n = self.encoder(x, lengths=lengths)  # h_j = [h→_j; h←_j]: (B, S, 2n); h_n (2L, B, n)
        # h←_1 is the backward RNN's final state (top layer); the recurrent state stays fp32 under autocast
        s0 = widen(torch.tanh(self.W_s(h_n[-1])))  # (B, n)
        return BahdanauState(s0, h, self.attention.project_keys(h), mask)

    def decoder_step(
        self, y: torch.Tensor, state: BahdanauState
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, HardAlignment | None]:
        """One decoder step from embedded y_{i−1} (B, E) → s_i (B, n), c_i (B, 2n), α_i (B, S), and with hard
        attention its HardAlignment (c_i its context)."""
        c, alpha = self.attention(
            state.s, state.annotations, state.mask, projected_keys=state.keys
        )  # Eq. 5–6
        hard = None
        if self.config.attention_type == "hard":  # c_i = h_{s_i} (Xu et al.)
            hard = hard_alignment(
                alpha,
                widen(state.annotations),
                sample=self.training,
                expected_prob=self.config.hard_expected_prob,
            )
            c = hard.context
        d = self.decoder
        s = gru_cell(
            torch.cat([y, c], dim=-1), state.s, d.weight_ih, d.weight_hh, d.bias_ih, d.bias_hh
        )  # s_i = f(s_{i−1}, y_{i−1}, c_i)
        return s, c, alpha, hard

    def decode(
        self, decoder_input_ids: torch.Tensor, state: BahdanauState, *, output_attentions: bool = False
    ) -> DecoderOutput:
        """decoder_input_ids (B, T) → logits (B, T, V), the state after step T, and α (B, T, S) if asked."""
        y = self.dropout(self.tgt_embed(decoder_input_ids))  # E y_{i−1}: (B, T, E)
        states, contexts, alphas, hards = [], [], [], []
        for i in range(y.size(1)):
            s, c, alpha, hard = self.decoder_step(y[:, i], state)
            state = replace(state, s=s)
            states.append(s)
            contexts.append(c)
            alphas.append(alpha)
            hards.append(hard)
        s_all, c_all = torch.stack(states, dim=1), torch.stack(contexts, dim=1)  # (B, T, n), (B, T, 2n)
        logits = self.output(y, self.dropout(s_all), c_all)  # Eq. 4: g(y_{i−1}, s_i, c_i) → (B, T, V)
        sampled = self.training and hards and hards[0] is not None
        return DecoderOutput(
            logits,
            state,
            attentions=torch.stack(alphas, dim=1) if output_attentions else None,
            hidden_states=s_all,
            alignment_log_probs=torch.stack([h.log_prob for h in hards], 1) if sampled else None,  # (B, T)
            alignment_entropy=torch.stack([h.entropy for h in hards], 1) if sampled else None,
        )

    def alignment_loss(self, out: DecoderOutput, labels: torch.Tensor) -> torch.Tensor:
        """Xu et al.'s Eq. 12 beyond the likelihood: REINFORCE of the sampled locations with the reward
        log p(y | s̃, a) (``hard_reward="sequence"``) or each location's own token's log-likelihood ("token"),
        less the moving-average baseline, and the entropy term (objectives/reinforce.py)."""
        mask = labels.ne(IGNORE_INDEX)
        nll = F.cross_entropy(
            out.logits.float().transpose(1, 2), labels.masked_fill(~mask, 0), reduction="none"
        )  # −log p(y_t | …): (B, T)
        return reinforce_loss(
            nll,
            out.alignment_log_probs,
            out.alignment_entropy,
            mask,
            self.reward_baseline,
            weight=self.config.reinforce_weight,
            entropy_weight=self.config.entropy_weight,
            per_token=self.config.hard_reward == "token",
        )

    @staticmethod
    def reorder(state: BahdanauState, index: torch.Tensor) -> BahdanauState:
        """Select batch rows ``index`` (N,) for beam search."""
        return BahdanauState(
            *(t.index_select(0, index) for t in (state.s, state.annotations, state.keys, state.mask))
        )
