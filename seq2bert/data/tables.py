"""Rows of a user's table — CSV, TSV, JSON Lines or Parquet — read one at a time, and rows written back.

A practitioner's data is a file with named columns: ``text,label`` in a CSV, ``{"text": …, "label": …}`` per
line in JSON Lines, a Parquet file from a dataframe. The generic tasks (tasks/files.py) and batch prediction
(``seq2bert predict``) read them here, as a stream — a file larger than memory is read a row at a time — and
every row comes with where it was, so a bad one is named:

    for where, row in rows(Path("reviews.csv")):     # where: "reviews.csv:17"
        row["text"], row["label"]

The format is the file's extension (``.csv``, ``.tsv``/``.tab``, ``.jsonl``/``.ndjson``, ``.parquet``/``.pq``)
unless ``fmt`` says. A CSV or TSV has a header line; a TSV's fields are split on tabs and nothing else — a
quote is text (IANA's text/tab-separated-values, GLUE's files: an STS-B sentence may open a quote it never
closes) —, a CSV's follow RFC 4180's quoting; each value is a string (a JSON Lines or Parquet value
keeps its type: a list of labels, a number). Every flaw is a one-line DataError naming the file and line: an
empty file, a ragged row (more or fewer fields than the header), a JSON Lines line that is not an object,
bytes that are not UTF-8.

``TableWriter`` writes rows to a temporary file beside the target and renames it into place when the block
ends without an error: an interrupted prediction leaves no half-written output.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from seq2bert.data.paths import require_file
from seq2bert.errors import DataError, UserError
from seq2bert.io import umask_mode

FORMATS = ("csv", "tsv", "jsonl", "parquet")
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
PARQUET_BATCH = 1024  # rows read from a Parquet file at a time
Row = dict[str, Any]


def table_format(path: Path, fmt: str | None = None, key: str = "--format") -> str:
    """The format of ``path``: ``fmt`` when given (one of FORMATS), else its extension's."""
    if fmt:
        if fmt not in FORMATS:
            raise UserError(f"{key}: expected one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    found = EXTENSIONS.get(Path(path).suffix.lower())
    if found is None:
        known = ", ".join(EXTENSIONS)
        raise DataError(
            f"{path}: cannot tell the format from the extension (expected {known}; or give {key})"
        )
    return found


def rows(path: Path, fmt: str | None = None, *, what: str = "a table") -> Iterator[tuple[str, Row]]:
    """(where, row) for each row of ``path``: ``where`` is "FILE:LINE" (Parquet: "FILE:row N"), ``row`` maps
    the column names to the values. ``what`` describes the file in the error of one that is missing."""
    path = require_file(Path(path), "", what)
    fmt = table_format(path, fmt)
    empty = True
    for item in _READERS[fmt](path):
        empty = False
        yield item
    if empty:
        raise DataError(f"{path}: no rows (expected {what} with a header and at least one row)")


def columns(path: Path, fmt: str | None = None) -> list[str]:
    """The column names of ``path`` (a CSV's header, a Parquet file's schema, a JSON Lines file's first
    object's keys)."""
    path = Path(path)
    fmt = table_format(path, fmt)
    if fmt == "parquet":
        return list(_parquet_file(path).schema_arrow.names)
    for _, row in rows(path, fmt):
        return list(row)
    return []


def require_columns(path: Path, have: Sequence[str], wanted: dict[str, str | None]) -> None:
    """Each column ``wanted`` names ({flag: column}) must be one ``path`` has; else one line naming the flag,
    the column and the columns there are."""
    for flag, column in wanted.items():
        if column is not None and column not in have:
            there = ", ".join(have) or "none"
            raise DataError(f"{path}: no column {column!r} (given by {flag}); the file's columns: {there}")


def value(where: str, row: Row, column: str) -> Any:
    """``row[column]``, or a one-line error naming the line (a JSON Lines object without the key)."""
    if column not in row:
        raise DataError(f"{where}: no {column!r} field (the line has {', '.join(row) or 'none'})")
    return row[column]


def text_value(where: str, row: Row, column: str, *, allow_empty: bool = False) -> str:
    """The text in ``row[column]``: a string, non-empty unless ``allow_empty``."""
    found = value(where, row, column)
    if not isinstance(found, str):
        raise DataError(f"{where}: column {column!r} holds {type(found).__name__} {found!r}, not a text")
    if not allow_empty and not found.strip():
        raise DataError(f"{where}: column {column!r} is empty (expected a text)")
    return found


def number_value(where: str, row: Row, column: str, expected: str = "a label") -> float:
    """The finite number in ``row[column]`` (a CSV's text "4.2", a JSON number; not a bool), or one line."""
    found = value(where, row, column)
    try:
        number = float(found) if not isinstance(found, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise DataError(f"{where}: column {column!r} holds {found!r}, not a number (expected {expected})")
    return number


# --- readers, one per format: each yields (where, row)
def _decoded(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file (a byte order mark dropped), invalid bytes named by line."""
    with open(path, "rb") as file:
        for lineno, raw in enumerate(file, 1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(
                    f"{path}:{lineno}: not UTF-8 text ({err.reason} at byte {err.start})"
                ) from None
            yield lineno, line


def _delimited(delimiter: str, path: Path) -> Iterator[tuple[str, Row]]:
    lines = _decoded(path)
    numbers: list[int] = []

    def text() -> Iterator[str]:
        for lineno, line in lines:
            numbers.append(lineno)
            yield line

    reader = csv.reader(text(), **_DIALECTS[delimiter])
    try:
        header = next(reader, None)
        while header is not None and not any(h.strip() for h in header):
            header = next(reader, None)  # blank lines before the header
        if header is None:
            raise DataError(f"{path}: empty (expected a header line naming the columns, then rows)")
        header = [h.strip() for h in header]
        for fields in reader:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line
            where = f"{path}:{numbers[-1]}"
            if len(fields) != len(header):
                raise DataError(
                    f"{where}: {len(fields)} field(s), the header has {len(header)} "
                    f"({', '.join(header)}): a ragged row"
                )
            yield where, dict(zip(header, fields, strict=True))
    except csv.Error as err:
        raise DataError(f"{path}:{numbers[-1] if numbers else 1}: not {_NAMES[delimiter]} ({err})") from None


def _jsonl(path: Path) -> Iterator[tuple[str, Row]]:
    for lineno, line in _decoded(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{where}: not JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(row, dict):
            raise DataError(f"{where}: a JSON {type(row).__name__}, expected an object of column: value")
        yield where, row


def _parquet_file(path: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        return pq.ParquetFile(path)
    except Exception as err:  # pyarrow's own errors: not a Parquet file, a truncated one
        raise DataError(f"{path}: not a Parquet file ({str(err).splitlines()[0]})") from None


def _parquet(path: Path) -> Iterator[tuple[str, Row]]:
    n = 0
    for batch in _parquet_file(path).iter_batches(batch_size=PARQUET_BATCH):
        for row in batch.to_pylist():
            n += 1
            yield f"{path}:row {n}", row


_NAMES = {",": "CSV", "\t": "TSV"}
_DIALECTS = {
    ",": {"delimiter": ",", "strict": True},
    "\t": {"delimiter": "\t", "quoting": csv.QUOTE_NONE, "quotechar": None},
}
_READERS = {
    "csv": lambda path: _delimited(",", path),
    "tsv": lambda path: _delimited("\t", path),
    "jsonl": _jsonl,
    "parquet": _parquet,
}


# --- writing
class TableWriter:
    """Rows written to ``path`` in its format (by extension or ``fmt``), atomically:

        with TableWriter(Path("out.csv"), ["id", "label"]) as out:
            out.write({"id": 0, "label": "positive"})

    A CSV's list or dict values are written as JSON; Parquet's columns are typed from the first rows written
    (a batch of ``PARQUET_BATCH`` at a time), but those ``types`` gives ({column: pyarrow type}): a column
    whose first values cannot tell its type (empty lists, None)."""

    def __init__(
        self,
        path: Path,
        fieldnames: Sequence[str] | None = None,
        fmt: str | None = None,
        *,
        types: dict | None = None,
    ) -> None:
        self.path = Path(path)
        self.fmt = table_format(self.path, fmt, key="--out-format")
        self.fieldnames = list(fieldnames) if fieldnames is not None else None
        self.types = dict(types or {})
        self._pending: list[Row] = []
        self._file = None
        self._writer: Any = None

    def __enter__(self) -> TableWriter:
        fd, name = tempfile.mkstemp(dir=self.path.parent or ".", prefix=f".{self.path.name}.", suffix=".tmp")
        self._tmp = Path(name)
        if self.fmt == "parquet":
            os.close(fd)
        else:
            self._file = os.fdopen(fd, "w", encoding="utf-8", newline="")
        return self

    @property
    def _dialect(self) -> dict:
        return _DIALECTS["\t" if self.fmt == "tsv" else ","]

    def write(self, row: Row) -> None:
        if self.fieldnames is None:
            self.fieldnames = list(row)
        if self.fmt == "jsonl":
            self._file.write(json.dumps(row, ensure_ascii=False) + "\n")
        elif self.fmt == "parquet":
            self._pending.append(row)
            if len(self._pending) >= PARQUET_BATCH:
                self._flush_parquet()
        else:
            if self._writer is None:
                self._writer = csv.DictWriter(self._file, self.fieldnames, **self._dialect)
                self._writer.writeheader()
            try:
                self._writer.writerow({k: _cell(v) for k, v in row.items()})
            except csv.Error:  # a TSV cell with a tab or a line break: TSV has no way to write it
                raise DataError(
                    f"{self.path}: a TSV cell cannot hold a tab or a line break ({row!r:.60}); "
                    "write CSV or JSON Lines"
                ) from None

    def write_all(self, rows_: Iterable[Row]) -> None:
        for row in rows_:
            self.write(row)

    def _flush_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._pending:
            return
        schema = self._writer.schema if self._writer else None
        if schema is None and self.types:
            inferred = pa.Table.from_pylist(self._pending).schema
            schema = pa.schema([f.with_type(self.types.get(f.name, f.type)) for f in inferred])
        table = pa.Table.from_pylist(self._pending, schema=schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, table.schema)
        self._writer.write_table(table)
        self._pending = []

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if self.fmt == "parquet":
                if error is None:
                    self._flush_parquet()
                if self._writer is not None:
                    self._writer.close()
            elif self._file is not None:
                if error is None and self._writer is None and self.fmt != "jsonl" and self.fieldnames:
                    csv.writer(self._file, **self._dialect).writerow(self.fieldnames)
                self._file.close()
            if error is None:
                os.chmod(self._tmp, umask_mode())
                os.replace(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)


def _cell(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value
