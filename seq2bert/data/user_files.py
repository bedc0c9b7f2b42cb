"""The examples of the generic fine-tuning tasks (tasks/files.py), read from a user's own tables — CSV, TSV,
JSON Lines, Parquet (data/tables.py) — by the columns the run names:

    text-classification   --text-column          --label-column (a class)    → TextExample, label: class id
    text-pair             --text-column --pair-column  --label-column         → TextExample, label: class id
    regression            --text-column [--pair-column] --label-column (a number) → TextExample, label: float
    multi-label           --text-column [--pair-column] --label-column (a list, or a text split at
                          --label-separator)                                  → TextExample, label: class ids
    multiple-choice       --text-column (the context) [--pair-column (the start of the answer)]
                          --choice-columns A,B,… --label-column (the right choice's index or text)
                                                                              → ChoiceExample

so the shapes of the named tasks (GLUE's sentences and pairs, SWAG's choices) encode, decode and score them.

``settings`` is any object with the data keys (tasks/data.py ``FinetuneDataConfig``: format, text_column,
pair_column, label_column, choice_columns, labels, label_separator, test). The class names are
``settings.labels`` (found in the training file by :func:`find_labels` when not given), index = class id.
An example's id is the file's ``id`` column when it has one, else ``"{file stem}-{row}"`` (0-based, as
data/glue.py names its rows). The test file (``settings.test``) may lack the label column: its examples are
then unlabelled (label None). Every flaw is a one-line DataError naming the file and line: a missing column
(with the columns the file has), an empty text, a label that is no number (regression) or not among the
labels, a choice index out of range.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seq2bert.data.glue import TextExample
from seq2bert.data.swag import ChoiceExample
from seq2bert.data.tables import Row, columns, number_value, require_columns, rows, text_value, value
from seq2bert.errors import DataError

logger = logging.getLogger(__name__)

_INTEGER = re.compile(r"-?\d+")


# --- the columns a task reads
def _wanted(settings: Any, *, pair: bool = True, choices: bool = False) -> dict[str, str | None]:
    """{flag: column} of the columns read (the label's apart: a test file may lack it)."""
    wanted = {"--text-column": settings.text_column}
    if pair:
        wanted["--pair-column"] = settings.pair_column or None
    if choices:
        for column in settings.choice_columns:
            wanted[f"--choice-columns ({column})"] = column
    return wanted


def _table(
    path: Path, settings: Any, wanted: dict[str, str | None]
) -> tuple[Iterator[tuple[str, Row]], bool]:
    """The rows of ``path`` and whether it holds labels, once its columns are checked: those ``wanted`` and
    the label column (which only the test file may lack)."""
    path = Path(path)
    have = columns(path, settings.format or None)
    labelled = settings.label_column in have
    if not labelled and str(path) != str(settings.test or ""):
        wanted = {**wanted, "--label-column": settings.label_column}
    require_columns(path, have, wanted)
    return rows(path, settings.format or None, what=f"a table with the columns {', '.join(have)}"), labelled


def _id(path: Path, row: Row, n: int) -> str:
    found = row.get("id")
    return str(found) if found not in (None, "") else f"{path.name.split('.')[0]}-{n}"


def _texts(where: str, row: Row, settings: Any) -> tuple[str, str | None]:
    text_b = text_value(where, row, settings.pair_column) if settings.pair_column else None
    return text_value(where, row, settings.text_column), text_b


# --- labels
def label_name(where: str, row: Row, column: str) -> str:
    """A class label's name: the cell as text (a JSON number 1 is "1"); empty is a one-line error."""
    found = value(where, row, column)
    if isinstance(found, bool):
        found = str(found).lower()
    if isinstance(found, float) and found.is_integer():
        found = int(found)
    if isinstance(found, list | dict) or found is None:
        raise DataError(f"{where}: column {column!r} holds {found!r}, expected one label")
    name = str(found).strip()
    if not name:
        raise DataError(f"{where}: column {column!r} is empty (expected a label)")
    return name


def label_names(where: str, row: Row, column: str, separator: str) -> list[str]:
    """The labels of one multi-label cell: a list (JSON Lines, Parquet), a JSON list written in a CSV cell,
    or a text split at ``separator``; empty: no label."""
    found = value(where, row, column)
    if isinstance(found, str) and found.strip().startswith("[") and not separator:
        try:
            found = json.loads(found)
        except json.JSONDecodeError as err:
            raise DataError(f"{where}: column {column!r}: not a JSON list ({err.msg})") from None
    if isinstance(found, str):
        if not separator:
            raise DataError(
                f"{where}: column {column!r} holds the text {found!r}: give --label-separator to split it, "
                "or a list column (JSON Lines, Parquet)"
            )
        return [part.strip() for part in found.split(separator) if part.strip()]
    if not isinstance(found, list | tuple) or any(isinstance(x, list | dict) or x is None for x in found):
        raise DataError(f"{where}: column {column!r} holds {found!r}, expected a list of labels")
    return [str(x).strip() for x in found if str(x).strip()]


def sorted_labels(names: set[str]) -> list[str]:
    """Label names in a stable order: numerically when every one is an integer ("2" before "10"), else as
    text."""
    if names and all(_INTEGER.fullmatch(n) for n in names):
        return sorted(names, key=int)
    return sorted(names)


def find_labels(path: Path, settings: Any, *, multi: bool = False) -> list[str]:
    """The class names of a training file's label column (multi-label: of its lists), sorted."""
    found: set[str] = set()
    table, _ = _table(path, settings, {})
    for where, row in table:
        if multi:
            found.update(label_names(where, row, settings.label_column, settings.label_separator))
        else:
            found.add(label_name(where, row, settings.label_column))
    if not found:
        raise DataError(f"{path}: no labels in column {settings.label_column!r}")
    return sorted_labels(found)


def _class_id(where: str, name: str, settings: Any) -> int:
    if name not in settings.labels:
        shown = ", ".join(settings.labels[:10]) + (", …" if len(settings.labels) > 10 else "")
        raise DataError(
            f"{where}: label {name!r} is not one of the run's labels ({shown}): unseen in the training file "
            "(or not in --labels)"
        )
    return settings.labels.index(name)


# --- readers, (path, settings) → examples
def read_texts(path: Path, settings: Any, *, pair: bool = False) -> list[TextExample]:
    """A text (or a pair) and its class: text-classification; text-pair (``pair``: the pair column given)."""
    if pair and not settings.pair_column:
        raise DataError(
            f"{path}: the task text-pair reads two texts: give the second's column (--pair-column)"
        )
    table, labelled = _table(path, settings, _wanted(settings))
    out = []
    for where, row in table:
        text_a, text_b = _texts(where, row, settings)
        label = (
            _class_id(where, label_name(where, row, settings.label_column), settings) if labelled else None
        )
        out.append(TextExample(id=_id(path, row, len(out)), text_a=text_a, text_b=text_b, label=label))
    return out


def read_scores(path: Path, settings: Any) -> list[TextExample]:
    """A text (or a pair) and its number: regression."""
    table, labelled = _table(path, settings, _wanted(settings))
    out = []
    for where, row in table:
        text_a, text_b = _texts(where, row, settings)
        label = _score(where, row, settings.label_column) if labelled else None
        out.append(TextExample(id=_id(path, row, len(out)), text_a=text_a, text_b=text_b, label=label))
    return out


def _score(where: str, row: Row, column: str) -> float:
    return number_value(where, row, column, "a number: the regression target")


def read_label_sets(path: Path, settings: Any) -> list[TextExample]:
    """A text (or a pair) and its set of classes (label: their ids, sorted): multi-label."""
    table, labelled = _table(path, settings, _wanted(settings))
    out = []
    for where, row in table:
        text_a, text_b = _texts(where, row, settings)
        label = None
        if labelled:
            names = label_names(where, row, settings.label_column, settings.label_separator)
            label = tuple(sorted({_class_id(where, name, settings) for name in names}))
        out.append(TextExample(id=_id(path, row, len(out)), text_a=text_a, text_b=text_b, label=label))
    return out


def read_choices(path: Path, settings: Any) -> list[ChoiceExample]:
    """A context (the text column), the start of the answer (the pair column, or none), its choices (the
    choice columns) and the right one (the label column: its index from 0, or its text): multiple-choice."""
    if len(settings.choice_columns) < 2:
        raise DataError(f"{path}: give the columns of at least two choices (--choice-columns A,B,…)")
    table, labelled = _table(path, settings, _wanted(settings, choices=True))
    out = []
    for where, row in table:
        context, start = _texts(where, row, settings)
        endings = [text_value(where, row, column) for column in settings.choice_columns]
        label = _choice(where, row, settings.label_column, endings) if labelled else None
        out.append(
            ChoiceExample(
                id=_id(path, row, len(out)), context=context, start=start or "", endings=endings, label=label
            )
        )
    return out


def _choice(where: str, row: Row, column: str, endings: list[str]) -> int:
    name = label_name(where, row, column)
    if _INTEGER.fullmatch(name):
        if not 0 <= int(name) < len(endings):
            raise DataError(
                f"{where}: column {column!r} is {name}, expected a choice from 0 to {len(endings) - 1}"
            )
        return int(name)
    if name in endings:
        return endings.index(name)
    raise DataError(
        f"{where}: column {column!r} holds {name!r}, expected the right choice's index (0 to "
        f"{len(endings) - 1}) or its text"
    )
