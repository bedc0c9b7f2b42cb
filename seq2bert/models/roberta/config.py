"""Configuration of RoBERTa (Liu et al. 2019), with Hugging Face's field names (RobertaConfig, model_type
"roberta"): BERT's fields (models/bert/config.py) with RoBERTa's defaults, plus the ids of <s> and </s>.

RoBERTa-base is BERT-base's shape (L = 12, H = 768, A = 12) over a 50,265-token byte-level BPE (Sect. 4.4),
one token type (no NSP, no segment embeddings to learn: Sect. 4.2), <pad> = 1, and 514 position embeddings —
512 positions past the padding index (model.py: ``RobertaEmbeddings``).
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig


@dataclass
class RobertaConfig(BertConfig):
    """RoBERTa's hyper-parameters (defaults: RoBERTa-base)."""

    model_type: str = "roberta"
    vocab_size: int = 50265
    max_position_embeddings: int = 514
    type_vocab_size: int = 1
    layer_norm_eps: float = 1e-5
    pad_token_id: int = 1
    bos_token_id: int = 0
    eos_token_id: int = 2

    def validate(self) -> None:
        super().validate()
        if self.max_position_embeddings <= self.pad_token_id + 1:
            raise ConfigError(
                f"max_position_embeddings: positions start past pad_token_id {self.pad_token_id}, so it must"
                f" exceed {self.pad_token_id + 1}, got {self.max_position_embeddings}"
            )

    @property
    def max_input_length(self) -> int:
        """The longest input: the positions past the padding index (models/family.max_input_length)."""
        return self.max_position_embeddings - self.pad_token_id - 1


def roberta_base(**overrides) -> RobertaConfig:
    """L = 12, H = 768, A = 12: 125 M parameters (Liu et al. 2019, Sect. 4)."""
    return RobertaConfig(**overrides)


def roberta_large(**overrides) -> RobertaConfig:
    """L = 24, H = 1024, A = 16: 355 M parameters."""
    fields = dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16, intermediate_size=4096)
    return RobertaConfig(**{**fields, **overrides})


def roberta_mini(**overrides) -> RobertaConfig:
    """BERT-mini's shape (L = 4, H = 256, A = 4) with RoBERTa's input layer: what ``seq2bert pretrain`` trains
    with model.model_type=roberta."""
    fields = dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    return RobertaConfig(**{**fields, **overrides})
