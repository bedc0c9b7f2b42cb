"""Configuration of MobileBERT (Sun et al. 2020), with transformers' field names (MobileBertConfig,
model_type "mobilebert"): BERT's fields (models/bert/config.py) plus

    embedding_size                the word embeddings' width E (128), widened to H by the input projection
    trigram_input                 the projection reads each token with its neighbours: [e_{t+1}; e_t; e_{t−1}]
    use_bottleneck                each block works at the narrow width B = intra_bottleneck_size inside,
                                  H outside (true_hidden_size = B; without it, H throughout)
    use_bottleneck_attention      queries, keys and values all from the bottleneck's input projection
    key_query_shared_bottleneck   queries and keys from a second projection of their own, values from H
    num_feedforward_networks      F stacked feed-forward networks per block (Sect. 3.3)
    normalization_type            "no_norm" (NoNorm(h) = γ ∘ h + β, Sect. 3.5) or "layer_norm"
    classifier_activation         the pooler's tanh layer (false: the [CLS] state itself)

Defaults: transformers' (MobileBERT, Table 1: L = 24, H = 512, B = 128, A = 4, F = 4, intermediate 512, ReLU,
NoNorm, E = 128 with the trigram projection).
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig

NORMALIZATIONS = ("no_norm", "layer_norm")


@dataclass
class MobileBertConfig(BertConfig):
    """MobileBERT's hyper-parameters (defaults: MobileBERT as released)."""

    model_type: str = "mobilebert"
    hidden_size: int = 512
    num_hidden_layers: int = 24
    num_attention_heads: int = 4
    intermediate_size: int = 512
    hidden_act: str = "relu"
    hidden_dropout_prob: float = 0.0
    embedding_size: int = 128
    trigram_input: bool = True
    use_bottleneck: bool = True
    intra_bottleneck_size: int = 128
    use_bottleneck_attention: bool = False
    key_query_shared_bottleneck: bool = True
    num_feedforward_networks: int = 4
    normalization_type: str = "no_norm"
    classifier_activation: bool = True

    @property
    def true_hidden_size(self) -> int:
        """The width inside a block: the bottleneck's B, else H."""
        return self.intra_bottleneck_size if self.use_bottleneck else self.hidden_size

    @property
    def attention_size(self) -> int:
        return self.true_hidden_size

    def validate(self) -> None:
        super().validate()
        for name in ("embedding_size", "intra_bottleneck_size", "num_feedforward_networks"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.embedding_size > self.hidden_size:
            raise ConfigError(
                f"embedding_size: at most hidden_size {self.hidden_size} (the MLM decoder's width)"
            )
        if self.normalization_type not in NORMALIZATIONS:
            raise ConfigError(
                f"normalization_type: expected one of {NORMALIZATIONS}, got {self.normalization_type!r}"
            )
        shared = self.use_bottleneck_attention or self.key_query_shared_bottleneck
        if self.use_bottleneck and not shared and self.intra_bottleneck_size != self.hidden_size:
            raise ConfigError(
                "use_bottleneck without use_bottleneck_attention or key_query_shared_bottleneck attends over H: "
                f"intra_bottleneck_size must then equal hidden_size {self.hidden_size}"
            )


def mobilebert(**overrides) -> MobileBertConfig:
    """MobileBERT (Table 1): 24 blocks, H = 512, B = 128, 25.3 M parameters."""
    return MobileBertConfig(**overrides)
