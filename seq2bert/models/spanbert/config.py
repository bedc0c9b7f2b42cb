"""SpanBERT's configuration: BERT's (models/bert/config.py) and the size of the SBO's relative position
table. model_type "spanbert" selects the family in `seq2bert pretrain`; its checkpoints say "bert"."""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig, bert_mini


@dataclass
class SpanBertConfig(BertConfig):
    model_type: str = "spanbert"
    # p_1 … p_P of Eq. 2; spans are at most 10 words (Sect. 3.1), so 10 or more; longer ones are clipped
    span_positions: int = 32

    def validate(self) -> None:
        super().validate()
        if self.span_positions < 1:
            raise ConfigError(f"span_positions: must be at least 1, got {self.span_positions}")


def spanbert_mini(**overrides) -> SpanBertConfig:
    """BERT-mini's sizes (L = 4, H = 256)."""
    return SpanBertConfig(**{k: v for k, v in vars(bert_mini()).items() if k != "model_type"} | overrides)
