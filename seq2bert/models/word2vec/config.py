"""Configuration of word2vec (Mikolov et al. 2013a, b) and of what fastText adds to it (Bojanowski et al. 2017),
with gensim's field names (``vector_size``, ``window``, ``negative``, ``sample``, ``ns_exponent``,
``min_count``, ``min_n``, ``max_n``, ``bucket``) — the implementation most users know.

Defaults are word2vec.c's and gensim's: 100 dimensions, a window of 5, 5 noise words, subsampling at 10^-3,
words seen 5 times. The learning rate and its linear decay to zero are the training section's (train.lr:
0.025 for skip-gram, 0.05 for CBOW, as word2vec.c).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from seq2bert.errors import ConfigError

ARCHITECTURES = ("skipgram", "cbow")


@dataclass
class Word2VecConfig:
    model_type: str = "word2vec"
    architecture: Literal["skipgram", "cbow"] = "skipgram"
    vocab_size: int = 0  # set from the vocabulary of the text
    vector_size: int = 100
    window: int = 5  # the largest window; each position reads R ∈ 1 … window words on each side
    negative: int = 5  # k noise words per pair
    ns_exponent: float = 0.75  # P_n(w) ∝ count(w)^{3/4}
    sample: float = 1e-3  # subsampling threshold t (0: off)
    min_count: int = 5
    lowercase: bool = True

    def describe(self) -> str:
        return f"{self.model_type} {self.architecture} ({self.vector_size} dimensions)"

    def validate(self) -> None:
        expected = type(self).__dataclass_fields__["model_type"].default
        if self.model_type != expected:
            raise ConfigError(f"model_type: expected {expected!r}, got {self.model_type!r}")
        if self.architecture not in ARCHITECTURES:
            raise ConfigError(f"architecture: expected skipgram or cbow, got {self.architecture!r}")
        for name in ("vector_size", "window", "negative", "min_count"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.vocab_size < 0 or self.sample < 0 or self.ns_exponent < 0:
            raise ConfigError("vocab_size, sample and ns_exponent must be >= 0")

    def __post_init__(self) -> None:
        self.validate()
