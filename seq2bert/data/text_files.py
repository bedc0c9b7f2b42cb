"""Text for training vocabularies: UTF-8 files (plain or .gz) read line by line, and texts given directly.

Errors are one-line :class:`~seq2bert.errors.DataError` messages naming the file and line.
"""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from seq2bert.errors import DataError, UserError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]


def read_text_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 text file (plain or .gz) without line ends; DataError names file:line."""
    try:
        handle = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from err
    with handle:
        lineno = 0
        try:
            for lineno, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise DataError(f"{path}:{lineno}: invalid UTF-8 (byte {err.start} of the line)") from err
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                yield line.rstrip("\r\n")
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
