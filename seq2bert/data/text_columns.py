"""Text to pretrain on from a column of a file that is not plain text, read as ``prepare_corpus`` reads
paragraphs (seq2bert/data/pretraining.py): each paragraph, then None at each document boundary.

- A table — ``.tsv`` (tab-separated, no quoting: GLUE's files) or ``.csv`` (comma-separated, quoted fields
  as the ``csv`` module reads them), plain or ``.gz``, with a header row — and ``column`` a name of its
  header: every row's cell is one document (SST-2's ``train.tsv``, column ``sentence``: 67,349 one-sentence
  documents, as task-adaptive pretraining reads a task's examples, Gururangan et al. 2020, Sect. 4).
- Any other file is read as CoNLL columns — one token per line, its columns separated by spaces or tabs, a
  blank line after each sentence, ``-DOCSTART-`` lines between documents (CoNLL-2003) — and ``column`` is the
  number of the column whose tokens make the text (0: the word): each sentence's tokens joined by spaces are
  a paragraph — a sentence as it is, not split again — and each ``-DOCSTART-`` ends a document.

A missing column names the columns the file has; a short row, an empty cell, a column that is not a number for
a CoNLL file: one-line DataErrors naming the file and line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from seq2bert.data.conll import DOCSTART
from seq2bert.data.text_files import read_text_lines
from seq2bert.errors import DataError

DELIMITERS = {".tsv": "\t", ".csv": ","}


def table_delimiter(path: Path) -> str | None:
    """The delimiter of a table file by its extension (``.gz`` looked through), None for another file."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return DELIMITERS.get(suffixes[-1]) if suffixes else None


def check_column(path: Path, column: str) -> None:
    """That ``path`` has ``column`` (a table's header names it; a CoNLL file's is a number): checked before a
    run starts (the rows are read while tokenizing)."""
    delimiter = table_delimiter(path)
    if delimiter is None:
        next(conll_paragraphs(path, column), None)
    else:
        next(table_paragraphs(path, column, delimiter), None)


def column_paragraphs(path: Path, column: str) -> Iterator[str | None]:
    """The paragraphs and document boundaries of ``column`` of ``path`` (the module docstring)."""
    delimiter = table_delimiter(path)
    if delimiter is not None:
        yield from table_paragraphs(path, column, delimiter)
    else:
        yield from conll_paragraphs(path, column)


def table_paragraphs(path: Path, column: str, delimiter: str) -> Iterator[str | None]:
    """Each row's cell of the column named ``column``, a document of its own."""
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    rows = csv.reader((line + "\n" for line in read_text_lines(path)), delimiter=delimiter, quoting=quoting)
    try:
        header = next(rows, None)
        if not header:
            raise DataError(f"{path}: empty (expected a header row naming the columns)")
        if column not in header:
            raise DataError(
                f"{path}: no column {column!r} (data.text_column); the file has: {', '.join(header)}"
            )
        index = header.index(column)
        for row in rows:
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            if len(row) <= index:
                raise DataError(
                    f"{path}:{rows.line_num}: {len(row)} fields, no {column!r} (the header has {len(header)})"
                )
            text = row[index].strip()
            if not text:
                raise DataError(f"{path}:{rows.line_num}: an empty text in column {column!r}")
            yield text
            yield None
    except csv.Error as e:
        raise DataError(f"{path}:{rows.line_num}: {e}") from None


def conll_paragraphs(path: Path, column: str) -> Iterator[str | None]:
    """The sentences of a CoNLL file, the tokens of column number ``column`` joined by spaces; None at each
    ``-DOCSTART-`` and at the end."""
    if not column.isdigit():
        raise DataError(
            f"{path}: data.text_column {column!r}: a CoNLL file's columns are numbered (0: the word); "
            "a table's are named in its header (.tsv, .csv)"
        )
    index = int(column)
    words: list[str] = []
    in_document = False
    for number, line in enumerate(read_text_lines(path), 1):
        fields = line.split()
        if fields and fields[0] != DOCSTART:
            if len(fields) <= index:
                raise DataError(
                    f"{path}:{number}: {len(fields)} columns, no column {index} (data.text_column)"
                )
            words.append(fields[index])
            continue
        if words:
            yield " ".join(words)
            words, in_document = [], True
        if fields and in_document:  # -DOCSTART-: the document before it ends
            yield None
            in_document = False
    if words:
        yield " ".join(words)
        in_document = True
    if in_document:
        yield None
