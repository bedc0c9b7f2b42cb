"""Reading the GLUE benchmark's TSV files (Wang et al. 2018), the sentence(-pair) tasks BERT is fine-tuned on.

Each task folder of the GLUE download holds ``train.tsv`` and ``dev.tsv`` (``dev_matched.tsv`` and
``dev_mismatched.tsv`` for MNLI): UTF-8, one example per line, fields separated by tabs. The columns
(a header row names them, except for CoLA) and the labels, in class-id order:

    cola  (no header) source, label, judgement, sentence                    0, 1
    sst2  sentence, label                                                   0, 1
    mrpc  Quality, #1 ID, #2 ID, #1 String, #2 String (header after a BOM)  0, 1
    stsb  index, genre, filename, year, old_index, source1, source2,        a score in [0, 5]
          sentence1, sentence2, score
    qqp   id, qid1, qid2, question1, question2, is_duplicate                0, 1
    mnli  index, promptID, pairID, genre, 4 parses, sentence1, sentence2,   entailment, neutral, contradiction
          label1 (… label5 in dev), gold_label
    qnli  index, question, sentence, label                                  entailment, not_entailment
    rte   index, sentence1, sentence2, label                                entailment, not_entailment
    wnli  index, sentence1, sentence2, label                                0, 1

Label ids follow the Hugging Face ``glue`` datasets (mnli: entailment 0, neutral 1, contradiction 2).
Files with a header are read by column name, so the test files (the same header without the label column)
read too, with ``label=None``; CoLA's test file (``index  sentence`` with a header) is not supported.

Fields are split on tabs and nothing else: quote characters are ordinary text (MRPC and MNLI have fields
that open a quote and never close it, which a CSV reader would run into the next line). Only the line
terminator is removed, a UTF-8 byte-order mark at the start of the file is dropped, and empty lines are
skipped. An example whose sentence is empty (or only spaces) is refused, except in QQP, whose GLUE files
hold two (``GlueTask.empty_texts``). Every problem raises a one-line :class:`~seq2bert.errors.DataError`
naming the file and line.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path

from seq2bert.data.parallel import read_lines
from seq2bert.errors import DataError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]


@dataclass
class TextExample:
    """One GLUE example: a sentence or a sentence pair and its label.

    Attributes:
        id: the file's own id column when it has one (``index``, or ``id`` for QQP), else
            ``"{file stem}-{row}"`` with the 0-based data row, e.g. ``"dev-17"``.
        text_a: the first (or only) sentence.
        text_b: the second sentence; None for single-sentence tasks (CoLA, SST-2).
        label: the class id (an index into ``GlueTask.labels``), the score for STS-B, None when the file has
            no label column.
    """

    id: str
    text_a: str
    text_b: str | None
    label: int | float | None


@dataclass(frozen=True)
class GlueTask:
    """What a GLUE task's files look like and how it is scored.

    Attributes:
        name: the short name, e.g. ``"sst2"``.
        labels: the label strings as they appear in the file, index = class id; None for regression (STS-B).
        metrics: the metrics reported for the task (keys of ``seq2bert.evaluation.tasks.glue_metrics``).
        main_metric: the one that picks the best checkpoint. For STS-B this is Pearson's r (GLUE's first
            number); note that BERT's Table 1 reports Spearman's ρ for STS-B — both are computed.
        dev_file: the development file in the task folder.
        text_a, text_b, label_column, id_column: names of the columns holding each field (``text_b`` and
            ``id_column`` None when the task has none).
        columns: the column names of a file without a header row (CoLA); None when the file names its
            columns in a header row.
        empty_texts: whether an example with an empty (or blank) text is read — kept, counted and warned
            once — rather than refused: QQP's, whose GLUE train.tsv holds two pairs with an empty question2
            (ids 310137 and 362246), which BERT trained on and the Hugging Face datasets keep.
    """

    name: str
    labels: tuple[str, ...] | None
    metrics: tuple[str, ...]
    main_metric: str
    dev_file: str
    text_a: str
    text_b: str | None
    label_column: str
    id_column: str | None = None
    columns: tuple[str, ...] | None = None
    empty_texts: bool = False

    @property
    def num_labels(self) -> int:
        """Outputs of a classifier for this task: the number of classes, 1 for regression."""
        return 1 if self.labels is None else len(self.labels)

    @property
    def is_regression(self) -> bool:
        return self.labels is None


_BINARY = ("0", "1")
_NLI2 = ("entailment", "not_entailment")
_MNLI = ("entailment", "neutral", "contradiction")
_ACC, _ACC_F1, _CORR = ("accuracy",), ("accuracy", "f1"), ("pearson", "spearman")

# fmt: off
GLUE_TASKS: dict[str, GlueTask] = {
    "cola": GlueTask(name="cola", labels=_BINARY, metrics=("matthews",), main_metric="matthews",
                     dev_file="dev.tsv", text_a="sentence", text_b=None, label_column="label",
                     columns=("source", "label", "judgement", "sentence")),
    "sst2": GlueTask(name="sst2", labels=_BINARY, metrics=_ACC, main_metric="accuracy",
                     dev_file="dev.tsv", text_a="sentence", text_b=None, label_column="label",
                     id_column="index"),
    "mrpc": GlueTask(name="mrpc", labels=_BINARY, metrics=_ACC_F1, main_metric="f1",
                     dev_file="dev.tsv", text_a="#1 String", text_b="#2 String", label_column="Quality",
                     id_column="index"),
    "stsb": GlueTask(name="stsb", labels=None, metrics=_CORR, main_metric="pearson",
                     dev_file="dev.tsv", text_a="sentence1", text_b="sentence2", label_column="score",
                     id_column="index"),
    "qqp":  GlueTask(name="qqp", labels=_BINARY, metrics=_ACC_F1, main_metric="f1",
                     dev_file="dev.tsv", text_a="question1", text_b="question2", label_column="is_duplicate",
                     id_column="id", empty_texts=True),
    "mnli": GlueTask(name="mnli", labels=_MNLI, metrics=_ACC, main_metric="accuracy",
                     dev_file="dev_matched.tsv", text_a="sentence1", text_b="sentence2",
                     label_column="gold_label", id_column="index"),
    # MNLI's second dev set, of genres absent from training (BERT reports MNLI-m and MNLI-mm): the same
    # files, labels and columns; fine-tuning on mnli scores it too when dev_mismatched.tsv is there
    "mnli_mismatched": GlueTask(name="mnli_mismatched", labels=_MNLI, metrics=_ACC, main_metric="accuracy",
                     dev_file="dev_mismatched.tsv", text_a="sentence1", text_b="sentence2",
                     label_column="gold_label", id_column="index"),
    "qnli": GlueTask(name="qnli", labels=_NLI2, metrics=_ACC, main_metric="accuracy",
                     dev_file="dev.tsv", text_a="question", text_b="sentence", label_column="label",
                     id_column="index"),
    "rte":  GlueTask(name="rte", labels=_NLI2, metrics=_ACC, main_metric="accuracy",
                     dev_file="dev.tsv", text_a="sentence1", text_b="sentence2", label_column="label",
                     id_column="index"),
    "wnli": GlueTask(name="wnli", labels=_BINARY, metrics=_ACC, main_metric="accuracy",
                     dev_file="dev.tsv", text_a="sentence1", text_b="sentence2", label_column="label",
                     id_column="index"),
}
# fmt: on


def get_glue_task(task: str | GlueTask) -> GlueTask:
    """The task itself, or the one named (``"sst2"``, ``"SST-2"`` and ``"sst-2"`` all work)."""
    if isinstance(task, GlueTask):
        return task
    key = task.lower().replace("-", "")
    if key not in GLUE_TASKS:
        raise DataError(f"unknown GLUE task {task!r} (expected one of {', '.join(GLUE_TASKS)})")
    return GLUE_TASKS[key]


def read_glue(task: str | GlueTask, path: PathLike) -> list[TextExample]:
    """Read one GLUE TSV file (train, dev or test) of ``task``.

    Raises:
        DataError: a missing file, invalid UTF-8, a header without the task's columns, a row with the wrong
            number of columns, or an unknown label; the message names the file and line.
    """
    spec = get_glue_task(task)
    path = Path(path)
    lines = read_lines(path)
    first = 0
    if spec.columns is None:
        first = _first_nonempty(lines)
        if first == len(lines):
            raise DataError(f"{path}: empty file (expected a header row naming the {spec.name} columns)")
        columns = tuple(lines[first].split("\t"))
        first += 1
    else:
        columns = spec.columns
    where = _column_positions(spec, columns, path, first)
    expected = f"expected {len(columns)} tab-separated columns ({', '.join(columns)})"

    examples: list[TextExample] = []
    empty: list[int] = []  # lines with an empty text, which spec.empty_texts lets through
    for index, line in enumerate(lines[first:], start=first):
        if not line:
            continue
        lineno = index + 1
        fields = line.split("\t")
        if len(fields) != len(columns):
            raise DataError(f"{path}:{lineno}: {expected}, got {len(fields)}")
        id_ = fields[where["id"]] if "id" in where else f"{_stem(path)}-{len(examples)}"
        text_a = fields[where["text_a"]]
        text_b = fields[where["text_b"]] if "text_b" in where else None
        if not text_a.strip() or (text_b is not None and not text_b.strip()):
            if not spec.empty_texts:
                column = spec.text_a if not text_a.strip() else spec.text_b
                raise DataError(f"{path}:{lineno}: empty {column!r} (expected a sentence)")
            empty.append(lineno)
        label = _parse_label(spec, fields[where["label"]], path, lineno) if "label" in where else None
        examples.append(TextExample(id=id_, text_a=text_a, text_b=text_b, label=label))
    if empty:
        logger.warning(
            "%s: %d %s example(s) with an empty text, kept as the GLUE data has them (lines %s)",
            path,
            len(empty),
            spec.name,
            ", ".join(map(str, empty[:5])) + (", …" if len(empty) > 5 else ""),
        )
    logger.info("read %d %s examples from %s", len(examples), spec.name, path)
    return examples


def read_glue_dir(task: str | GlueTask, directory: PathLike) -> dict[str, list[TextExample]]:
    """Read the splits of one GLUE task folder: ``{"train": …, "dev": …}``, whichever of the two exist.

    The dev split is ``GlueTask.dev_file`` (``dev_matched.tsv`` for MNLI, ``dev_mismatched.tsv`` for the
    task ``mnli_mismatched``).

    Raises:
        DataError: the folder is absent or holds neither file; or a file is malformed.
    """
    spec = get_glue_task(task)
    folder = Path(directory)
    if not folder.is_dir():
        raise DataError(f"no such directory: {folder} (expected the GLUE {spec.name} folder)")
    files = {"train": folder / "train.tsv", "dev": folder / spec.dev_file}
    splits = {split: read_glue(spec, path) for split, path in files.items() if path.is_file()}
    if not splits:
        looked_for = " or ".join(str(p) for p in files.values())
        raise DataError(f"no {spec.name} data in {folder}: looked for {looked_for}")
    return splits


# ---------------------------------------------------------------------------------------------------------
# Helpers


def _first_nonempty(lines: list[str]) -> int:
    return next((i for i, line in enumerate(lines) if line), len(lines))


def _column_positions(
    spec: GlueTask, columns: tuple[str, ...], path: Path, header_line: int
) -> dict[str, int]:
    """Where each field sits: {"text_a": 3, "text_b": 4, "label": 0, …}; optional fields only when present."""
    wanted = {"text_a": spec.text_a, "text_b": spec.text_b, "label": spec.label_column, "id": spec.id_column}
    where = {
        field: columns.index(name) for field, name in wanted.items() if name is not None and name in columns
    }
    for field in ("text_a", "text_b"):
        if wanted[field] is not None and field not in where:
            raise DataError(
                f"{path}:{header_line}: the header has no column {wanted[field]!r} "
                f"(found: {', '.join(columns)}); is this a {spec.name} file?"
            )
    return where


def _parse_label(spec: GlueTask, value: str, path: Path, lineno: int) -> int | float:
    if spec.labels is not None:
        if value not in spec.labels:
            raise DataError(f"{path}:{lineno}: label {value!r} is not one of {', '.join(spec.labels)}")
        return spec.labels.index(value)
    try:
        score = float(value)
    except ValueError:
        score = math.nan
    if not 0.0 <= score <= 5.0:  # also rejects nan
        raise DataError(f"{path}:{lineno}: score {value!r} is not a number from 0 to 5")
    return score


def _stem(path: Path) -> str:
    """``dev.tsv`` → ``dev``, ``train.tsv.gz`` → ``train``."""
    return path.name.split(".")[0]
