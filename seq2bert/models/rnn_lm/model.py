"""A recurrent language model: p(w_1 … w_T) = ∏_t p(w_t | w_<t), with p(w_t | w_<t) = softmax(V h_t + c) and
h_t the state of a (deep) recurrent network after w_1 … w_{t−1} — Elman's network (1990) as Mikolov et al.
(2010) used it, or an LSTM (Zaremba, Sutskever & Vinyals 2014) or a GRU:

    x_t = Dropout(E w_t)                                   the word's embedding
    h_t^ℓ = Cell^ℓ(Dropout(h_t^{ℓ−1}), h_{t−1}^ℓ)          L layers (seq2bert/nn/rnn.py), dropout between them
    p(w_{t+1} | w_≤t) = softmax(V Dropout(h_t^L) + c)      V = E when the embeddings are tied

Training reads a continuous token stream in segments (truncated back-propagation through time, see
seq2bert/data/lm.py): ``forward`` takes the state the previous segment ended in and returns the state after
this one, which the recipe detaches and carries on. Generation (greedy, beam, sampling) goes through the one
decoding path: the model implements the incremental-decoder protocol (``start`` reads the prompt, ``step``
feeds one token, ``reorder`` follows the beams).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from seq2bert.decoding import generation
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.config import settings as config_settings
from seq2bert.models.family import Family
from seq2bert.models.pretrained import SavePretrained
from seq2bert.models.rnn_lm.config import RNNLMConfig
from seq2bert.nn.rnn import init_irnn, recurrent, run_fused
from seq2bert.objectives.cross_entropy import sequence_cross_entropy

State = torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # h (L, B, H), or (h, c) for the LSTM


@dataclass
class CausalLMOutput:
    """Next-token ``logits`` (B, T, V), ``loss`` with labels, and the recurrent ``state`` after the segment."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    state: State | None = None


def detach(state: State | None) -> State | None:
    """The state without its history (truncated BPTT: gradients stop at the segment boundary)."""
    if state is None:
        return None
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


class RNNLanguageModel(SavePretrained, nn.Module):
    def __init__(self, config: RNNLMConfig):
        super().__init__()
        config.validate()
        self.config = c = config
        mode = "rnn_relu" if c.cell == "irnn" else c.cell
        self.embed = nn.Embedding(c.vocab_size, c.embedding_dim)
        self.rnn = recurrent(mode, c.embedding_dim, c.hidden_size, num_layers=c.num_layers, dropout=c.dropout)
        self.dropout = nn.Dropout(c.dropout)
        self.output = nn.Linear(c.hidden_size, c.vocab_size)  # V, c
        self.reset_parameters()
        if c.tie_word_embeddings:
            self.output.weight = self.embed.weight

    def reset_parameters(self) -> None:
        """Uniform ±init_range everywhere (Zaremba et al. 2014), zero output bias; the IRNN's recurrent matrix
        is the identity and its biases zero (Le et al. 2015)."""
        r = self.config.init_range
        for p in self.parameters():
            nn.init.uniform_(p, -r, r)
        nn.init.zeros_(self.output.bias)
        if self.config.cell == "irnn":
            init_irnn(self.rnn)

    def forward(
        self, input_ids: torch.Tensor, labels: torch.Tensor | None = None, *, state: State | None = None
    ) -> CausalLMOutput:
        """input_ids (B, T) → logits (B, T, V) for the token after each position; ``labels`` (B, T) are those
        next tokens (IGNORE_INDEX where none); ``state`` the state before the segment (None: zeros)."""
        x = self.dropout(self.embed(input_ids))  # (B, T, E)
        out, state = self.rnn(x, state)  # (B, T, H)
        logits = self.output(self.dropout(out))  # (B, T, V)
        loss = None if labels is None else sequence_cross_entropy(logits, labels)
        return CausalLMOutput(logits, loss, state)

    # --- the incremental-decoder protocol (seq2bert/decoding/protocol.py)
    def start(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> State | None:
        """The state after each left-padded prompt (B, P): padding is skipped, not read (each row is
        right-aligned, so it is packed from its first real token)."""
        B, P = input_ids.shape
        if P == 0:
            return None
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        lengths = mask.sum(1)  # (B,)
        if bool(lengths.eq(0).all()):
            return None
        shift = (P - lengths)[:, None]  # move each row's tokens to the front: (B, P)
        index = (torch.arange(P, device=input_ids.device)[None, :] + shift).clamp(max=P - 1)
        x = self.embed(input_ids.gather(1, index))  # (B, P, E), real tokens first
        packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, state = run_fused(self.rnn.rnn, packed)
        empty = lengths.eq(0)  # rows without a prompt start from zeros
        if bool(empty.any()):
            keep = (~empty).to(x.dtype)[None, :, None]
            state = tuple(s * keep for s in state) if isinstance(state, tuple) else state * keep
        return state

    def step(self, tokens: torch.Tensor, state: State | None) -> tuple[torch.Tensor, State]:
        """tokens (N,) → next-token logits (N, V) and the state after them."""
        out = self(tokens[:, None], state=state)
        return out.logits[:, -1], out.state

    def reorder(self, state: State | None, index: torch.Tensor) -> State | None:
        if state is None:
            return None
        if isinstance(state, tuple):
            return tuple(s.index_select(1, index) for s in state)
        return state.index_select(1, index)

    @torch.no_grad()
    def generate(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **settings: Any
    ) -> torch.Tensor:
        """The prompt (B, P), left-padded, followed by the new tokens: (B, P + L), as transformers returns
        them; greedy, beam search, or sampling with ``temperature`` (and top-k / nucleus filtering):
        ``settings`` are GenerationConfig's (seq2bert/decoding/config.py), 50 new tokens unless set."""
        config = GenerationConfig(
            eos_token_id=self.config.eos_token_id,
            pad_token_id=self.config.pad_token_id,
            **config_settings(settings, {"max_new_tokens": 50}),
        )
        was_training = self.training
        self.eval()
        try:
            return generation.generate(self, input_ids, attention_mask, config).sequences
        finally:
            self.train(was_training)


FAMILY = Family(
    model_type="rnn-lm",
    config_class=RNNLMConfig,
    architectures={"RNNLanguageModel": RNNLanguageModel},
    heads={"causal_lm": "RNNLanguageModel"},
    kind="decoder",
    stream_lm=True,
)
