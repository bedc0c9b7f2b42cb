"""Configuration of the recurrent language model (Elman 1990; Mikolov et al. 2010; Zaremba et al. 2014).

    cell         "rnn_tanh" (Elman), "rnn_relu", "irnn" (ReLU with W_hh = I, Le et al. 2015), "lstm", "gru"
    vocab_size   from the tokenizer;  embedding_dim E, hidden_size H, num_layers L
    dropout      on the embeddings, between layers and on the last layer's output (Zaremba et al. 2014)
    tie_word_embeddings   the output layer is the input embedding matrix (Press & Wolf 2017; Inan et al.
                 2017): needs E = H

Defaults: a 2-layer LSTM of 512 units with tied 512-dimensional embeddings, small enough for 2 CPU cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seq2bert.errors import ConfigError

CELLS = ("rnn_tanh", "rnn_relu", "irnn", "lstm", "gru")


@dataclass
class RNNLMConfig:
    model_type: str = "rnn-lm"
    cell: str = "lstm"
    vocab_size: int = 0
    embedding_dim: int = 512
    hidden_size: int = 512
    num_layers: int = 2
    dropout: float = 0.2
    tie_word_embeddings: bool = True
    init_range: float = 0.1  # weights uniform in ±init_range (Zaremba et al. 2014 use 0.05 / 0.04)
    pad_token_id: int = 0
    eos_token_id: int = 0  # the separator between documents in the token stream

    # how `seq2bert train-lm` trains it (recipes/lm.py): 16,000 BPE pieces, one left-to-right LM
    lm_vocabulary: ClassVar[tuple[str, int]] = ("bpe", 16_000)
    bidirectional: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.cell} LM ({self.num_layers}×{self.hidden_size})"

    def validate(self) -> None:
        expected = type(self).__dataclass_fields__["model_type"].default
        if self.model_type != expected:
            raise ConfigError(f"model_type: expected {expected!r}, got {self.model_type!r}")
        if self.cell not in CELLS:
            raise ConfigError(f"cell: expected one of {', '.join(CELLS)}, got {self.cell!r}")
        for name in ("embedding_dim", "hidden_size", "num_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.vocab_size < 0 or not 0.0 <= self.dropout < 1.0 or self.init_range < 0:
            raise ConfigError("vocab_size must be >= 0, dropout in [0, 1) and init_range >= 0")
        if self.tie_word_embeddings and self.embedding_dim != self.hidden_size:
            raise ConfigError(
                f"tie_word_embeddings: the output layer is the embedding matrix, so embedding_dim "
                f"({self.embedding_dim}) must equal hidden_size ({self.hidden_size})"
            )

    def __post_init__(self) -> None:
        self.validate()
