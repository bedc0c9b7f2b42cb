"""Configuration of the Seq2Seq model of Sutskever, Vinyals & Le (2014)."""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError


@dataclass
class Seq2SeqConfig:
    """Hyper-parameters of the fixed-vector LSTM encoder-decoder.

    The paper's model (Sect. 3.4) is ``sutskever2014()``: 4 layers of 1000 cells, 1000-dimensional word
    embeddings, parameters drawn from U(-0.08, 0.08), reversed source. The defaults here are a smaller
    model that trains on 2 CPU cores; vocabulary sizes and special ids are filled in from the tokenizer.
    """

    model_type: str = "seq2seq"
    src_vocab_size: int = 0
    tgt_vocab_size: int = 0
    embedding_dim: int = 256
    hidden_size: int = 512
    num_layers: int = 4
    dropout: float = 0.2
    reverse_source: bool = True
    init_range: float = 0.08
    pad_token_id: int = 0
    bos_token_id: int = 5
    eos_token_id: int = 6

    def validate(self) -> None:
        if self.model_type != "seq2seq":
            raise ConfigError(f"model_type: expected 'seq2seq', got {self.model_type!r}")
        for name in ("embedding_dim", "hidden_size", "num_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if getattr(self, name) < 0:
                raise ConfigError(
                    f"{name}: must be >= 0 (0 = taken from the tokenizer), got {getattr(self, name)}"
                )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout: must be in [0, 1), got {self.dropout}")
        if self.init_range < 0:
            raise ConfigError(f"init_range: must be >= 0, got {self.init_range}")

    def __post_init__(self) -> None:
        self.validate()


def sutskever2014(**overrides) -> Seq2SeqConfig:
    """The configuration of the paper (Sect. 3.4): 4 layers, 1000 cells, 1000-d embeddings, reversed source."""
    return Seq2SeqConfig(
        **{
            "embedding_dim": 1000,
            "hidden_size": 1000,
            "num_layers": 4,
            "dropout": 0.0,
            "reverse_source": True,
            "init_range": 0.08,
            **overrides,
        }
    )
