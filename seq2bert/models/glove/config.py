"""Configuration of GloVe (Pennington, Socher & Manning 2014), with the names of the paper and its code:
a symmetric window of 10 words weighted 1/d (Sect. 4.2), f(x) = (x / x_max)^α below x_max (Eq. 9:
x_max = 100, α = 3/4), AdaGrad at 0.05 (train.lr)."""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError


@dataclass
class GloVeConfig:
    model_type: str = "glove"
    vocab_size: int = 0  # set from the vocabulary of the text
    vector_size: int = 100
    window: int = 10
    x_max: float = 100.0
    alpha: float = 0.75
    min_count: int = 5
    lowercase: bool = True

    def describe(self) -> str:
        return f"glove ({self.vector_size} dimensions)"

    def validate(self) -> None:
        if self.model_type != "glove":
            raise ConfigError(f"model_type: expected 'glove', got {self.model_type!r}")
        for name in ("vector_size", "window", "min_count"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if not self.x_max > 0 or not self.alpha > 0 or self.vocab_size < 0:
            raise ConfigError("x_max and alpha must be > 0, vocab_size >= 0")

    def __post_init__(self) -> None:
        self.validate()
