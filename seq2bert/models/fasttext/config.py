"""Configuration of fastText (Bojanowski et al. 2017): word2vec's (models/word2vec/config.py) and its
subwords — character n-grams of ``min_n`` … ``max_n`` characters hashed into ``bucket`` rows (Sect. 3.2 and
4.1: n from 3 to 6, K = 2·10^6)."""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.models.word2vec.config import Word2VecConfig


@dataclass
class FastTextConfig(Word2VecConfig):
    model_type: str = "fasttext"
    min_n: int = 3
    max_n: int = 6
    bucket: int = 2_000_000

    def validate(self) -> None:
        super().validate()
        if not 1 <= self.min_n <= self.max_n:
            raise ConfigError(f"min_n, max_n: expected 1 <= min_n <= max_n, got {self.min_n}, {self.max_n}")
        if self.bucket < 1:
            raise ConfigError(f"bucket: must be at least 1, got {self.bucket}")
