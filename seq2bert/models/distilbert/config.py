"""Configuration of DistilBERT (Sanh et al. 2019), with transformers' field names (DistilBertConfig, model_type
"distilbert"): ``dim``, ``n_layers``, ``n_heads``, ``hidden_dim``, ``dropout``, ``attention_dropout``,
``activation``, and the heads' ``qa_dropout`` and ``seq_classif_dropout``; ``sinusoidal_pos_embds`` chooses
fixed sinusoidal positions (Vaswani et al. 2017, Sect. 3.5) over learned ones.

BERT's blocks read BERT's names (hidden_size, num_hidden_layers, …): the config answers to them too, as
transformers' ``attribute_map`` does, so that a BERT block built from it has DistilBERT's sizes. DistilBERT
has no token types (``type_vocab_size`` 0) and its LayerNorms have ε = 1e-12, fixed.

"the number of layers is reduced by a factor of 2" (Sect. 3): DistilBERT-base is BERT-base's width with 6
layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.objectives.classification import ClassifierFields


def _alias(name: str, doc: str) -> property:
    """BERT's name for DistilBERT's field ``name`` (readable and settable)."""
    return property(lambda self: getattr(self, name), lambda self, value: setattr(self, name, value), doc=doc)


@dataclass
class DistilBertConfig(ClassifierFields):
    """DistilBERT's hyper-parameters (defaults: distilbert-base-uncased). id2label and problem_type come from
    ClassifierFields; its ``classifier_dropout`` stays None: DistilBERT's heads drop out with
    seq_classif_dropout (sequences, choices), qa_dropout (spans) and dropout (tokens)."""

    model_type: str = "distilbert"
    vocab_size: int = 30522
    max_position_embeddings: int = 512
    sinusoidal_pos_embds: bool = False
    n_layers: int = 6
    n_heads: int = 12
    dim: int = 768
    hidden_dim: int = 3072
    dropout: float = 0.1
    attention_dropout: float = 0.1
    activation: str = "gelu"
    initializer_range: float = 0.02
    qa_dropout: float = 0.1
    seq_classif_dropout: float = 0.2
    pad_token_id: int = 0

    # BERT's names (transformers' attribute_map, and more)
    hidden_size = _alias("dim", "H")
    num_hidden_layers = _alias("n_layers", "L")
    num_attention_heads = _alias("n_heads", "A")
    intermediate_size = _alias("hidden_dim", "the feed-forward size")
    hidden_act = _alias("activation", "the feed-forward's activation")
    hidden_dropout_prob = _alias("dropout", "dropout on the embeddings and after the feed-forward")
    attention_probs_dropout_prob = _alias("attention_dropout", "dropout on the attention weights")
    layer_norm_eps = 1e-12
    type_vocab_size = 0  # no segment embeddings
    is_decoder = False

    def validate(self) -> None:
        if self.model_type != "distilbert":
            raise ConfigError(f"model_type: expected 'distilbert', got {self.model_type!r}")
        for name in ("vocab_size", "max_position_embeddings", "n_layers", "n_heads", "dim", "hidden_dim"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.dim % self.n_heads:
            raise ConfigError(f"n_heads: dim {self.dim} is not divisible by {self.n_heads} heads")
        for name in ("dropout", "attention_dropout", "qa_dropout", "seq_classif_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {getattr(self, name)}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(
                f"activation: expected one of {', '.join(ACTIVATIONS)}, got {self.activation!r}"
            )
        if self.initializer_range < 0:
            raise ConfigError("initializer_range must be >= 0")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ConfigError(f"pad_token_id: must be a token id below vocab_size {self.vocab_size}")
        self.validate_classifier()
        if self.classifier_dropout is not None:
            raise ConfigError(
                "classifier_dropout: DistilBERT's heads use seq_classif_dropout, qa_dropout, dropout"
            )

    def __post_init__(self) -> None:
        self.validate()


def distilbert_base(**overrides) -> DistilBertConfig:
    """H = 768, A = 12, L = 6: half of BERT-base's layers, 66 M parameters (Sect. 3, Table 3)."""
    return DistilBertConfig(**overrides)
