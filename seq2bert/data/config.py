"""Configuration of the data for sequence-to-sequence tasks: a built-in synthetic task or parallel text files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2bert.data.paths import MISSING, kind_of
from seq2bert.errors import ConfigError

SYNTHETIC_TASKS = ("copy", "reverse", "sort", "lang")
TOKENIZER_KINDS = ("auto", "bpe", "wordpiece", "word")


@dataclass
class DataConfig:
    """Where the pairs come from, how they are tokenized and how they are batched.

    ``task`` is a built-in synthetic task (copy, reverse, sort, lang — no download) or ``files``: parallel
    text given as ``train_src``/``train_tgt`` (two aligned files, plain or .gz) or ``train_src`` alone (a TSV).
    ``tokenizer`` is a kind to train on the training data (auto = word for synthetic tasks, bpe for files)
    or the path of an existing tokenizer.json / vocab.txt.
    """

    task: str = "lang"
    num_train: int = 20000
    num_valid: int = 500
    num_test: int = 500
    min_len: int = 3
    max_len: int = 12
    num_symbols: int = 20
    data_seed: int = 1234
    train_src: str = ""
    train_tgt: str = ""
    valid_src: str = ""
    valid_tgt: str = ""
    test_src: str = ""
    test_tgt: str = ""
    skip_bad: bool = False
    max_chars: int = 1000
    tokenizer: str = "auto"
    vocab_size: int = 8000
    min_frequency: int = 2
    lowercase: bool = False
    max_tokens: int = 4096
    batch_size: int = 0
    max_length: int = 100

    def validate(self) -> None:
        if self.task not in (*SYNTHETIC_TASKS, "files"):
            raise ConfigError(
                f"task: expected one of {', '.join(SYNTHETIC_TASKS)} or files, got {self.task!r}"
            )
        if self.task == "files":
            if not self.train_src:
                raise ConfigError("train_src: task 'files' needs train_src (and train_tgt, unless a TSV)")
            for split in ("valid", "test"):
                if getattr(self, f"{split}_tgt") and not getattr(self, f"{split}_src"):
                    raise ConfigError(f"{split}_src: {split}_tgt is set but {split}_src is not")
        else:
            for name in ("num_train", "num_valid", "num_test", "min_len", "num_symbols"):
                if getattr(self, name) < 1:
                    raise ConfigError(f"{name}: must be >= 1, got {getattr(self, name)}")
            if self.min_len > self.max_len:
                raise ConfigError(f"min_len: must be <= max_len ({self.max_len}), got {self.min_len}")
        if self.vocab_size < 8:
            raise ConfigError(f"vocab_size: must be >= 8, got {self.vocab_size}")
        if self.max_tokens < 0 or self.batch_size < 0:
            raise ConfigError("max_tokens and batch_size must be >= 0")
        if self.max_tokens == 0 and self.batch_size == 0:
            raise ConfigError("max_tokens: max_tokens and batch_size are both 0; set at least one")
        if self.max_length < 1 or self.max_chars < 1:
            raise ConfigError("max_length and max_chars must be >= 1")

    def __post_init__(self) -> None:
        self.validate()

    def check_files(self) -> None:
        """The data files exist (checked before a run starts; not when a finished run's config is read back)."""
        if self.tokenizer not in TOKENIZER_KINDS and not Path(self.tokenizer).exists():
            raise ConfigError(
                f"data.tokenizer: expected one of {', '.join(TOKENIZER_KINDS)} or the path of a tokenizer.json / "
                f"vocab.txt, got {self.tokenizer!r} (no such file)"
            )
        if self.task != "files":
            return
        for name in ("train_src", "train_tgt", "valid_src", "valid_tgt", "test_src", "test_tgt"):
            value = getattr(self, name)
            if value and not Path(value).is_file():
                found = kind_of(Path(value))
                if found == MISSING:
                    raise ConfigError(f"data.{name}: no such file: {value}")
                raise ConfigError(f"data.{name}: {value} is {found} (expected a text file, plain or gzip)")

    @property
    def tokenizer_kind(self) -> str:
        if self.tokenizer == "auto":
            return "word" if self.task in SYNTHETIC_TASKS else "bpe"
        return self.tokenizer
