"""Configuration of ELECTRA (Clark et al. 2020): BERT's fields (Hugging Face names, models/bert/config.py)
plus the embedding size E — ELECTRA's embeddings are E-dimensional and projected to the hidden size H when
E ≠ H (Appendix A: "we use an embedding size of 128" for ELECTRA-Small, H = 256) — and the multiple-choice
summary fields of transformers' ElectraConfig. Defaults: transformers' (ELECTRA-Small's discriminator).

Named builders: the released discriminators Small, Base and Large (Table 6), and ``generator_config``:
a generator with a fraction of the discriminator's width (Sect. 3.2: "a generator 1/4–1/2 the size of the
discriminator"), its heads and feed-forward scaled alike, its embeddings the discriminator's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig
from seq2bert.nn.feed_forward import ACTIVATIONS


@dataclass
class ElectraConfig(BertConfig):
    """BERT's hyper-parameters with ELECTRA-Small's defaults, and E = embedding_size."""

    model_type: str = "electra"
    embedding_size: int = 128
    hidden_size: int = 256
    num_attention_heads: int = 4
    intermediate_size: int = 1024
    # ElectraForMultipleChoice's summary of each choice: the first token's state, projected (H → H) with
    # summary_activation ("": none), then dropout
    summary_type: str = "first"
    summary_use_proj: bool = True
    summary_activation: str = "gelu"
    summary_last_dropout: float = 0.1

    def validate(self) -> None:
        super().validate()
        if self.embedding_size < 1:
            raise ConfigError(f"embedding_size: must be at least 1, got {self.embedding_size}")
        if self.summary_type != "first":
            raise ConfigError(f"summary_type: only 'first' ([CLS]) is supported, got {self.summary_type!r}")
        if self.summary_activation and self.summary_activation not in ACTIVATIONS:
            raise ConfigError(f"summary_activation: expected one of {', '.join(ACTIVATIONS)} or '' (none)")
        if not 0.0 <= self.summary_last_dropout < 1.0:
            raise ConfigError(f"summary_last_dropout: must be in [0, 1), got {self.summary_last_dropout}")


def electra_small(**overrides) -> ElectraConfig:
    """E = 128, H = 256, L = 12, A = 4 (Table 6)."""
    return ElectraConfig(**overrides)


def electra_base(**overrides) -> ElectraConfig:
    """E = H = 768, L = 12, A = 12."""
    fields = dict(embedding_size=768, hidden_size=768, num_attention_heads=12, intermediate_size=3072)
    return ElectraConfig(**{**fields, **overrides})


def electra_large(**overrides) -> ElectraConfig:
    """E = H = 1024, L = 24, A = 16."""
    fields = dict(
        embedding_size=1024,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    )
    return ElectraConfig(**{**fields, **overrides})


def generator_config(discriminator: ElectraConfig, size: float = 0.25) -> ElectraConfig:
    """The generator of ``discriminator``: ``size`` times its width H, heads A and feed-forward, the same
    depth and embedding size E (the embeddings are shared), at least one head of at least one dimension."""
    if not 0.0 < size <= 1.0:
        raise ConfigError(f"generator size: a fraction in (0, 1], got {size}")
    heads = max(1, round(discriminator.num_attention_heads * size))
    head_dim = max(1, round(discriminator.hidden_size * size / heads))
    return replace(
        discriminator,
        hidden_size=heads * head_dim,
        num_attention_heads=heads,
        intermediate_size=max(1, round(discriminator.intermediate_size * size)),
    )
