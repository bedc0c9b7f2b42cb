"""CoVe (McCann et al. 2017, "Learned in Translation: Contextualized Word Vectors"): the encoder of a
translation model, taken out of it and frozen, as a reader of English words whose states feed a task model.

    h = MT-LSTM(x)                      the encoder of an English→German attention model (Sect. 3)
    CoVe(w) = MT-LSTM(GloVe(w))          Eq. 5: its top-layer states
    w̃ = [GloVe(w); CoVe(w)]             Eq. 6: beside the word vectors, the task model's input

Here the translation model is one of the tour's attention models trained by ``seq2bert train`` (RNNsearch's
bidirectional GRU, or Luong's stacked LSTM), and the "GloVe" half is the BiLSTM's own embeddings (``--vectors``
a GloVe run): ``seq2bert finetune --model bilstm --vectors GLOVE --features TRANSLATION_RUN``. The BiLSTM
reads the encoder through models/bilstm/features.py, as it reads ELMo or BERT: ``features.layers=last`` is
Eq. 5 (the top layer), ``mix`` a learned mix of the encoder's layers.

The encoder was trained on English sources (``--src en``): nothing in a run records its source language, so
a run of another direction is read all the same, as the wrong language.

Departures, on purpose: the paper's MT-LSTM is a two-layer bidirectional LSTM of 300 cells a direction that
reads fixed GloVe vectors; ours reads the sub-word embeddings its translation model learned (the translation
recipe has no fixed input vectors), with the translation model's own cell (the GRU of RNNsearch) and sizes.
The layers it offers are the encoder's L layers (the embeddings, of another width, are not among them). A
sentence pair is one text, A's words then B's with no separator (as the BiLSTM and ELMo read pairs here): the
paper encodes each sentence apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from seq2bert.errors import ConfigError
from seq2bert.models.family import Family
from seq2bert.models.outputs import LayersOutput
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.rnn import FusedRNN

CELLS = ("lstm", "gru")


@dataclass
class CoVeConfig:
    """The shape of a translation model's encoder: its source embeddings and its L recurrent layers."""

    model_type: str = "cove"
    cell: Literal["lstm", "gru"] = "lstm"
    vocab_size: int = 8000  # the translation model's (one vocabulary for source and target)
    embedding_dim: int = 256
    units: int = 300  # cells a direction
    num_layers: int = 2
    bidirectional: bool = True
    pad_token_id: int = 0
    translation: str = ""  # the translation family it was taken from (bahdanau, luong)

    def validate(self) -> None:
        if self.model_type != "cove":
            raise ConfigError(f"model_type: expected 'cove', got {self.model_type!r}")
        if self.cell not in CELLS:
            raise ConfigError(f"cell: expected one of {', '.join(CELLS)}, got {self.cell!r}")
        for name in ("vocab_size", "embedding_dim", "units", "num_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")

    def __post_init__(self) -> None:
        self.validate()

    @property
    def hidden_size(self) -> int:
        """The width of a state h_j = [h→_j; h←_j] (both directions)."""
        return self.units * (2 if self.bidirectional else 1)

    @property
    def num_hidden_layers(self) -> int:
        return self.num_layers

    @property
    def feature_layers(self) -> int:
        """The layers a features reader mixes: the encoder's L alone (models/bilstm/features.py)."""
        return self.num_layers


class CoVe(SavePretrained, nn.Module):
    """The source embeddings and recurrent layers of a translation model's encoder, one module per layer so
    that every layer's states can be read (torch's multi-layer RNN returns the top one alone)."""

    def __init__(self, config: CoVeConfig):
        super().__init__()
        self.config = config
        E, U = config.embedding_dim, config.units
        self.embed = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.layers = nn.ModuleList(
            FusedRNN(config.cell, E if k == 0 else config.hidden_size, U, bidirectional=config.bidirectional)
            for k in range(config.num_layers)
        )

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_hidden_states: bool = True,
    ) -> LayersOutput:
        """input_ids (B, S) of the translation tokenizer, without special tokens (the encoder's training
        sources had none) → every layer's states (B, S, hidden_size), zeros at padding; the last is CoVe
        (Eq. 5). ``token_type_ids`` is ignored (a pair is one text)."""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        if input_ids.size(1) == 0:  # texts without a word: one padding position (an RNN packs no empty rows)
            input_ids = input_ids.new_full((input_ids.size(0), 1), self.config.pad_token_id)
            attention_mask = attention_mask.new_zeros(input_ids.shape)
        lengths = attention_mask.sum(dim=1).clamp(min=1)
        x = self.embed(input_ids)
        states = []
        for layer in self.layers:
            x, _ = layer(x, lengths=lengths)  # (B, S, hidden_size), zeros past each row's length
            states.append(x)
        return LayersOutput(tuple(states), attention_mask.long())


def from_translation(model: nn.Module, source: str) -> CoVe:
    """The encoder of a translation model (RNNsearch or Luong's) as a CoVe module, with its weights: layer k of
    the encoder's multi-layer RNN becomes ``layers[k]`` (its ``_l{k}`` parameters renamed ``_l0``)."""
    config = model.config
    encoder = getattr(model, "encoder", None)
    if config.model_type not in ("bahdanau", "luong") or not isinstance(encoder, FusedRNN):
        raise ConfigError(
            f"features: {source} is a {config.model_type} translation model; CoVe takes the recurrent "
            "encoder of an attention model (bahdanau, luong)"
        )
    if getattr(config, "reverse_source", False):
        raise ConfigError(
            f"features: {source} reads its sources reversed; CoVe reads words in order "
            "(train it with --set model.reverse_source=false)"
        )
    rnn = encoder.rnn
    cove = CoVe(
        CoVeConfig(
            cell=encoder.mode,
            vocab_size=config.src_vocab_size,
            embedding_dim=config.embedding_dim,
            units=rnn.hidden_size,
            num_layers=rnn.num_layers,
            bidirectional=rnn.bidirectional,
            pad_token_id=config.pad_token_id,
            translation=config.model_type,
        )
    )
    state = {"embed.weight": model.src_embed.weight}
    for name, weight in rnn.named_parameters():  # weight_ih_l1_reverse → layers.1.rnn.weight_ih_l0_reverse
        kind, layer, reverse = re.fullmatch(r"(\w+?)_l(\d+)(_reverse)?", name).groups()
        state[f"layers.{layer}.rnn.{kind}_l0{reverse or ''}"] = weight
    cove.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    return cove.eval()


FAMILY = Family(
    model_type="cove",
    config_class=CoVeConfig,
    architectures={"CoVeModel": CoVe},
    heads={"base": "CoVeModel"},
    kind="encoder",
    reads_specials=False,
)
