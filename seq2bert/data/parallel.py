"""Reading parallel text: sentence pairs for translation.

Two layouts are read:

* two aligned files, one sentence per line, where line *i* of one translates line *i* of the other
  (``train.de.gz`` + ``train.en.gz``, the Multi30k layout); each file is plain text or gzip, recognised by
  its magic bytes (so a ``.gz`` suffix is not required, and a plain file misnamed ``.gz`` still reads);
* one TSV file with exactly two tab-separated columns, ``source<TAB>target``, per line.

Files are UTF-8 and are streamed line by line. Only the line terminator (``\\n`` or ``\\r\\n``; ``\\r`` in an
old Mac OS file, which has no ``\\n``) is removed; other whitespace, inside or at the ends of a sentence, is kept.
A UTF-8 byte-order mark at the start of a file is dropped.

Every problem raises a :class:`~seq2bert.errors.DataError` whose one-line message names the file, the 1-based
line number and what was expected. With ``skip_bad=True`` the pairs with a bad line (empty, over-long, invalid
UTF-8, wrong number of columns) are skipped and counted instead; problems with a whole file (missing, not
text, mismatched line counts, corrupt gzip) are always errors.
"""

from __future__ import annotations

import gzip
import logging
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import BinaryIO

from seq2bert.data.paths import MISSING, kind_of
from seq2bert.data.text_files import lines_of
from seq2bert.errors import DataError, UserError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]

_GZIP_MAGIC = b"\x1f\x8b"
_SKIP_HINT = "pass skip_bad=True to skip bad pairs"


@dataclass
class ParallelCorpus:
    """Sentence pairs read from parallel text.

    Attributes:
        pairs: ``(source, target)`` sentences, in file order.
        skipped: number of bad pairs skipped (non-zero only with ``skip_bad=True``).
        source: where the pairs came from, for logs, e.g. ``"train.de.gz + train.en.gz"``.
    """

    pairs: list[tuple[str, str]]
    skipped: int
    source: str

    def __len__(self) -> int:
        return len(self.pairs)


class _BadLine(Exception):
    """A problem confined to one line, which ``skip_bad=True`` may skip (internal)."""


def read_parallel(
    src_path: PathLike,
    tgt_path: PathLike | None = None,
    *,
    max_chars: int = 1000,
    skip_bad: bool = False,
) -> ParallelCorpus:
    """Read sentence pairs from two aligned files, or from one two-column TSV file when ``tgt_path`` is None.

    Args:
        src_path: source-language file (plain or gzip), or the TSV file.
        tgt_path: target-language file aligned line by line with ``src_path``; None for a TSV file.
        max_chars: longest sentence accepted, in characters.
        skip_bad: skip (and count) pairs with an empty, over-long, non-UTF-8 or wrongly split line instead of
            raising. Missing files, non-text files and mismatched line counts always raise.

    Returns:
        The pairs, the number skipped and a description of the source.

    Raises:
        DataError: a missing or unreadable file, or a malformed line; the message names file and line.
        UserError: ``max_chars`` is not a positive integer.
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise UserError(f"max_chars must be a positive integer, got {max_chars!r}")
    src = Path(src_path)
    if tgt_path is None:
        pairs, skipped = _read_tsv(src, max_chars, skip_bad)
        description = str(src)
    else:
        tgt = Path(tgt_path)
        pairs, skipped = _read_aligned(src, tgt, max_chars, skip_bad)
        description = f"{src} + {tgt}"
    logger.info("read %d sentence pairs from %s", len(pairs), description)
    return ParallelCorpus(pairs=pairs, skipped=skipped, source=description)


def read_lines(path: PathLike) -> list[str]:
    """The lines of one text file (plain or .gz) to translate; empty lines are kept (they translate to "")."""
    path = Path(path)
    lines = []
    with _open(path) as file:
        for lineno, raw in enumerate(_raw_lines(file, path), 1):
            try:
                lines.append(_decode_utf8(raw, path, lineno))
            except _BadLine as bad:
                raise DataError(str(bad).split(" (expected")[0] + " (expected UTF-8 text)") from None
    return lines


def parallel_files(directory: PathLike, split: str, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """Find the aligned files of one split: ``{directory}/{split}.{lang}``, or the same with ``.gz``.

    For Multi30k, ``parallel_files("../shared/data/multi30k", "train", "de", "en")`` returns the paths of
    ``train.de.gz`` and ``train.en.gz``. When both a plain and a gzip file exist, the plain one is used.

    Raises:
        DataError: the directory or a file is absent; the message lists the paths looked for.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise DataError(f"no such directory: {folder} (expected a folder of parallel text files)")
    return _find_split_file(folder, split, src_lang), _find_split_file(folder, split, tgt_lang)


def _find_split_file(folder: Path, split: str, lang: str) -> Path:
    candidates = [folder / f"{split}.{lang}", folder / f"{split}.{lang}.gz"]
    for path in candidates:
        if path.is_file():
            return path
    present = sorted(p.name for p in folder.iterdir() if p.is_file())
    shown = ", ".join(present[:12]) + (", …" if len(present) > 12 else "") if present else "no files"
    looked_for = " or ".join(str(p) for p in candidates)
    raise DataError(f"no {lang!r} file for split {split!r}: looked for {looked_for} (found: {shown})")


# ---------------------------------------------------------------------------------------------------------
# Reading


