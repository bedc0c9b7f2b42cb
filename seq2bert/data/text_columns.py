"""Text to pretrain on from a column of a file that is not plain text, read as ``prepare_corpus`` reads
paragraphs (seq2bert/data/pretraining.py): each paragraph, then None at each document boundary.

- A table — CSV, TSV, JSON Lines or Parquet, by its extension (data/tables.py, which names each flaw by file
  and line) — and ``column`` a name of its columns: every row's text is one document (SST-2's ``train.tsv``,
  column ``sentence``: 67,349 one-sentence documents, as task-adaptive pretraining reads a task's examples,
  Gururangan et al. 2020, Sect. 4).
- Any other file is read as CoNLL columns — one token per line, its columns separated by spaces or tabs, a
  blank line after each sentence, ``-DOCSTART-`` lines between documents (CoNLL-2003) — and ``column`` is the
  number of the column whose tokens make the text (0: the word): each sentence's tokens joined by spaces are
  a paragraph — a sentence as it is, not split again — and each ``-DOCSTART-`` ends a document.

A missing column names the columns the file has; a ragged row, an empty text, a column that is not a number
for a CoNLL file: one-line DataErrors naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from seq2bert.data import tables
from seq2bert.data.conll import DOCSTART
from seq2bert.data.text_files import read_text_lines
from seq2bert.errors import DataError

KEY = "data.text_column"


def is_table(path: Path) -> bool:
    """Whether ``path`` is a table by its extension (.csv, .tsv, .jsonl, .parquet, …)."""
    return Path(path).suffix.lower() in tables.EXTENSIONS


def check_column(path: Path, column: str) -> None:
    """That ``path`` has ``column`` (a table's is one of its columns; a CoNLL file's is a number): checked
    before a run starts (the rows are read while tokenizing)."""
    if is_table(path):
        tables.require_columns(path, tables.columns(path), {KEY: column})
    else:
        next(conll_paragraphs(path, column), None)


def column_paragraphs(path: Path, column: str) -> Iterator[str | None]:
    """The paragraphs and document boundaries of ``column`` of ``path`` (the module docstring)."""
    if is_table(path):
        yield from table_paragraphs(path, column)
    else:
        yield from conll_paragraphs(path, column)


def table_paragraphs(path: Path, column: str) -> Iterator[str | None]:
    """Each row's text in the column named ``column``, a document of its own."""
    tables.require_columns(path, tables.columns(path), {KEY: column})
    for where, row in tables.rows(path):
        yield tables.text_value(where, row, column).strip()
        yield None


def conll_paragraphs(path: Path, column: str) -> Iterator[str | None]:
    """The sentences of a CoNLL file, the tokens of column number ``column`` joined by spaces; None at each
    ``-DOCSTART-`` and at the end."""
    if not column.isdigit():
        raise DataError(
            f"{path}: {KEY} {column!r}: a CoNLL file's columns are numbered (0: the word); a table's "
            f"are named ({', '.join(tables.EXTENSIONS)})"
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
