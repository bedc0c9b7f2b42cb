"""Reading SQuAD v1.1 and v2.0 JSON (Rajpurkar et al. 2016, 2018), the span-extraction task of BERT Sect. 4.2-4.3.

The layout, plain JSON or gzip (recognised by its magic bytes, so ``dev-v1.1.json.gz`` reads as is)::

    {"version": "1.1",
     "data": [{"title": "Normans",
               "paragraphs": [{"context": "The Normans … were the people who …",
                               "qas": [{"id": "56ddde6b9a695914005b9628",
                                        "question": "In what country is Normandy located?",
                                        "answers": [{"text": "France", "answer_start": 159}, …],
                                        "is_impossible": false}]}]}]}

``answer_start`` is a character offset into ``context``. SQuAD 2.0 adds ``is_impossible``: an unanswerable
question has ``"answers": []`` (its ``plausible_answers`` are ignored). Dev questions carry several reference
answers, train questions one.

Every answer is checked: ``context[start:start + len(text)]`` must be ``text``. A missing key, a value of
the wrong type, a failed check or a repeated question id raises a one-line
:class:`~seq2bert.errors.DataError` naming the file and the JSON path or question id, e.g.
``dev-v1.1.json: data[3].paragraphs[0].qas[2]: no 'question'``.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2bert.errors import DataError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]


@dataclass
class Answer:
    """A reference answer: its text and its character offset in the context."""

    text: str
    start: int

    @property
    def end(self) -> int:
        """One past the last character: ``context[start:end] == text``."""
        return self.start + len(self.text)


@dataclass
class QAExample:
    """One SQuAD question with its paragraph.

    Attributes:
        id: the question id (24 hex digits in the official files).
        title: the Wikipedia article's title.
        context: the paragraph the answer is taken from.
        question: the question.
        answers: the reference answers, in file order; empty for an unanswerable SQuAD 2.0 question.
        is_impossible: True for an unanswerable SQuAD 2.0 question.
    """

    id: str
    title: str
    context: str
    question: str
    answers: list[Answer] = field(default_factory=list)
    is_impossible: bool = False


def read_squad(path: PathLike) -> list[QAExample]:
    """Read the questions of a SQuAD v1.1 or v2.0 file (``.json`` or ``.json.gz``), in file order.

    Raises:
        DataError: a missing or unreadable file, invalid UTF-8 or JSON (file:line), a missing key or a
            wrong type (file and JSON path), an answer that does not match its context span, an
            answerable question without answers or an unanswerable one with answers, a repeated id.
    """
    path = Path(path)
    root = _load_json(path)
    reader = _Reader(path)
    reader.expect(root, dict, "")
    data = reader.get(root, "data", list, "")
    examples: list[QAExample] = []
    seen: set[str] = set()
    for a, article in enumerate(data):
        at = f"data[{a}]"
        reader.expect(article, dict, at)
        title = reader.get(article, "title", str, at, default="")
        for p, paragraph in enumerate(reader.get(article, "paragraphs", list, at)):
            pat = f"{at}.paragraphs[{p}]"
            reader.expect(paragraph, dict, pat)
            context = reader.get(paragraph, "context", str, pat)
            for q, qa in enumerate(reader.get(paragraph, "qas", list, pat)):
                example = reader.question(qa, f"{pat}.qas[{q}]", title, context)
                if example.id in seen:
                    raise DataError(f"{path}: question {example.id!r} ({pat}.qas[{q}]): id repeated")
                seen.add(example.id)
                examples.append(example)
    impossible = sum(e.is_impossible for e in examples)
    logger.info("read %d questions (%d unanswerable) from %s", len(examples), impossible, path)
    return examples


_REQUIRED = object()


class _Reader:
    """Typed access to the parsed JSON, with errors that name the file and the JSON path."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def expect(self, value: Any, kind: type, at: str) -> None:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            where = f"{at}: " if at else ""
            raise DataError(
                f"{self.path}: {where}expected {_JSON_NAMES[kind]}, got {_JSON_NAMES.get(type(value), 'a value')}"
            )

    def get(self, obj: dict, key: str, kind: type, at: str, default: Any = _REQUIRED) -> Any:
        if key not in obj:
            if default is not _REQUIRED:
                return default
            where = f"{at}: " if at else ""
            raise DataError(f"{self.path}: {where}no {key!r}")
        value = obj[key]
        self.expect(value, kind, f"{at}.{key}" if at else key)
        return value

    def question(self, qa: Any, at: str, title: str, context: str) -> QAExample:
        self.expect(qa, dict, at)
        id_ = self.get(qa, "id", str, at)
        question = self.get(qa, "question", str, at)
        is_impossible = self.get(qa, "is_impossible", bool, at, default=False)
        answers = []
        for i, answer in enumerate(self.get(qa, "answers", list, at)):
            aat = f"{at}.answers[{i}]"
            self.expect(answer, dict, aat)
            text = self.get(answer, "text", str, aat)
            start = self.get(answer, "answer_start", int, aat)
            if context[start : start + len(text)] != text or start < 0:
                found = context[max(start, 0) : max(start, 0) + len(text)]
                raise DataError(
                    f"{self.path}: question {id_!r} ({aat}): answer {text!r} is not at answer_start={start} "
                    f"of the context (found {found!r} there)"
                )
            answers.append(Answer(text=text, start=start))
        if is_impossible and answers:
            raise DataError(
                f"{self.path}: question {id_!r} ({at}): is_impossible is true but it has {len(answers)} "
                "answer(s) (expected none)"
            )
        if not is_impossible and not answers:
            raise DataError(
                f"{self.path}: question {id_!r} ({at}): no answers (expected at least one, "
                "or is_impossible: true)"
            )
        return QAExample(id_, title, context, question, answers, is_impossible)


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", bool: "true or false"}
_JSON_NAMES.update({float: "a number", type(None): "null"})


def _load_json(path: Path) -> Any:
    if not path.exists():
        raise DataError(f"no such file: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a directory (expected a SQuAD .json or .json.gz file)")
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except OSError as err:  # includes gzip.BadGzipFile
        raise DataError(f"cannot read {path}: {err.strerror or err}") from None
    except (EOFError, zlib.error) as err:
        raise DataError(f"{path}: corrupt gzip data ({err}); expected a complete gzip file") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DataError(f"{path}:{line}: invalid UTF-8 (expected a UTF-8 JSON file)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: invalid JSON at column {err.colno}: {err.msg}") from None
