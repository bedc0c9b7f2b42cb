"""Configurations of the recurrent encoder-decoders: the fields they share, Sutskever's Seq2Seq and Cho's GRU
encoder-decoder. The attention models (models/attention/config.py) extend the same base."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from seq2bert.errors import ConfigError


@dataclass
class RecurrentConfig:
    """What every recurrent encoder-decoder of seq2bert has: vocabularies, sizes, dropout, special ids.

    Vocabulary sizes and special ids are filled in from the tokenizer (0 = not set yet). ``model_type`` names
    the model in the registry (models/__init__.py); each subclass gives it its own default.
    """

    model_type: str = ""
    src_vocab_size: int = 0
    tgt_vocab_size: int = 0
    embedding_dim: int = 256
    hidden_size: int = 512
    num_layers: int = 1
    dropout: float = 0.2
    pad_token_id: int = 0
    bos_token_id: int = 5
    eos_token_id: int = 6

    def validate(self) -> None:
        expected = type(self).__dataclass_fields__["model_type"].default
        if self.model_type != expected:
            raise ConfigError(f"model_type: expected {expected!r}, got {self.model_type!r}")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith(("_dim", "_size", "_layers")) and f.name not in (
                "src_vocab_size",
                "tgt_vocab_size",
            ):
                if value < 1:
                    raise ConfigError(f"{f.name}: must be at least 1, got {value}")
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if getattr(self, name) < 0:
                raise ConfigError(
                    f"{name}: must be >= 0 (0 = taken from the tokenizer), got {getattr(self, name)}"
                )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout: must be in [0, 1), got {self.dropout}")

    def check_vocab(self) -> None:
        """Models call this: vocabulary sizes must have been filled in from the tokenizer."""
        if self.src_vocab_size < 1 or self.tgt_vocab_size < 1:
            raise ValueError(
                f"{type(self).__name__}: src_vocab_size and tgt_vocab_size must be set (from the tokenizer)"
            )

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class Seq2SeqConfig(RecurrentConfig):
    """Hyper-parameters of the fixed-vector LSTM encoder-decoder of Sutskever, Vinyals & Le (2014).

    The paper's model (Sect. 3.4) is ``sutskever2014()``: 4 layers of 1000 cells, 1000-dimensional word
    embeddings, parameters drawn from U(-0.08, 0.08), reversed source. The defaults here are a smaller
    model that trains on 2 CPU cores.
    """

    model_type: str = "seq2seq"
    num_layers: int = 4
    reverse_source: bool = True
    init_range: float = 0.08

    def validate(self) -> None:
        super().validate()
        if self.init_range < 0:
            raise ConfigError(f"init_range: must be >= 0, got {self.init_range}")


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


@dataclass
class ChoConfig(RecurrentConfig):
    """The RNN encoder-decoder of Cho et al. (2014): GRU encoder → context c → GRU decoder fed c at every step.

    ``maxout_size`` is the width of the maxout deep output (the paper: 1000 hidden units, 500 maxout units,
    100-d embeddings — ``cho2014()``).
    """

    model_type: str = "cho"
    maxout_size: int = 256


def cho2014(**overrides) -> ChoConfig:
    """The configuration of the paper (Sect. 4.1 / Appendix A): 1000 hidden units, 100-d embeddings, 500 maxout."""
    return ChoConfig(
        **{
            "embedding_dim": 100,
            "hidden_size": 1000,
            "num_layers": 1,
            "maxout_size": 500,
            "dropout": 0.0,
            **overrides,
        }
    )
