"""Configuration of the BiLSTM baselines (models/bilstm/model.py), with the field names of transformers'
configs where they mean the same thing (vocab_size, hidden_size, pad_token_id, id2label, problem_type,
classifier_dropout) and those of seq2bert's recurrent models otherwise (embedding_dim, num_layers, dropout).

The defaults are a classic baseline that trains on 2 CPU cores: 300-dimensional random word embeddings,
one bidirectional layer of 256 cells a direction, dropout 0.5, max pooling for sentences. An LSTM has no
position table: it reads sequences of any length (no ``max_position_embeddings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from seq2bert.errors import ConfigError
from seq2bert.objectives.classification import ClassifierFields

LAYERS = ("mix", "last", "sum_last_four")


@dataclass
class FeaturesConfig:
    """A frozen pretrained encoder whose layers the BiLSTM reads beside its word embeddings
    (models/bilstm/features.py): ELMo's scalar mix of them, or BERT's feature-based choices (Table 7)."""

    path: str = ""  # the encoder's checkpoint (a record: its weights are stored in the task model's)
    encoder: dict[str, Any] = field(default_factory=dict)  # its config.json, set from ``path``; {}: none
    layers: Literal["mix", "last", "sum_last_four"] = "mix"  # γ Σ_j s_j h_j, the last layer, the last four
    layer_norm: bool = False  # the mix normalises each layer first (Sect. 3.2, "in some cases")
    dropout: float = 0.0  # on the feature vector alone (the BiLSTM's own dropout then takes [E x; f])
    l2: float = 0.001  # λ of the mix's λ Σ_j (w_j − w̄)² (Table 2's small λ: the layers may differ)
    # training: the frozen encoder's layers at the words computed once per example rather than in every
    # step — the same numbers (it is frozen, in eval mode). CoNLL-2003 with MiniLM's features: ~4,800
    # tokens/s so (after 3–4.5 minutes computing them), ~2,200 with MiniLM run in every step
    cache: bool = True

    def validate(self) -> None:
        if self.layers not in LAYERS:
            raise ConfigError(f"layers: expected one of {', '.join(LAYERS)}, got {self.layers!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout: must be in [0, 1), got {self.dropout}")
        if self.l2 < 0:
            raise ConfigError(f"l2: must be >= 0, got {self.l2}")

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class BiLSTMConfig(ClassifierFields):
    """The encoder's sizes; the heads' id2label, problem_type and classifier_dropout (None: ``dropout``) come
    from ClassifierFields (objectives/classification.py)."""

    model_type: str = "bilstm"
    vocab_size: int = 30000  # the fine-tuning recipe sets it from the tokenizer it trains
    embedding_dim: int = 300
    hidden_size: int = 256  # H, per direction: the states h_t = [h→_t; h←_t] have 2H dimensions
    num_layers: int = 1
    dropout: float = 0.5  # on the embeddings and between layers (Zaremba et al. 2014: non-recurrent only)
    # the sentence vector (model.py): max over time, the final states, or ULMFiT's concat pooling
    pooling: Literal["max", "last", "concat"] = "max"
    # one direction alone: the LSTM of a left-to-right language model (Dai & Le 2015; ULMFiT) it starts from
    bidirectional: bool = True
    # 0: the classifier is one linear layer; n > 0: ULMFiT's two blocks (batch norm, dropout, a ReLU layer of n)
    classifier_hidden: int = 0
    pad_token_id: int = 0
    features: FeaturesConfig = field(default_factory=FeaturesConfig)  # a frozen encoder's, or none

    def validate(self) -> None:
        if self.model_type != "bilstm":
            raise ConfigError(f"model_type: expected 'bilstm', got {self.model_type!r}")
        for name in ("vocab_size", "embedding_dim", "hidden_size", "num_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout: must be in [0, 1), got {self.dropout}")
        if self.pooling not in ("max", "last", "concat"):
            raise ConfigError(f"pooling: expected 'max', 'last' or 'concat', got {self.pooling!r}")
        if self.classifier_hidden < 0:
            raise ConfigError(
                f"classifier_hidden: must be >= 0 (0: one linear layer), got {self.classifier_hidden}"
            )
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ConfigError(
                f"pad_token_id: must be a token id below vocab_size {self.vocab_size}, got {self.pad_token_id}"
            )
        self.features.validate()
        self.validate_classifier()

    def __post_init__(self) -> None:
        self.validate()