def _read_aligned(src: Path, tgt: Path, max_chars: int, skip_bad: bool) -> tuple[list[tuple[str, str]], int]:
    pairs: list[tuple[str, str]] = []
    skipped = 0
    first_problem = ""
    with _open(src) as src_file, _open(tgt) as tgt_file:
        src_lines, tgt_lines = _raw_lines(src_file, src), _raw_lines(tgt_file, tgt)
        for lineno, (src_raw, tgt_raw) in enumerate(zip_longest(src_lines, tgt_lines), start=1):
            if src_raw is None or tgt_raw is None:
                # One file ended first: count what is left of the other, for the message.
                if src_raw is None:
                    n_src, n_tgt = lineno - 1, lineno + sum(1 for _ in tgt_lines)
                else:
                    n_src, n_tgt = lineno + sum(1 for _ in src_lines), lineno - 1
                raise _mismatch(src, n_src, tgt, n_tgt)
            try:
                pair = (_decode(src_raw, src, lineno, max_chars), _decode(tgt_raw, tgt, lineno, max_chars))
            except _BadLine as bad:
                if not skip_bad:
                    # A misalignment is the more fundamental problem (and may be what made this line bad).
                    n_src = lineno + sum(1 for _ in src_lines)
                    n_tgt = lineno + sum(1 for _ in tgt_lines)
                    if n_src != n_tgt:
                        raise _mismatch(src, n_src, tgt, n_tgt) from None
                    raise DataError(str(bad)) from None
                skipped += 1
                first_problem = first_problem or str(bad)
                continue
            pairs.append(pair)
    _log_skipped(skipped, f"{src} + {tgt}", first_problem)
    return pairs, skipped


def _read_tsv(path: Path, max_chars: int, skip_bad: bool) -> tuple[list[tuple[str, str]], int]:
    pairs: list[tuple[str, str]] = []
    skipped = 0
    first_problem = ""
    with _open(path) as file:
        for lineno, raw in enumerate(_raw_lines(file, path), start=1):
            try:
                line = _decode_utf8(raw, path, lineno)
                columns = line.split("\t")
                if len(columns) != 2:
                    raise _BadLine(
                        _problem(
                            path,
                            lineno,
                            f"found {len(columns)} tab-separated column{'s' if len(columns) != 1 else ''}",
                            "exactly 2: source<TAB>target",
                        )
                    )
                source, target = columns
                _check_sentence(source, path, lineno, max_chars, "source column ")
                _check_sentence(target, path, lineno, max_chars, "target column ")
            except _BadLine as bad:
                if not skip_bad:
                    raise DataError(str(bad)) from None
                skipped += 1
                first_problem = first_problem or str(bad)
                continue
            pairs.append((source, target))
    _log_skipped(skipped, str(path), first_problem)
    return pairs, skipped


def _open(path: Path) -> BinaryIO:
    """Open a plain or gzip file for reading bytes, recognising gzip by its magic bytes."""
    found = kind_of(path)
    if found == MISSING:
        raise DataError(f"no such file: {path}")
    if found != "a file":
        found = "a directory" if found == "a folder" else found
        raise DataError(f"{path} is {found} (expected a text file)")
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        if magic == _GZIP_MAGIC:
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return open(path, "rb")
    except OSError as err:
        raise DataError(f"cannot read {path}: {err.strerror or err}") from None


def _raw_lines(file: BinaryIO, path: Path) -> Iterator[bytes]:
    """Yield the lines of ``file`` as bytes without their terminator (LF, CRLF, or CR in an old Mac OS file:
    data/text_files.py ``lines_of``); reject NUL bytes (not a text file)."""
    lineno = 0
    try:
        for raw in lines_of(file):
            lineno += 1
            nul = raw.find(b"\x00")
            if nul >= 0:
                raise DataError(
                    f"{path}:{lineno}: NUL byte at byte {nul + 1} "
                    "(expected a UTF-8 text file, this looks binary or UTF-16)"
                )
            yield raw
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(
            f"{path}:{lineno + 1}: corrupt gzip data ({err}); expected a complete gzip file"
        ) from None


def _decode(raw: bytes, path: Path, lineno: int, max_chars: int) -> str:
    text = _decode_utf8(raw, path, lineno)
    _check_sentence(text, path, lineno, max_chars)
    return text


def _decode_utf8(raw: bytes, path: Path, lineno: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _BadLine(
            _problem(path, lineno, f"invalid UTF-8 at byte {err.start + 1}", "UTF-8 text")
        ) from None
    if lineno == 1 and text.startswith("\ufeff"):
        text = text[1:]
    return text


def _check_sentence(text: str, path: Path, lineno: int, max_chars: int, what: str = "") -> None:
    if not text.strip():
        problem = f"empty {what}" if what else "empty line"
        raise _BadLine(_problem(path, lineno, problem.strip(), "a sentence"))
    if len(text) > max_chars:
        problem = f"{what or 'line '}has {len(text)} characters"
        raise _BadLine(_problem(path, lineno, problem, f"at most max_chars={max_chars}"))


def _problem(path: Path, lineno: int, problem: str, expected: str) -> str:
    return f"{path}:{lineno}: {problem} (expected {expected}; {_SKIP_HINT})"


def _mismatch(src: Path, n_src: int, tgt: Path, n_tgt: int) -> DataError:
    return DataError(
        f"{src} has {n_src} lines but {tgt} has {n_tgt} "
        "(expected the same number: line i of one translates line i of the other)"
    )


def _log_skipped(skipped: int, description: str, first_problem: str) -> None:
    if skipped:
        logger.warning(
            "skipped %d bad sentence pair(s) in %s; the first: %s", skipped, description, first_problem
        )
