"""Text files read line by line — their lines ended by LF, CRLF, or CR alone (the old Mac OS files, which
read as one long line otherwise) — and the text for training vocabularies: UTF-8 files (plain or .gz), and
texts given directly.

Errors are one-line :class:`~seq2bert.errors.DataError` messages naming the file and line.
"""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import BinaryIO

from seq2bert.errors import DataError, UserError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]


CHUNK = 1 << 16  # the bytes read to tell a file's line ends, and a CR-only file's reading size


def lines_of(file: BinaryIO) -> Iterator[bytes]:
    """The lines of a binary file without their ends: LF or CRLF; or CR alone, in a file whose first line
    ends with a CR alone (an old Mac OS file: it would otherwise be one line, whose count matches no other
    file's). A CR inside a line of an LF file stays in its line."""
    parts = [file.read(CHUNK)]
    while parts[-1] and b"\n" not in parts[-1] and b"\r" not in parts[-1]:  # a first line past a read
        parts.append(file.read(CHUNK))
    head = b"".join(parts)
    if head.endswith(b"\r"):  # a CRLF cut between two reads
        head += file.read(1)
    if b"\r" in head and b"\n" not in head:
        yield from _cr_lines(head, file)
        return
    *complete, rest = head.split(b"\n")
    yield from (line.removesuffix(b"\r") for line in complete)
    for raw in chain([rest + file.readline()], file):
        if raw.endswith(b"\n"):
            raw = raw[:-1].removesuffix(b"\r")
        elif not raw:  # the end of the file, just after the head's last line
            continue
        yield raw


def _cr_lines(head: bytes, file: BinaryIO) -> Iterator[bytes]:
    parts: list[bytes] = []  # the pieces of a line that spans several reads
    block = head
    while block:
        *complete, rest = block.split(b"\r")
        if complete:
            yield b"".join([*parts, complete[0]])
            yield from complete[1:]
            parts = []
        parts.append(rest)
        block = file.read(CHUNK)
    if any(parts):
        yield b"".join(parts)


def read_text_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 text file (plain or .gz) without line ends; DataError names file:line."""
    try:
        handle = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from err
    with handle:
        lineno = 0
        try:
            for lineno, raw in enumerate(lines_of(handle), start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise DataError(f"{path}:{lineno}: invalid UTF-8 (byte {err.start} of the line)") from err
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                yield line
        except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError
            raise DataError(f"{path}:{lineno + 1}: cannot read ({one_line(err)})") from err


def training_texts(files_or_texts: PathLike | Iterable[PathLike]) -> Iterator[str]:
    """Texts from one path, or from an iterable of ``Path`` objects (files) and ``str`` (texts)."""
    if isinstance(files_or_texts, str | os.PathLike):
        files_or_texts = [Path(files_or_texts)]
    first = True
    for item in files_or_texts:
        if isinstance(item, os.PathLike):
            yield from (line for line in read_text_lines(Path(item)) if line)
        elif isinstance(item, str):
            if first and "\n" not in item and len(item) < 4096 and os.path.isfile(item):
                logger.warning("training on the text %r, a file name; pass a pathlib.Path to read it", item)
            if item:
                yield item
        else:
            raise UserError(f"training input must be str texts or Path files, not {type(item).__name__}")
        first = False


def one_line(err: BaseException) -> str:
    """An exception's message on one line (the engine's messages span several)."""
    return " ".join(str(err).split())
