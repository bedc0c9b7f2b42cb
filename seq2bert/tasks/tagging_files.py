"""token-classification: a tag per word of a user's files — named entities, chunks, part-of-speech tags, any
label set — the ``token_tagging`` shape of tasks/shapes.py (CoNLL-2003's) over ``--train`` / ``--valid`` /
``--test`` files instead of a folder:

    seq2bert finetune --task token-classification --init DIR --train train.txt --valid dev.txt --out runs/ner
    seq2bert finetune --task token-classification --init DIR --train train.txt --valid dev.txt \\
        --label-column 1 --out runs/pos                          # CoNLL-2003's POS tags: token accuracy

The files are CoNLL-style columns or JSON Lines of tokens and tags (data/tagged_files.py). The run's settings
(tasks/data.py ``FinetuneDataConfig``) say, beside the files:

    label_column   the tag's column of a CoNLL file, 0-based (0: the word; default: the last column)
    labels         the tag names in order; default: the training file's, in data/conll.py ``label_list``'s
                   order (O first, then grouped by entity type: the same ids as the named task conll2003),
                   kept in run.json (tasks/data.py ``with_labels``)
    tag_scheme     IOB1 | IOB2 | IOBES | none; default: detected from the training file

Every file is checked against the scheme, and a validation or test tag that is not a label (unseen in
training, or not one of --labels) is refused, naming the file and line. The scores follow the scheme
(evaluation/tasks.py ``tagging_metrics``): entity F1 — seqeval's strict mode for IOB2 and IOBES, conlleval's
rules for IOB1 — and token accuracy, which is the main metric of tags of no scheme.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from seq2bert.data.conll import TaggedSentence, label_list
from seq2bert.data.paths import require_file
from seq2bert.data.tagged_files import (
    SCHEMES,
    check_labels,
    check_scheme,
    detect_scheme,
    read_tagged,
    tagged_format,
)
from seq2bert.errors import ConfigError, DataError
from seq2bert.evaluation.tasks import tagging_metrics
from seq2bert.tasks.shapes import token_tagging


@lru_cache(maxsize=8)
def _read(path: Path, stamp: tuple[int, int], fmt: str, label_column: str, text_column: str):
    """A file's sentences, read once per content (``stamp``: its modification time and size)."""
    return read_tagged(path, fmt, label_column=label_column, text_column=text_column)


def _sentences(path: Path, settings) -> list[TaggedSentence]:
    path = require_file(Path(path), "", "a file of tagged sentences")
    stat = path.stat()
    return _read(
        path, (stat.st_mtime_ns, stat.st_size), settings.format, settings.label_column, settings.text_column
    )


def _train(settings) -> list[TaggedSentence]:
    if not settings.train:
        raise DataError(
            "data.train: empty (token-classification finds its tags and their scheme in the training file; "
            "give --train FILE, or --labels and --tag-scheme)"
        )
    return _sentences(Path(settings.train), settings)


def scheme_of(settings) -> str:
    """The run's tag scheme: data.tag_scheme, or the training file's (detected)."""
    if settings.tag_scheme:
        if settings.tag_scheme not in SCHEMES:
            raise ConfigError(
                f"data.tag_scheme: expected one of {', '.join(SCHEMES)}, got {settings.tag_scheme!r}"
            )
        return settings.tag_scheme
    sentences = _train(settings)
    return detect_scheme(
        sentences, Path(settings.train), tagged_format(Path(settings.train), settings.format)
    )


def train_labels(path: Path, settings) -> list[str]:
    """The tags of the training file, in data/conll.py ``label_list``'s order (all of the file: a subset of
    it may miss a rare tag)."""
    return label_list(_sentences(path, settings))


def read_user_tags(path: Path, settings) -> list[TaggedSentence]:
    """The sentences of one of the run's files, checked against the scheme (each marked with it) and against
    the labels (settings.labels: --labels, or the training file's, tasks/data.py ``with_labels``)."""
    path = Path(path)
    sentences = _sentences(path, settings)
    fmt = tagged_format(path, settings.format)
    is_train = bool(settings.train) and path == Path(settings.train)
    scheme = scheme_of(settings)
    said = (
        "as --tag-scheme says"
        if settings.tag_scheme
        else ("detected from its tags" if is_train else f"the scheme of {settings.train}")
    )
    check_scheme(sentences, scheme, path, fmt, said)
    labels = list(settings.labels)
    found = bool(settings.train) and labels == train_labels(Path(settings.train), settings)
    if not (found and is_train):  # the training file's own tags are the labels found in it
        check_labels(
            sentences, labels, path, fmt, f"a tag of {settings.train}" if found else "one of --labels"
        )
    return sentences


def _metrics(examples: list, predictions: list) -> dict[str, float]:
    """Scores in the scheme the examples were read in (each marked by read_user_tags)."""
    return tagging_metrics(
        [e.tags for e in examples], predictions, examples[0].scheme if examples else "none"
    )


def _main_metric(settings) -> str:
    return "accuracy" if scheme_of(settings) == "none" else "f1"


TOKEN_CLASSIFICATION = token_tagging(
    "token-classification",
    files={},
    reader=read_user_tags,
    find_labels=train_labels,
    metrics=_metrics,
    main_metric=_main_metric,
    user_files=True,
)
