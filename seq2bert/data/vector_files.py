"""Static word vectors in the three published file formats, read and written: vectors trained elsewhere
(GoogleNews word2vec, glove.6B, fastText's .vec) load, and ours save in a form the other tools read.

    word2vec          text: a header line "V d" (the number of words, the dimension), then V lines
                      "word v1 … vd" separated by single spaces, UTF-8 (fastText's .vec files are this format)
    word2vec-binary   Mikolov's word2vec.c (as gensim reads and writes it): the ASCII header line "V d\\n", then
                      per word its UTF-8 bytes, a space, d little-endian float32 (4·d bytes) and a "\\n"
                      (written after each vector; any "\\n" before a word is skipped when reading)
    glove             text lines "word v1 … vd" with no header; d is the number of values of the first line

``detect_format`` tells them apart: a first line of two integers is a word2vec header; then the file is text
when its next line is a word and d numbers, and binary when the bytes of its first records (words, spaces,
4·d bytes each) are not printable UTF-8 text; any other first line starts a GloVe file.

A folder stands for the ``vectors.txt`` inside it (where trained vectors are written). Reading is bulk: a
text file's lines are split once each and their values parsed by numpy's C text reader (``loadtxt``) a 16 MB
block at a time (100,000 words × 100 dimensions in about a second), a binary file's vectors are taken by
``np.frombuffer`` (the same in a fifth of that). Departures from gensim's reader, on purpose: blank lines are skipped; a word that holds
spaces (a few in glove.840B) is read when the values after it number d; more words than the header says is
an error (gensim ignores the rest); a word seen again is dropped, keeping the first, with a logged warning.
Every flaw is a one-line DataError naming the file, and the line where there is one.

Writing is atomic (a temporary file in the same folder, renamed into place, as ``seq2bert.io``); text values
are written with 9 significant digits, which read back as the same float32, bit for bit (NaN payloads aside).
A word that is empty or holds a space or a line break cannot be written in any of the formats (a DataError).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from seq2bert.errors import ConfigError, DataError
from seq2bert.io import atomic_open

logger = logging.getLogger(__name__)

FORMATS = ("word2vec", "word2vec-binary", "glove")
DIRECTORY_FILE = "vectors.txt"  # what a folder of trained vectors holds
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")  # the first bytes of a fastText model's .bin
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # in no text file of vectors
_BLOCK = 1 << 24  # bytes of a text file parsed at once
_MAX_LINE = 1 << 16  # bytes read for a header line
_MAX_WORD = 1 << 12  # bytes a binary file's word may take before its space
_ROWS = 8192  # words written at once


@dataclass(eq=False)
class WordVectors:
    """A vocabulary and one vector per word: ``vectors[i]`` is the vector of ``words[i]``."""

    words: list[str]  # row i's word, each once
    vectors: torch.Tensor  # (V, d) float32
    index: dict[str, int] = field(init=False, repr=False)  # word → its row

    def __post_init__(self) -> None:
        self.words = list(self.words)
        self.vectors = torch.as_tensor(self.vectors, dtype=torch.float32)
        if self.vectors.dim() != 2 or len(self.vectors) != len(self.words):
            raise ValueError(
                f"vectors of shape {tuple(self.vectors.shape)} for {len(self.words)} words; "
                f"expected ({len(self.words)}, d)"
            )
        self.index = _first_rows(self.words)
        if len(self.index) != len(self.words):
            i, j = _first_repeat(self.words, self.index)
            raise ValueError(f"the word {self.words[j]!r} is in rows {i} and {j}; each word once")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __repr__(self) -> str:
        return f"WordVectors({len(self)} words, dim {self.dim})"

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def vector(self, word: str) -> torch.Tensor:
        """The (d,) vector of ``word``; KeyError for a word not in the vocabulary."""
        return self.vectors[self.index[word]]


def _first_rows(words: list[str]) -> dict[str, int]:
    """word → the row of its first occurrence (a dict built in C: later rows written first, overwritten)."""
    return dict(zip(reversed(words), range(len(words) - 1, -1, -1), strict=True))


def _first_repeat(words: list[str], index: dict[str, int]) -> tuple[int, int]:
    """(i, j): the rows of the first word seen a second time, at row j, having been first at row i."""
    j = next(j for j, word in enumerate(words) if index[word] != j)
    return index[words[j]], j


# ---------------------------------------------------------------------------------------------------------
# Reading


def read_vectors(path: str | Path, *, format: str = "auto", limit: int | None = None) -> WordVectors:
    """The word vectors of ``path`` (a file, or a folder holding vectors.txt) in ``format`` ("auto":
    ``detect_format``); with ``limit``, only the file's first ``limit`` words (published files put the most
    frequent first)."""
    if format != "auto" and format not in FORMATS:
        raise ConfigError(f"format: expected auto or one of {', '.join(FORMATS)}; got {format!r}")
    if limit is not None and limit < 0:
        raise ConfigError(f"limit: expected a number of words, 0 or more; got {limit}")
    path = _resolve(path)
    if format == "auto":
        format = detect_format(path)
    with _open(path) as f:
        if format == "glove":
            words, vectors = _read_text(path, f, line=1, dim=None, count=None, limit=limit)
        else:
            count, dim = _header(path, f.readline(_MAX_LINE))
            if format == "word2vec-binary":
                n = count if limit is None else min(count, limit)
                words, vectors = _read_binary(path, f, count, dim, n)
            else:
                words, vectors = _read_text(path, f, line=2, dim=dim, count=count, limit=limit)
    return _keep_first(path, words, vectors)


def detect_format(path: str | Path) -> str:
    """ "word2vec", "word2vec-binary" or "glove": which of ``FORMATS`` the file (or folder's vectors.txt) is in."""
    path = _resolve(path)
    with _open(path) as f:
        first = f.readline(_MAX_LINE)
        if not first:
            raise DataError(f"{path}: empty; expected word vectors (word2vec, word2vec binary or GloVe)")
        if first.startswith(FASTTEXT_MAGIC):
            raise DataError(
                f"{path}: a fastText model (.bin), not word vectors; read its .vec file (format 'word2vec')"
            )
        header = _parse_header(first)
        if header is None:
            return "glove"
        dim = header[1]
        after = f.read(min(_MAX_LINE + 32 * dim, 1 << 24)).lstrip(b"\r\n")  # a record or two
    if not after:  # no words: either kind reads as none
        return "word2vec"
    line = after.split(b"\n", 1)[0]
    with contextlib.suppress(UnicodeDecodeError):
        tokens = line.decode("utf-8").rstrip(" \r").rsplit(" ", dim)
        if len(tokens) == dim + 1 and all(_is_number(t) for t in tokens[1:]):
            return "word2vec"
    try:  # binary: the float bytes of its first records are not all printable UTF-8 text
        text = after.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(after) - 3:  # not a character cut at the window's end
            return "word2vec-binary"
        text = after[: e.start].decode("utf-8")
    return "word2vec-binary" if _CONTROLS.search(text) else "word2vec"  # text malformed at line 2


def _resolve(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        if (path / DIRECTORY_FILE).is_file():
            return path / DIRECTORY_FILE
        raise DataError(
            f"{path}: a folder without {DIRECTORY_FILE}; expected a word-vector file or a folder of one"
        )
    if not path.exists():
        raise DataError(f"{path}: no such file")
    return path


def _open(path: Path):
    try:
        return open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: unreadable ({e.strerror or e}); expected a word-vector file") from None


def _parse_header(line: bytes) -> tuple[int, int] | None:
    """(V, d) from a line "V d", None for any other line."""
    tokens = line.split()
    if len(tokens) != 2 or not all(t.isdigit() for t in tokens):
        return None
    return int(tokens[0]), int(tokens[1])


def _header(path: Path, line: bytes) -> tuple[int, int]:
    if not line:
        raise DataError(f"{path}: empty; expected word vectors (word2vec, word2vec binary or GloVe)")
    header = _parse_header(line)
    if header is None:
        shown = line[:40].decode("utf-8", errors="replace").rstrip("\r\n")
        raise DataError(
            f"{path}:1: expected a word2vec header 'V d' (the number of words, the dimension), got {shown!r} "
            "(a GloVe file has none: format='glove')"
        )
    if header[1] == 0:
        raise DataError(f"{path}:1: the header 'V d' gives dimension 0; expected 1 or more")
    return header


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _keep_first(path: Path, words: list[str], vectors: np.ndarray) -> WordVectors:
    """The words and their (V, d) vectors, each word at its first entry (a warning says what was dropped)."""
    index = _first_rows(words)
    if len(index) != len(words):
        i, j = _first_repeat(words, index)
        logger.warning(
            "%s: %d entries repeat an earlier word; kept the first of each (e.g. %r, entries %d and %d)",
            path,
            len(words) - len(index),
            words[j],
            i + 1,
            j + 1,
        )
        keep = sorted(index.values())
        words, vectors = [words[k] for k in keep], vectors[keep]
    return WordVectors(words, torch.from_numpy(vectors))


# --- text: word2vec (after its header) and GloVe


def _read_text(
    path: Path, f, *, line: int, dim: int | None, count: int | None, limit: int | None
) -> tuple[list[str], np.ndarray]:
    """The words and (n, d) values of the lines from ``line`` on. ``dim``, ``count``: the header's d and V
    (None for GloVe, whose first line gives d)."""
    reference = "the header's dimension, line 1"
    if count is not None and limit is not None and limit >= count:
        limit = None  # all the header's words: check there are no more
    words: list[str] = []
    blocks = []  # (n, d) each
    for first, lines in _line_blocks(path, f, line, header=count is not None):
        numbers = range(first, first + len(lines))
        lines = [text.rstrip(" \r") for text in lines]  # fastText ends each line with a space
        if "" in lines:  # blank lines are skipped
            numbers = [n for n, text in zip(numbers, lines, strict=True) if text]
            lines = [text for text in lines if text]
        if not lines:
            continue
        if dim is None:
            dim, reference = _first_dimension(path, lines[0], numbers[0])
        if limit is not None and len(words) + len(lines) >= limit:
            lines, numbers = lines[: limit - len(words)], numbers[: limit - len(words)]
        elif count is not None and len(words) + len(lines) > count:
            raise DataError(
                f"{path}:{numbers[count - len(words)]}: more words than the {count} of the header (line 1)"
            )
        if lines:
            chunk_words, values = _parse_lines(path, lines, numbers, dim, reference)
            words += chunk_words
            blocks.append(values)
        if limit is not None and len(words) == limit:
            break
    if dim is None:
        raise DataError(f"{path}: empty; expected word vectors (word2vec, word2vec binary or GloVe)")
    if count is not None and len(words) < (count if limit is None else limit):
        raise DataError(f"{path}: ends after {_words(len(words))}; the header (line 1) says {count}")
    return words, np.concatenate(blocks) if blocks else np.zeros((0, dim), np.float32)


def _line_blocks(path: Path, f, line: int, header: bool):
    """(number of the first line, its lines) for each block of whole lines of ``f``, decoded as UTF-8."""
    rest = b""
    while True:
        block = f.read(_BLOCK)
        if block:
            data = rest + block
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # a line longer than the block so far
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
        elif rest:
            data, rest = rest, b""  # the last line, without its "\n"
        else:
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            bad = line + data[: _first_bad_byte(data)].count(b"\n")
            hint = " (a binary file? format='word2vec-binary')" if header and bad == 2 else ""
            raise DataError(f"{path}:{bad}: invalid UTF-8; expected UTF-8 text{hint}") from None
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        yield line, lines
        line += len(lines)


def _words(n: int) -> str:
    return f"{n} word" if n == 1 else f"{n} words"


def _first_bad_byte(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    return len(data)


def _first_dimension(path: Path, line: str, number: int) -> tuple[int, str]:
    """A GloVe file's d (the number of values of its first line) and how an error refers to it."""
    word, _, rest = line.partition(" ")
    if not rest:
        raise DataError(
            f"{path}:{number}: {word!r} and no values; expected a word and its values 'word v1 … vd'"
        )
    reference = f"the dimension of line {number}"
    if _parse_header(line.encode()):
        reference += ", a word2vec header 'V d'? format='word2vec'"
    return rest.count(" ") + 1, reference


def _parse_lines(
    path: Path, lines: list[str], numbers, dim: int, reference: str
) -> tuple[list[str], np.ndarray]:
    """The words and (n, d) values of non-blank lines "word v1 … vd"."""
    parts = [text.partition(" ") for text in lines]
    words = [p[0] for p in parts]
    rests = [p[2] for p in parts]
    values = _numbers(rests, dim)
    if values is None:  # a line of too few or too many values, or a word holding spaces; then not numbers
        for i, rest in enumerate(rests):
            if (rest.count(" ") + 1 if rest else 0) != dim:
                words[i], rests[i] = _irregular(path, lines[i], numbers[i], dim, reference)
        values = _numbers(rests, dim)
        if values is None:
            _raise_bad_values(path, words, rests, numbers, dim, reference)
    return words, values


def _numbers(rests: list[str], dim: int) -> np.ndarray | None:
    """The (n, d) float32 of n strings of d numbers each separated by one space, None if they are not.

    numpy's C reader of text (``loadtxt``) parses them, each straight to the nearest float32."""
    if "" in rests:  # a word without values (which loadtxt would skip)
        return None
    try:
        values = np.loadtxt(rests, dtype=np.float32, delimiter=" ", comments=None, ndmin=2)  # (n, d)
    except ValueError:  # a token that is not a number, a count of them that changes
        return None
    return values if values.shape == (len(rests), dim) else None


def _irregular(path: Path, line: str, number: int, dim: int, reference: str) -> tuple[str, str]:
    """(word, values) of a line whose spaces do not number d: a word holding spaces and then d values (a few
    of glove.840B's tokens), else a DataError saying how many values it has."""
    tokens = line.split(" ")
    head = tokens[:-dim]  # the word's tokens when the last d are values
    if len(head) < 2 or _is_number(head[-1]) or head[-1] == "":
        raise DataError(
            f"{path}:{number}: {len(tokens) - 1} values for {tokens[0]!r}, expected {dim} ({reference})"
        )
    return " ".join(head), " ".join(tokens[-dim:])


def _raise_bad_values(path: Path, words, rests, numbers, dim: int, reference: str):
    """The DataError of the first line whose values are not d numbers."""
    for word, rest, number in zip(words, rests, numbers, strict=True):
        tokens = rest.split(" ") if rest else []
        if len(tokens) != dim:
            raise DataError(
                f"{path}:{number}: {len(tokens)} values for {word!r}, expected {dim} ({reference})"
            )
        if _numbers([rest], dim) is None:
            k, token = next((k, t) for k, t in enumerate(tokens, 1) if _numbers([t], 1) is None)
            raise DataError(f"{path}:{number}: value {k} of {word!r} is {token!r}; expected a number")
    raise AssertionError("no line of the block is malformed")  # loadtxt refused it: one line is


# --- binary: word2vec.c


def _read_binary(path: Path, f, count: int, dim: int, n: int) -> tuple[list[str], np.ndarray]:
    """The first ``n`` of the ``count`` records "word, space, d float32" after the header line."""
    size = 4 * dim  # bytes of a vector
    remaining = os.fstat(f.fileno()).st_size - f.tell()
    out = np.empty((min(n, remaining // (size + 1)), dim), dtype=np.float32)  # a record takes ≥ size + 1
    raw = []  # each word's bytes
    buf, pos = f.read(_BLOCK), 0
    for i in range(n):
        while True:
            while pos < len(buf) and buf[pos] == 0x0A:  # the "\n" after the previous vector
                pos += 1
            space = buf.find(b" ", pos)
            if space != -1 and space + 1 + size <= len(buf):
                break
            if space == -1 and len(buf) - pos > _MAX_WORD:
                raise DataError(
                    f"{path}: word {i + 1} of {count}: no space in its first {_MAX_WORD} bytes; expected a "
                    "word, a space and its float32 values (a text file? format='word2vec')"
                )
            more = f.read(_BLOCK)
            if not more:
                _raise_truncated(path, i, count, size, buf[pos:])
            buf, pos = buf[pos:] + more, 0
        raw.append(buf[pos:space])
        out[i] = np.frombuffer(buf, dtype="<f4", count=dim, offset=space + 1)  # (d,)
        pos = space + 1 + size
    if n == count and (buf[pos:] + f.read(_MAX_LINE)).strip(b"\n"):
        raise DataError(
            f"{path}: more data after the {count} words of the header (line 1); expected the end of the "
            "file (a text file? format='word2vec')"
        )
    return _decode_words(path, raw, count), out[:n]


def _raise_truncated(path: Path, i: int, count: int, size: int, rest: bytes):
    if not rest:
        raise DataError(f"{path}: truncated: ends after {_words(i)}; the header (line 1) says {count}")
    space = rest.find(b" ")
    if space == -1:
        raise DataError(f"{path}: truncated: word {i + 1} of {count} ends before its vector")
    word = rest[:space].decode("utf-8", errors="replace")
    raise DataError(
        f"{path}: truncated: word {i + 1} of {count} ({word!r}) has {len(rest) - space - 1} of {size} bytes"
    )


def _decode_words(path: Path, raw: list[bytes], count: int) -> list[str]:
    try:
        return [word.decode("utf-8") for word in raw]
    except UnicodeDecodeError:
        i = next(i for i, word in enumerate(raw) if _first_bad_byte(word) < len(word))
        raise DataError(
            f"{path}: word {i + 1} of {count} is not UTF-8 ({raw[i][:40]!r}); expected UTF-8 words"
        ) from None


# ---------------------------------------------------------------------------------------------------------
# Writing


def write_vectors(path: str | Path, wv: WordVectors, format: str = "word2vec") -> None:
    """``wv`` as the file ``path`` in ``format`` (one of ``FORMATS``), written atomically."""
    if format not in FORMATS:
        raise ConfigError(f"format: expected one of {', '.join(FORMATS)}; got {format!r}")
    path = Path(path)
    _check_words(path, wv.words, format)
    vectors = wv.vectors.detach().to("cpu", torch.float32).numpy()  # (V, d)
    count, dim = vectors.shape
    if dim == 0:
        raise DataError(f"{path}: vectors of dimension 0; the {format} format needs 1 or more values a word")
    values = " ".join(["%.9g"] * dim)  # 9 significant digits: float32 reads back bit for bit
    with atomic_open(path) as f:
        if format != "glove":
            f.write(f"{count} {dim}\n".encode())
        for start in range(0, count, _ROWS):
            words, rows = wv.words[start : start + _ROWS], vectors[start : start + _ROWS]  # (≤ _ROWS, d)
            if format == "word2vec-binary":
                blob = memoryview(rows.astype("<f4").tobytes())
                size = 4 * dim
                f.write(
                    b"".join(
                        b"%s %s\n" % (word.encode(), blob[i * size : (i + 1) * size])
                        for i, word in enumerate(words)
                    )
                )
            else:
                lines = [
                    f"{word} {values % tuple(row)}\n" for word, row in zip(words, rows.tolist(), strict=True)
                ]
                f.write("".join(lines).encode())


def _check_words(path: Path, words: list[str], format: str) -> None:
    """A DataError for a word the format cannot hold: empty, or with a space or a line break (its separators;
    "\r" too, a line break to Python's text files), or not encodable as UTF-8."""
    for i, word in enumerate(words):
        problem = None
        if not word:
            problem = "is empty"
        elif " " in word:
            problem = "holds a space"
        elif "\n" in word or "\r" in word:
            problem = "holds a line break"
        if problem is None and not word.isascii():
            try:
                word.encode("utf-8")
            except UnicodeEncodeError:
                problem = "is not valid Unicode (a lone surrogate)"
        if problem:
            raise DataError(
                f"{path}: the word {word!r} (row {i}) {problem}; the {format} format cannot hold it"
            )
