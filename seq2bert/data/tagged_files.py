"""A user's tagged sentences — CoNLL-style columns or JSON Lines — and the tag scheme they are written in: what
the token-classification task (tasks/tagging_files.py) reads.

Two formats, told by the extension (``.jsonl``/``.ndjson``: JSON Lines; any other: columns) unless given:

    conll   one token per line, whitespace-separated columns, the word first and the tag in a column given
            by its number, 0-based (0 is the word; CoNLL-2003's POS tag is column 1, its NER tag column 3;
            default: the last column); a blank line between sentences, ``-DOCSTART-`` lines skipped; every
            token line of a file has the same number of columns (data/conll.py ``read_columns``)
    jsonl   one sentence per line: ``{"tokens": ["EU", "rejects", …], "tags": ["B-ORG", "O", …]}`` (other
            key names by ``--text-column`` / ``--label-column``)

A tag scheme says how the tags spell entities (Ramshaw & Marcus 1995; Tjong Kim Sang & Veenstra 1999):

    IOB1    I-X inside an entity of type X, which it may also start; B-X only starts an entity that follows
            one of the same type (the original CoNLL-2003 files)
    IOB2    every entity starts with B-X, continues with I-X (the CoNLL-2003 release most use today)
    IOBES   B-X begins, I-X continues, E-X ends an entity of several tokens; S-X is an entity of one
    none    tags with no scheme — part-of-speech tags, any label set — scored token by token

``detect_scheme`` finds it from the training file's tags; ``check_scheme`` refuses a tag that breaks it,
naming the file and line. Every flaw is a one-line DataError naming the file and line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seq2bert.data.conll import TaggedSentence, is_entity_tag, read_columns
from seq2bert.data.tables import rows, value
from seq2bert.errors import ConfigError, DataError

FORMATS = ("conll", "jsonl")
SCHEMES = ("IOB1", "IOB2", "IOBES", "none")
JSONL_EXTENSIONS = (".jsonl", ".ndjson")
TABLE_EXTENSIONS = (".csv", ".parquet", ".pq", ".json")  # tables, not tagged sentences: said, not misread
TOKENS, TAGS = "tokens", "tags"  # the keys of a JSON Lines sentence


def tagged_format(path: Path, fmt: str = "") -> str:
    """ "conll" or "jsonl": ``fmt`` when given, else by the extension (.jsonl/.ndjson; a table's is refused)."""
    if fmt:
        if fmt not in FORMATS:
            raise ConfigError(
                f"data.format: token classification reads {' or '.join(FORMATS)} files, got {fmt!r}"
            )
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix in TABLE_EXTENSIONS:
        raise DataError(
            f"{path}: a {suffix} file; token classification reads CoNLL columns (a word and its tag per "
            "line) or JSON Lines of tokens and tags (give --format conll|jsonl if the extension misleads)"
        )
    return "jsonl" if suffix in JSONL_EXTENSIONS else "conll"


def label_column_number(label_column: str) -> int:
    """The tag's column of a CoNLL file: a number, 0-based (0 is the word); "" or "label" (the default of
    data.label_column): the last column, -1."""
    if label_column in ("", "label"):
        return -1
    if not label_column.isdigit():
        raise ConfigError(
            f"data.label_column: token classification's CoNLL columns are numbered from 0 (the word), e.g. "
            f"--label-column 1 for CoNLL-2003's POS tags; got {label_column!r}"
        )
    if int(label_column) == 0:
        raise ConfigError("data.label_column: column 0 is the word; the tag is column 1 or after")
    return int(label_column)


def read_tagged(
    path: Path, fmt: str = "", *, label_column: str = "", text_column: str = ""
) -> list[TaggedSentence]:
    """The sentences of ``path`` (CoNLL columns or JSON Lines, by ``tagged_format``), in file order; an id
    "{file name}:{line}" each (a CoNLL sentence's first token's line)."""
    path = Path(path)
    fmt = tagged_format(path, fmt)
    if fmt == "conll":
        sentences = read_columns(path, label_column_number(label_column), name="tag")
    else:
        names = (
            text_column if text_column not in ("", "text") else TOKENS,
            label_column if label_column not in ("", "label") and not label_column.isdigit() else TAGS,
        )
        sentences = _read_jsonl(path, *names)
    if not sentences:
        expected = {
            "conll": "CoNLL columns: a word and its tag per line, a blank line between sentences",
            "jsonl": f"JSON Lines of {TOKENS} and {TAGS}",
        }
        raise DataError(f"{path}: no sentences (expected {expected[fmt]})")
    return sentences


def _read_jsonl(path: Path, tokens_key: str, tags_key: str) -> list[TaggedSentence]:
    with open(path, "rb") as file:
        if not any(line.strip() for line in file):  # tables.rows would look for a header
            return []
    sentences = []
    for where, row in rows(path, "jsonl", what="JSON Lines of tokens and tags"):
        words, tags = (_strings(where, value(where, row, key), key) for key in (tokens_key, tags_key))
        if len(words) != len(tags):
            raise DataError(
                f"{where}: {len(words)} {tokens_key} and {len(tags)} {tags_key} (expected one tag per token)"
            )
        if not words:
            raise DataError(f"{where}: no {tokens_key} (expected a sentence of at least one token)")
        sentences.append(TaggedSentence(id=f"{path.name}:{where.rsplit(':', 1)[1]}", words=words, tags=tags))
    return sentences


def _strings(where: str, found, key: str) -> list[str]:
    if not isinstance(found, list):
        raise DataError(f"{where}: {key!r} holds {type(found).__name__} {found!r}, expected a list of texts")
    for i, item in enumerate(found):
        if not isinstance(item, str) or not item.strip() or len(item.split()) != 1:
            raise DataError(
                f"{where}: {key}[{i}] is {type(item).__name__} {item!r}, expected a text without spaces"
                + (" (tags by name: the names, not their ids)" if isinstance(item, int) else "")
            )
    return list(found)


def token_line(path: Path, sentence: TaggedSentence, i: int, fmt: str) -> str:
    """ "FILE:LINE" of the i-th token of ``sentence`` (a CoNLL token is on the line after the one before it; a
    JSON Lines sentence is one line)."""
    first = int(sentence.id.rsplit(":", 1)[1])
    return f"{path}:{first + i if fmt == 'conll' else first}"


# --- schemes
def _parts(tag: str) -> tuple[str, str]:
    """(prefix, entity type) of an entity tag ("B-PER" → ("B", "PER")); ("O", "") for O."""
    prefix, _, entity = tag.partition("-")
    return (prefix, entity) if tag != "O" else ("O", "")


def detect_scheme(sentences: Sequence[TaggedSentence], path: Path, fmt: str) -> str:
    """The scheme of ``sentences``' tags: "none" when some tag is neither O nor a prefix and a type and no tag
    is one; IOBES when S- or E- occur; IOB1 when an I- tag starts an entity; IOB2 otherwise. A file mixing
    tags of a scheme with tags of none is refused at the first tag of none (a typo in an IOB file, say)."""
    schemed, plain = None, None
    for s in sentences:
        for i, tag in enumerate(s.tags):
            if tag == "O":
                continue
            if is_entity_tag(tag):
                schemed = schemed or (s, i)
            else:
                plain = plain or (s, i)
    if plain is None and schemed is None:
        return "IOB2"  # only O: no entity to spell
    if schemed is None:
        return "none"
    if plain is not None:
        s, i = plain
        t, j = schemed
        raise DataError(
            f"{token_line(path, s, i, fmt)}: tag {s.tags[i]!r} has no scheme prefix while "
            f"{t.tags[j]!r} ({token_line(path, t, j, fmt)}) has one; fix the tag, or give --tag-scheme none "
            "to score tags one by one"
        )
    tags = {tag for s in sentences for tag in s.tags}
    if any(_parts(tag)[0] in ("S", "E") for tag in tags):
        return "IOBES"
    for s in sentences:
        previous = "O"
        for tag in s.tags:
            prefix, entity = _parts(tag)
            if prefix == "I" and _parts(previous)[1] != entity:
                return "IOB1"
            previous = tag
    return "IOB2"


def _broken(scheme: str, previous: str, tag: str) -> tuple[str, int] | None:
    """Why ``tag`` after ``previous`` (O at a sentence's start; "" after its end) breaks ``scheme``, and which of
    the two is at fault (0: ``tag``, -1: ``previous``, an entity left open); None when it does not."""
    if scheme == "none":
        return None
    if tag and not is_entity_tag(tag):
        return "not O or a prefix and an entity type (e.g. B-PER)", 0
    prefix, entity = _parts(tag) if tag else ("", "")
    before, before_entity = _parts(previous)
    if scheme in ("IOB1", "IOB2") and prefix in ("E", "S"):
        return f"{prefix}- is IOBES's; {scheme} has B- and I- only", 0
    if scheme == "IOB2" and prefix == "I" and before_entity != entity:
        return f"I-{entity} after {previous}: in IOB2 every entity starts with B-", 0
    if scheme == "IOB1" and prefix == "B" and before_entity != entity:
        return (
            f"B-{entity} after {previous}: in IOB1 an entity starts with I-, B- only after one of its type",
            0,
        )
    if scheme == "IOBES":
        if prefix in ("I", "E") and (before not in ("B", "I") or before_entity != entity):
            return f"{tag} after {previous}: in IOBES it continues a B-{entity} or I-{entity}", 0
        if prefix not in ("I", "E") and before in ("B", "I"):
            then = f"{tag} follows" if tag else "the sentence ends"
            return f"{previous} is not continued ({then}): in IOBES it is followed by I- or E-", -1
    return None


def check_scheme(sentences: Sequence[TaggedSentence], scheme: str, path: Path, fmt: str, said: str) -> None:
    """Refuse the first tag of ``sentences`` that breaks ``scheme`` (``said``: where the scheme came from, for
    the message); mark each sentence with its scheme."""
    for s in sentences:
        s.scheme = scheme
        if scheme == "none":
            continue
        for i, (previous, tag) in enumerate(zip(["O", *s.tags], [*s.tags, ""], strict=True)):
            broken = _broken(scheme, previous, tag)
            if broken is not None:
                why, offset = broken
                wrong = previous if offset else tag
                at = token_line(path, s, i + offset, fmt)
                raise DataError(f"{at}: tag {wrong!r} is not {scheme} ({said}): {why}")


def check_labels(
    sentences: Sequence[TaggedSentence], labels: Sequence[str], path: Path, fmt: str, said: str
) -> None:
    """Refuse the first tag of ``sentences`` that is not one of ``labels`` (``said``: where they came from)."""
    known = set(labels)
    for s in sentences:
        for i, tag in enumerate(s.tags):
            if tag not in known:
                shown = ", ".join(labels[:12]) + (", …" if len(labels) > 12 else "")
                raise DataError(f"{token_line(path, s, i, fmt)}: tag {tag!r} is not {said} ({shown})")
