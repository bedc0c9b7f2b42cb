"""Reading CoNLL-2003 named-entity data (Tjong Kim Sang & De Meulder 2003), the tagging task of BERT Sect. 5.3.

The format is one token per line, its columns separated by spaces (or tabs)::

    -DOCSTART- -X- -X- O

    EU NNP B-NP B-ORG
    rejects VBZ B-VP O
    ...

In the English release the columns are ``word  POS  chunk  NER``; only the first (the word) and the last
(the NER tag, IOB2 in the ``train.txt``/``valid.txt``/``test.txt`` release) are kept, so any file with the
word first and the tag last reads. A tag is ``O`` or a prefix of the IOB, IOB2 or IOBES schemes (``B-``,
``I-``, ``E-``, ``S-``) and its entity type; any other (``X-FOO``, ``PER``) is refused, naming its line: the
entity scores (seqeval) would read it as no entity at all. A blank line ends a sentence; ``-DOCSTART-`` lines separate documents
and are skipped. Files are UTF-8, plain or gzip. Every problem raises a one-line
:class:`~seq2bert.errors.DataError` naming the file and line.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from seq2bert.data.parallel import read_lines
from seq2bert.errors import DataError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]

DOCSTART = "-DOCSTART-"


@dataclass
class TaggedSentence:
    """One sentence and its NER tags.

    Attributes:
        id: ``"{file name}:{line of the first token}"``, e.g. ``"train.txt:3"``.
        words: the tokens.
        tags: one NER tag per token (the last column), e.g. ``["B-ORG", "O", "B-MISC", …]``.
        scheme: the tag scheme of its file when a reader knows it (the token-classification task's, of a
            user's file: "IOB1", "IOB2", "IOBES" or "none", which its scores follow); "": CoNLL-2003's,
            scored by conlleval's rules. Not part of equality: the same sentence, however its file was read.
    """

    id: str
    words: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    scheme: str = field(default="", compare=False)

    def __len__(self) -> int:
        return len(self.words)


def read_conll(path: PathLike) -> list[TaggedSentence]:
    """Read the sentences of a CoNLL-2003 file, in file order.

    Raises:
        DataError: a missing file, invalid UTF-8, a token line with fewer than 2 columns, or one with another
            number of columns than the file's first token line (the tag is the last column: a line short
            of a column would give its chunk or POS tag as the entity tag), a tag of no scheme — each with
            file:line.
    """
    return read_columns(path, check=_entity_tag)


def read_columns(
    path: PathLike, column: int = -1, *, name: str = "NER tag", check=None
) -> list[TaggedSentence]:
    """The sentences of a file of whitespace-separated columns, the word first and the tag in ``column``
    (0-based: 0 is the word; -1 the last column), in file order. ``check(tag)``: the one-line complaint about
    a tag (None: it is fine), said with file:line; ``name`` names the tag in the errors.

    Raises:
        DataError: a missing file, invalid UTF-8, a token line with fewer columns than the tag's (at least
            2), one with another number of columns than the file's first token line, a tag ``check``
            refuses — each with file:line.
    """
    path = Path(path)
    sentences: list[TaggedSentence] = []
    current: TaggedSentence | None = None
    width: tuple[int, int] | None = None  # columns of the first token line, and its line number
    needed = max(2, column + 1)
    where = "the last column" if column < 0 else f"column {column}"
    shape = f"word … {name}" if column < 0 else f"word … {name} in {where}"
    for lineno, line in enumerate(read_lines(path), start=1):
        columns = line.split()
        if not columns or columns[0] == DOCSTART:
            current = None
            continue
        if len(columns) < needed:
            raise DataError(
                f"{path}:{lineno}: expected at least {needed} space-separated columns ({shape}), "
                f"got {len(columns)}: {line.strip()!r}"
            )
        if width is None:
            width = (len(columns), lineno)
        elif len(columns) != width[0]:
            raise DataError(
                f"{path}:{lineno}: expected {width[0]} space-separated columns as on line {width[1]} "
                f"({shape}), got {len(columns)}: {line.strip()!r}"
            )
        if current is None:
            current = TaggedSentence(id=f"{path.name}:{lineno}")
            sentences.append(current)
        complaint = None if check is None else check(columns[column])
        if complaint is not None:
            raise DataError(f"{path}:{lineno}: {name} {columns[column]!r} in {where} ({complaint})")
        current.words.append(columns[0])
        current.tags.append(columns[column])
    logger.info("read %d sentences (%d tokens) from %s", len(sentences), sum(len(s) for s in sentences), path)
    return sentences


def _entity_tag(tag: str) -> str | None:
    if is_entity_tag(tag):
        return None
    return "expected O or an IOB/IOB2/IOBES tag: B-, I-, E- or S- and the entity type, e.g. B-PER"


_PREFIX_ORDER = {"B": 0, "I": 1, "E": 2, "S": 3, "L": 4, "U": 5}
SCHEME_PREFIXES = ("B", "I", "E", "S")  # IOB (IOB1), IOB2, IOE, IOBES: what seqeval's entities are made of


def is_entity_tag(tag: str) -> bool:
    """ "O", or a scheme prefix, "-" and an entity type ("B-PER", "I-MISC", "S-LOC"): the tags the entity
    scores read; anything else ("X-FOO", "PER", "B-") would become a label no entity is made of."""
    prefix, dash, entity = tag.partition("-")
    return tag == "O" or (prefix in SCHEME_PREFIXES and bool(dash) and bool(entity))


def label_list(sentences: Iterable[TaggedSentence]) -> list[str]:
    """The tags that occur, "O" first, then the others grouped by entity type (types sorted), B- before I-.

    For CoNLL-2003: ``["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]``.
    The order depends only on the set of tags, so train and dev give the same ids when they share tags.
    Other schemes sort the same way (IOBES: B, I, E, S; a tag without a prefix sorts before its B-).
    """
    tags = {tag for sentence in sentences for tag in sentence.tags}
    others = sorted(tags - {"O"}, key=_tag_sort_key)
    return (["O"] if "O" in tags else []) + others


def _tag_sort_key(tag: str) -> tuple[str, int, str]:
    prefix, dash, entity = tag.partition("-")
    if not dash or len(prefix) != 1:  # no scheme prefix: "PER", or "X-Y" with a longer head
        return tag, -1, ""
    return entity, _PREFIX_ORDER.get(prefix, len(_PREFIX_ORDER)), prefix
