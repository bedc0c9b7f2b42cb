"""Configuration of ALBERT (Lan et al. 2019, "ALBERT: A Lite BERT for Self-supervised Learning of Language
Representations"): BERT's hyper-parameters (Hugging Face field names, seq2bert/models/bert/config.py) and
the three of its own (Sect. 3.1):

    embedding_size     E, the size of the token embeddings, projected to H (factorised embeddings; E ≪ H)
    num_hidden_groups  G, transformers' groups of shared layers: layer ℓ (0-based) is computed by group
                       ⌊ℓ·G/L⌋; the paper shares across all layers, G = 1
    inner_group_num    k, the layers inside a group, applied one after the other (transformers'; 1 in the paper)

and ``share``, ours (transformers has only the first): what the layers of a group share —
"all" (attention and feed-forward: the paper's ALBERT), "attention" or "ffn" (Table 4's shared-attention and
shared-FFN variants: the one attention, or the one feed-forward network, of every layer; each layer keeps the
rest, LayerNorms included, as the released code keeps them outside both blocks), or "none" (BERT's L layers
of their own, at E ≠ H still). The last three share across all L layers, so they take G = k = 1.

transformers' ``classifier_dropout_prob`` (the dropout before the SOP and task classifiers, 0.1) is our
``classifier_dropout`` (convert.py renames it). ALBERT's defaults are ALBERT-xxlarge's, as transformers':
GELU with the tanh approximation, no dropout (Sect. 4.8: "removing dropout … helps").
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig

SHARING = ("all", "attention", "ffn", "none")


@dataclass
class AlbertConfig(BertConfig):
    """ALBERT's hyper-parameters (defaults: ALBERT-xxlarge, a SentencePiece vocabulary of 30,000 pieces)."""

    model_type: str = "albert"
    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 4096
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    num_attention_heads: int = 64
    intermediate_size: int = 16384
    inner_group_num: int = 1
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    classifier_dropout: float | None = 0.1  # transformers' classifier_dropout_prob
    share: str = "all"

    def validate(self) -> None:
        super().validate()
        for name in ("embedding_size", "num_hidden_groups", "inner_group_num"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.num_hidden_layers % self.num_hidden_groups:
            raise ConfigError(
                f"num_hidden_groups: {self.num_hidden_groups} groups do not divide "
                f"{self.num_hidden_layers} layers equally"
            )
        if self.share not in SHARING:
            raise ConfigError(f"share: expected one of {', '.join(SHARING)}, got {self.share!r}")
        if self.share != "all" and (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise ConfigError(
                f"share={self.share!r} shares across all layers: num_hidden_groups and inner_group_num must be 1"
            )


def _sized(layers: int, hidden: int, **overrides) -> AlbertConfig:
    """Table 1: H/64 heads, a 4H feed-forward, E = 128."""
    return AlbertConfig(
        **{
            "num_hidden_layers": layers,
            "hidden_size": hidden,
            "num_attention_heads": hidden // 64,
            "intermediate_size": 4 * hidden,
            "embedding_size": 128,
            **overrides,
        }
    )


def albert_mini(**overrides) -> AlbertConfig:
    """L = 4, H = 256, E = 128: BERT-mini's shape (Turc et al. 2019) with ALBERT's embeddings and sharing."""
    return _sized(4, 256, **overrides)


def albert_base(**overrides) -> AlbertConfig:
    """L = 12, H = 768, E = 128: 12 M parameters (Table 1)."""
    return _sized(12, 768, **overrides)


def albert_large(**overrides) -> AlbertConfig:
    """L = 24, H = 1024, E = 128: 18 M parameters."""
    return _sized(24, 1024, **overrides)


def albert_xlarge(**overrides) -> AlbertConfig:
    """L = 24, H = 2048, E = 128: 60 M parameters."""
    return _sized(24, 2048, **overrides)


def albert_xxlarge(**overrides) -> AlbertConfig:
    """L = 12, H = 4096, E = 128, 64 heads: 235 M parameters."""
    return _sized(12, 4096, **overrides)
