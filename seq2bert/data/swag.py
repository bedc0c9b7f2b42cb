"""Reading SWAG (Zellers et al. 2018), the four-way multiple-choice task of BERT Sect. 4.4.

The CSV files of rowanz/swagaf (``data/train.csv``, ``val.csv``, ``test.csv``) have a header row::

    ,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label

The first, unnamed column is a row index. A question is ``sent1`` (the context) followed by the start of
the next sentence, ``sent2``; one of ``ending0``…``ending3`` completes it, and ``label`` says which
(0-3). The test file has no ``label`` column. Fields are quoted CSV (a field may hold commas, quotes and
even line breaks), read with the :mod:`csv` module. Columns are found by name in the header, so their
order does not matter. Files are UTF-8, plain or gzip. Every problem raises a one-line
:class:`~seq2bert.errors.DataError` naming the file and line.
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seq2bert.data.parallel import read_lines
from seq2bert.errors import DataError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]

NUM_ENDINGS = 4
_REQUIRED = ("sent1", "sent2", *(f"ending{i}" for i in range(NUM_ENDINGS)))


@dataclass
class ChoiceExample:
    """One SWAG question: a context, the start of a continuation, and four endings to choose from.

    Attributes:
        id: the row index of the file's first (unnamed) column, else ``"{file stem}-{row}"`` (0-based).
        context: ``sent1``, the first sentence.
        start: ``sent2``, the beginning of the sentence that one ending completes.
        endings: ``ending0`` … ``ending3``.
        label: the index of the right ending; None when the file has no label column (test).
    """

    id: str
    context: str
    start: str
    endings: list[str]
    label: int | None


def read_swag(path: PathLike) -> list[ChoiceExample]:
    """Read the questions of a SWAG CSV file (train, val or test), in file order.

    Raises:
        DataError: a missing file, invalid UTF-8, malformed CSV, a header without the SWAG columns, a row
            with the wrong number of fields, or a label that is not 0-3; the message names file and line.
    """
    path = Path(path)
    records = _records(path)
    first = next(records, None)
    if first is None:
        raise DataError(f"{path}: empty file (expected a SWAG CSV header: {', '.join(_REQUIRED)}, label)")
    header_line, header = first
    where = _column_positions(header, path, header_line)
    expected = f"expected {len(header)} comma-separated fields ({', '.join(map(_show, header))})"
    examples: list[ChoiceExample] = []
    for lineno, fields in records:
        if len(fields) != len(header):
            raise DataError(f"{path}:{lineno}: {expected}, got {len(fields)}")
        label = _parse_label(fields[where["label"]], path, lineno) if "label" in where else None
        examples.append(
            ChoiceExample(
                id=fields[0] if header[0] == "" else f"{path.name.split('.')[0]}-{len(examples)}",
                context=fields[where["sent1"]],
                start=fields[where["sent2"]],
                endings=[fields[where[f"ending{i}"]] for i in range(NUM_ENDINGS)],
                label=label,
            )
        )
    logger.info("read %d SWAG questions from %s", len(examples), path)
    return examples


def _records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line where the record starts, its fields) for each non-blank CSV record."""
    rows = csv.reader((line + "\n" for line in read_lines(path)), strict=True)
    while True:
        lineno = rows.line_num + 1
        try:
            fields = next(rows)
        except StopIteration:
            return
        except csv.Error as err:
            raise DataError(f"{path}:{lineno}: malformed CSV ({err})") from None
        if fields:
            yield lineno, fields


def _column_positions(header: list[str], path: Path, lineno: int) -> dict[str, int]:
    missing = [name for name in _REQUIRED if name not in header]
    if missing:
        raise DataError(
            f"{path}:{lineno}: the header has no column {', '.join(missing)} "
            f"(found: {', '.join(map(_show, header))}); is this a SWAG file?"
        )
    return {name: header.index(name) for name in (*_REQUIRED, "label") if name in header}


def _parse_label(value: str, path: Path, lineno: int) -> int:
    choices = [str(i) for i in range(NUM_ENDINGS)]
    if value not in choices:
        raise DataError(f"{path}:{lineno}: label {value!r} is not one of {', '.join(choices)}")
    return int(value)


def _show(name: str) -> str:
    return name or '""'
