"""What a fine-tuning task tells the rest of seq2bert about itself: one ``Task`` record per task name
(seq2bert/tasks/registry.py lists them), as a ``Family`` record tells about a model family.

Fine-tuning, evaluation and distillation ask the task, never its name or its shape:

    head            the head it needs of a family ("sequence", "tokens", "qa", "choice"), which the family maps
                    to its architecture (``Family.heads``: BERT's "sequence" is BertForSequenceClassification);
                    "embedding": no head, the encoder pooled (a bi-encoder, recipes/sentence_embedding.py)
    max_seq_length  the default length of its inputs, in tokens
    files, reader   how its examples are read from its folder: per split ("train", "dev") the file names to
                    look for, in order (glob patterns), and the reader of one file (data/glue.py, conll.py,
                    squad.py, swag.py, or a plugin's own)
    labels          its label names, index = class id: a fixed tuple, a function of the examples that finds
                    them (CoNLL's tags), or None (no label names: SQuAD's spans, SWAG's choices)
    problem_type    "single_label_classification" (predictions are class ids, written by name), "regression"
                    (one output, "score"), "multi_label_classification" (a set of classes per example, σ
                    and a threshold on each output: predictions have ``ids`` and ``scores``), or None
    encode          (task, examples, tokenizer, label2id, settings, progress=, words=) → features
                    (data/finetuning.py, data/qa.py); ``collate`` pads a batch of them
    decode          (task, raw outputs, examples, features, id2label, settings) → one prediction per example
    metrics         (examples, predictions) → scores in % (evaluation/tasks.py); ``main_metric`` picks the best
                    checkpoint: a name, or a function of the settings giving it (``main_metric_for``: token
                    classification's is entity F1, or token accuracy for tags of no scheme)
    gold            an example's answer, as predictions are given; ``write_extra``: files written beside
                    predictions.jsonl (SQuAD's predictions.json, for the official scripts)
    texts           the texts of an example (a tokenizer trained from scratch is trained on them)
    decoder_shape   GPT-1's input transformation of the task for a decoder (data/gpt_finetuning.py:
                    "classification", "entailment", "similarity", "choice"; "tokens": tagging, the words as
                    running text); None: no decoder fine-tunes on it
    augmentable     whether TinyBERT's augmentation applies (its examples are sentences or pairs)
    extra_dev       another task scored on the same folder after training when its dev file is there (MNLI's
                    mismatched dev set beside the matched one)
    user_files      the task reads a user's files (data.train, data.valid, data.test; tasks/files.py's generic
                    tasks) rather than a folder: its ``reader`` is then (path, settings) → examples, the
                    settings giving the columns, labels and format
    find_labels     a task over a user's files whose classes are found in its training file: (path, settings)
                    → the label names, sorted (None: no classes to find, or a fixed tuple)

``settings`` is the run's data section (tasks/data.py ``FinetuneDataConfig``): its lengths, windows and
thresholds. A task is built from one of four shape-generic behaviours with its own data (tasks/shapes.py);
a task of your own is ``register(...)``-ed by a plugin module (docs/architecture.md, "add a task").

Floor: tasks/ reads data (the readers and encoders) and evaluation (the metrics) and knows no model class, so
it stands on the evaluation floor, beside it: training, recipes, pipelines and commands read it; it imports
none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2bert import config as config_io
from seq2bert.data import finetuning
from seq2bert.data import gpt_finetuning as gpt
from seq2bert.errors import DataError

HEADS = ("sequence", "tokens", "qa", "choice", "embedding")
PROBLEM_TYPES = ("single_label_classification", "regression", "multi_label_classification", None)
Feature = dict[str, Any]


def _label(example: Any) -> Any:
    return example.label


@dataclass(frozen=True)
class ExtraDev:
    """Another task scored after training on the same folder, when its dev file is there: its metrics as
    ``dev_{key}_*`` in results.json, its predictions in ``predictions``."""

    task: str
    key: str
    predictions: str


@dataclass(frozen=True)
class Task:
    name: str
    head: str
    files: dict[str, tuple[str, ...]]
    reader: Callable[[Path], list]
    encode: Callable[..., list[Feature]]
    decode: Callable[..., list]
    metrics: Callable[[list, list], dict[str, float]]
    main_metric: str | Callable[[Any], str]
    texts: Callable[[Any], Iterable[str]]
    max_seq_length: int = 128
    labels: tuple[str, ...] | Callable[[list], Sequence[str]] | None = None
    problem_type: str | None = None
    gold: Callable[[Any], Any] = _label
    collate: Callable[[Sequence[Feature], int], dict] = finetuning.collate
    write_extra: Callable[[Path, list, list], None] | None = None
    decoder_shape: str | None = None
    augmentable: bool = False
    extra_dev: ExtraDev | None = None
    user_files: bool = False
    find_labels: Callable[[Path, Any], list[str]] | None = None

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"task {self.name}: head must be one of {HEADS}, got {self.head!r}")
        if self.problem_type not in PROBLEM_TYPES:
            raise ValueError(f"task {self.name}: problem_type must be one of {PROBLEM_TYPES}")
        if "dev" not in self.files and not self.user_files:
            raise ValueError(f"task {self.name}: files must name its dev file (and its train file)")
        if self.decoder_shape is not None and self.decoder_shape not in gpt.SHAPES:
            raise ValueError(f"task {self.name}: decoder_shape must be one of {gpt.SHAPES}")

    # --- 1. its examples
    def find(self, folder: Path, split: str) -> Path | None:
        """The first file of ``folder`` matching one of the split's patterns, tried in order."""
        for pattern in self.files.get(split, ()):
            found = sorted(Path(folder).glob(pattern))
            if found:
                return found[0]
        return None

    def read(self, folder: Path, splits: Sequence[str] = ()) -> dict[str, list]:
        """{"train": examples, "dev": examples} of the task's folder ("train" only when its file is there);
        ``splits``: only these (all by default). A file without examples is a DataError naming it."""
        files = {split: self.find(folder, split) for split in splits or self.files}
        if "dev" in files and files["dev"] is None:
            raise DataError(self.missing(folder, "dev"))
        splits = {split: self.reader(path) for split, path in files.items() if path is not None}
        for split, examples in splits.items():
            if not examples:
                raise DataError(f"{files[split]}: no {self.name} examples (expected the {split} examples)")
        return splits

    def missing(self, folder: Path, split: str) -> str:
        """The one-line message of a folder without the split's file: the names looked for, what is there."""
        present = sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith("."))
        shown = ", ".join(present[:8]) + (", …" if len(present) > 8 else "") if present else "nothing"
        names = " or ".join(self.files.get(split, ())) or f"a file the task {self.name} does not name"
        return f"{folder}: no {self.name} {split} file (expected {names}; the folder holds {shown})"

    def id2label(self, examples: list, settings: Any = None) -> dict[int, str] | None:
        """The label names of a model for the task (None: the checkpoint's own); names found in the examples
        (train and dev: a tag seen only in dev is then a label the model never predicts rather than a crash);
        of a task whose labels are found in its training file, the run's (``settings.labels``)."""
        if self.find_labels is not None and settings is not None and settings.labels:
            return dict(enumerate(settings.labels))
        if self.labels is None:
            return None
        labels = self.labels if isinstance(self.labels, tuple) else self.labels(examples)
        return dict(enumerate(labels))

    def main_metric_for(self, settings) -> str:
        """The metric that picks the best checkpoint, for a run of these ``settings``."""
        return self.main_metric if isinstance(self.main_metric, str) else self.main_metric(settings)

    # --- 2. features
    def features(
        self,
        examples: list,
        tok,
        id2label: dict[int, str] | None,
        settings,
        *,
        progress: bool = False,
        words: bool = False,
        decoder: bool = False,
    ) -> list[Feature]:
        """Features of ``examples`` (QA: several per example); ``words``: with the words of each (a model that
        reads a frozen encoder's features of them); for a ``decoder`` GPT-1's input transformations (a tagging
        task's features are an encoder's: the tokenizer of a decoder adds no token; gpt.collate pads them)."""
        if decoder and self.decoder_shape != "tokens":
            return gpt.encode_task(examples, tok, self.decoder_shape, settings.seq_length)
        label2id = {label: i for i, label in (id2label or {}).items()}
        return self.encode(self, examples, tok, label2id, settings, progress=progress, words=words)

    # --- 3. predictions, scores, and the files they are written to
    def predictions(self, outputs: list, examples: list, features: list, id2label, settings) -> list:
        """One prediction per example of the raw outputs per feature (logits; QA: start and end logits)."""
        return self.decode(self, outputs, examples, features, id2label, settings)

    def written(self, example, prediction, id2label) -> dict:
        """The line of predictions.jsonl of an example: a class id is written by its label name."""
        gold = self.gold(example)
        if self.problem_type == "multi_label_classification":
            names = [id2label[i] for i in range(len(id2label))]
            return {
                "id": example.id,
                "prediction": [names[i] for i in prediction.ids],
                "scores": {name: round(p, 6) for name, p in zip(names, prediction.scores, strict=True)},
                "label": None if gold is None else [names[i] for i in gold],
            }
        if self.problem_type == "single_label_classification":
            prediction = id2label[prediction]
            gold = None if gold is None else id2label[gold]
        return {"id": example.id, "prediction": prediction, "label": gold}

    def write_predictions(self, path: Path, examples: list, predictions: list, id2label) -> None:
        """One JSON line per dev example (id, prediction, label), and the task's own files beside them."""
        lines = [
            json.dumps(self.written(e, p, id2label), ensure_ascii=False)
            for e, p in zip(examples, predictions, strict=True)
        ]
        config_io.atomic_write_text(path, "\n".join(lines) + "\n")
        if self.write_extra is not None:
            self.write_extra(path, examples, predictions)
