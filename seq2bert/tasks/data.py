"""The data section of a fine-tuning (or task distillation) run — which task, its folder, lengths, windows and
thresholds — and the task's examples it reads: train and dev, subsets of them, every one labelled."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seq2bert.data.paths import require_folder
from seq2bert.errors import ConfigError, DataError
from seq2bert.tasks import registry
from seq2bert.tasks.task import Task


@dataclass
class FinetuneDataConfig:
    task: str = "sst2"  # a name of the task registry (tasks/registry.py), a plugin's included
    path: str = ""  # the task's folder (GLUE TSVs, CoNLL train.txt / valid.txt, SQuAD JSON, SWAG CSV)
    # a generic task (text-classification, …, tasks/files.py) reads a user's files instead of a folder:
    train: str = ""  # the training file (CSV, TSV, JSON Lines, Parquet; CoNLL columns; SQuAD JSON)
    valid: str = ""  # the validation file: scored at every evaluation, the best checkpoint's
    test: str = ""  # optional: predicted (and scored when labelled) once, by the best checkpoint
    format: str = ""  # csv | tsv | jsonl | parquet | conll | squad; "": the files' extensions say
    text_column: str = "text"
    pair_column: str = ""  # the second text of a pair ("": single texts)
    label_column: str = "label"  # token classification's CoNLL files: a column number (default: the last)
    choice_columns: list[str] = field(default_factory=list)  # multiple choice: one column per choice
    labels: list[str] = field(default_factory=list)  # the label names in order (empty: found in train)
    label_separator: str = ""  # multi-label: labels in one text cell, split at this ("": a list column)
    tag_scheme: str = ""  # token classification: IOB1 | IOB2 | IOBES | none ("": detected from train)
    max_seq_length: int = 0  # 0: the task's default (128; CoNLL 256; SQuAD 384)
    doc_stride: int = 128  # SQuAD: tokens between the starts of two windows of one context
    max_query_length: int = 64
    batch_size: int = 32
    max_train_examples: int = 0  # 0: all (a seeded random subset otherwise, to fit a time budget)
    max_eval_examples: int = 0  # 0: all (the first ones otherwise)
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0

    def validate(self) -> None:
        registry.get(self.task)
        for name in ("batch_size", "doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
            if getattr(self, name) < 1:
                raise ConfigError(f"data.{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("max_seq_length", "max_train_examples", "max_eval_examples"):
            if getattr(self, name) < 0:
                raise ConfigError(f"data.{name}: must be >= 0, got {getattr(self, name)}")
        if self.spec.user_files:
            if self.path:
                raise ConfigError(
                    f"data.path: the task {self.task} reads your files: give --train FILE --valid FILE "
                    "(data.train, data.valid), not --data"
                )
        else:
            for name in ("train", "valid", "test"):
                if getattr(self, name):
                    raise ConfigError(
                        f"data.{name}: the task {self.task} reads its folder (--data); --train / --valid / "
                        "--test are for the tasks over your own files (text-classification, …)"
                    )

    def __post_init__(self) -> None:
        self.validate()

    @property
    def spec(self) -> Task:
        """The task's record."""
        return registry.get(self.task)

    @property
    def kind(self) -> str:
        """The head the task needs ("sequence", "tokens", "qa", "choice")."""
        return self.spec.head

    @property
    def seq_length(self) -> int:
        return self.max_seq_length or self.spec.max_seq_length


def read_task(data: FinetuneDataConfig, splits: tuple[str, ...] = ()) -> dict[str, list]:
    """{"train": examples, "dev": examples} of the task's folder (``splits``: only these); for a task over
    the user's files, of data.train and data.valid (and "test", of data.test, when given)."""
    if data.spec.user_files:
        return read_user_files(data, splits)
    if not data.path:
        raise DataError(f"data.path: empty (give the {data.task} task's data folder with --data)")
    folder = require_folder(
        Path(data.path), "data.path", f"the {data.task} task's data folder, given by --data"
    )
    return data.spec.read(folder, splits)


USER_SPLITS = {"train": "train", "dev": "valid", "test": "test"}  # split → the data key naming its file


def read_user_files(data: FinetuneDataConfig, splits: tuple[str, ...] = ()) -> dict[str, list]:
    """The examples of a generic task's files: its reader is given each file and the data section (its
    columns, labels, format). "dev" (data.valid) is required; "train" when training; "test" when given."""
    wanted = splits or ("train", "dev", "test")
    if "dev" in wanted and not data.valid:
        raise DataError(f"data.valid: empty (give the {data.task} validation file with --valid FILE)")
    out = {}
    for split in wanted:
        name = getattr(data, USER_SPLITS[split])
        if not name:
            continue
        examples = data.spec.reader(Path(name), data)
        if not examples:
            raise DataError(f"{name}: no {data.task} examples (expected the {split} examples)")
        out[split] = examples
    return out


def subset(examples: list, n: int, seed: int | None) -> list:
    """The first n examples (seed None) or n drawn at random, in their original order; n = 0: all."""
    if not n or n >= len(examples):
        return examples
    if seed is None:
        return examples[:n]
    keep = np.sort(np.random.default_rng(seed).choice(len(examples), n, replace=False))
    return [examples[i] for i in keep]


def task_examples(data: FinetuneDataConfig, seed: int) -> tuple[list, list]:
    """The task's training and dev examples (``data``'s subsets of them), every one labelled."""
    splits = read_task(data)
    if "train" not in splits:
        if data.spec.user_files:
            raise DataError(f"data.train: empty (give the {data.task} training file with --train FILE)")
        raise DataError(data.spec.missing(Path(data.path), "train"))
    train, dev = (
        subset(splits["train"], data.max_train_examples, seed),
        subset(splits["dev"], data.max_eval_examples, None),
    )
    for split, examples in (("train", train), ("dev", dev)):
        require_labels(split, examples, data)
    return train, dev


def labelled_dev(data: FinetuneDataConfig) -> list:
    """The task's dev examples (the first ``max_eval_examples``), every one labelled."""
    examples = subset(read_task(data, ("dev",))["dev"], data.max_eval_examples, None)
    require_labels("dev", examples, data)
    return examples


def require_labels(split: str, examples: list, data: FinetuneDataConfig) -> None:
    """Training and dev examples must all carry a label (a GLUE test file, say, has none)."""
    unlabelled = [e for e in examples if getattr(e, "label", 0) is None]
    if unlabelled:
        raise DataError(
            f"{data.path}: {len(unlabelled)} {data.task} {split} example(s) have no label (e.g. id "
            f"{getattr(unlabelled[0], 'id', '?')}); fine-tuning and scoring need labelled train and dev files"
        )
