"""Small output dataclasses shared by the models (field names follow transformers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class LayersOutput:
    """An encoder's layers of the tokens, each (B, T, D) with zeros at padding (ELMo's L + 1, CoVe's L): the
    last is ``last_hidden_state``."""

    hidden_states: tuple[torch.Tensor, ...]
    attention_mask: torch.Tensor  # (B, T)

    @property
    def last_hidden_state(self) -> torch.Tensor:
        return self.hidden_states[-1]


@dataclass
class Seq2SeqLMOutput:
    """Output of an encoder-decoder: next-token ``logits`` (B, T, V), ``loss`` when labels were given, and
    ``attentions`` (B, T, S) — the weight of each source position for each target position — when asked.
    ``logits`` is None where the forward was asked for the loss alone (``return_logits=False``)."""

    logits: torch.Tensor | None
    loss: torch.Tensor | None = None
    attentions: torch.Tensor | None = None
    # Transformers, with output_attentions: one (B, h, T_q, T_k) tensor per layer
    encoder_attentions: tuple[torch.Tensor, ...] | None = None
    decoder_attentions: tuple[torch.Tensor, ...] | None = None
    cross_attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class DecoderOutput:
    """What an encoder-decoder's ``decode`` returns for decoder inputs (B, T): next-token ``logits`` (B, T, V),
    the ``state`` after the T steps, and, when asked, the attention weights of Seq2SeqLMOutput — ``attentions``
    (B, T, S) over the source, and, for a Transformer, every layer's weights (the encoder's, kept in its state
    by ``encode``, included)."""

    logits: torch.Tensor
    state: Any
    attentions: torch.Tensor | None = None
    encoder_attentions: tuple[torch.Tensor, ...] | None = None
    decoder_attentions: tuple[torch.Tensor, ...] | None = None
    cross_attentions: tuple[torch.Tensor, ...] | None = None
    # the decoder's last hidden states (B, T, d), what the output layer reads (contrastive search compares
    # them; seq2bert/decoding/contrastive.py)
    hidden_states: torch.Tensor | None = None
    # hard attention while training (Xu et al. 2015; nn/attention.py): each step's log-probability of the
    # sampled location and the attention's entropy (B, T), which the REINFORCE term reads
    alignment_log_probs: torch.Tensor | None = None
    alignment_entropy: torch.Tensor | None = None
