"""The sentence-embedding task over a user's files: `seq2bert finetune --task sentence-embedding --init DIR
--train FILE --valid FILE` trains a bi-encoder (recipes/sentence_embedding.py) on one of four shapes of
training data, told by the columns given:

    sentences        one text per row (a .txt file of one sentence per line, or a table's --text-column
                     alone), or a folder of books (its *.txt files' running text, cut into sentences):
                     unsupervised SimCSE (Gao et al. 2021), each sentence its own positive
    pairs            --text-column and --pair-column: (anchor, positive), the other positives of a batch its
                     negatives (the multiple negatives ranking loss)
    scored pairs     pairs with a score in --label-column (the column present in the file): a gold
                     similarity in [0, 1], or an STS score in [0, 5] (a file whose highest score is above 1 is
                     divided by 5) — CoSENT by default
    triplets         pairs with --set data.negative_column=COLUMN: a hard negative for each anchor

The validation file is pairs: scored, it is scored by the Spearman (and Pearson) correlation of the cosine
similarity with the gold score, in % (STS-B's measure); unscored (or triplets), by recall@1 — how often the
anchor's own positive is the nearest of all the file's positives (and negatives) — and the mean reciprocal
rank. Every flaw of a file is a one-line DataError naming its file and line: an empty text, a score that is not
a number or out of [0, 5], a file of sentences without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from seq2bert.data.paths import require_file
from seq2bert.data.pretraining import Skipped, iter_paragraphs, split_sentences, text_files
from seq2bert.data.tables import columns, number_value, require_columns, rows, text_value
from seq2bert.errors import DataError
from seq2bert.evaluation.tasks import classification_metrics
from seq2bert.tasks.task import Task

MAX_STS_SCORE = 5.0  # STS-B's scores run from 0 (unrelated) to 5 (the same meaning)
SENTENCE_FILES = (".txt", ".text")  # read as one sentence per line
MIN_WORDS = 4  # a book's shorter "sentences" (CHAPTER I., “Yes.”) are left out of SimCSE's
RANKED = 256  # anchors ranked against all candidates at a time (recall@1), to bound the (n, N) scores


@dataclass(frozen=True)
class EmbeddingExample:
    """One row: its texts — (sentence,), (anchor, positive) or (anchor, positive, negative) — and the gold
    similarity of a scored pair, in [0, 1] (None: unscored)."""

    id: int
    texts: tuple[str, ...]
    score: float | None = None
    where: str = ""


def shape(examples: list[EmbeddingExample]) -> str:
    """ "sentences", "pairs", "scored" or "triplets" (the examples of one file share theirs)."""
    first = examples[0]
    if len(first.texts) == 1:
        return "sentences"
    if len(first.texts) == 3:
        return "triplets"
    return "scored" if first.score is not None else "pairs"


# --- reading
def read_sentences(path: Path) -> list[EmbeddingExample]:
    """A text file of one sentence per line (blank lines skipped)."""
    path = require_file(Path(path), "", "a text file of one sentence per line")
    out = []
    with open(path, "rb") as file:
        for lineno, raw in enumerate(file, 1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8").strip()
            except UnicodeDecodeError as err:
                raise DataError(
                    f"{path}:{lineno}: not UTF-8 text ({err.reason} at byte {err.start})"
                ) from None
            if line:
                out.append(EmbeddingExample(len(out), (line,), where=f"{path}:{lineno}"))
    if not out:
        raise DataError(f"{path}:1: no sentences (expected a text file of one sentence per line)")
    return out


def read_books(folder: Path) -> list[EmbeddingExample]:
    """The sentences of a folder's *.txt files read as running text — paragraphs at blank lines (of a
    Project Gutenberg book, its body alone), cut at sentence ends (data/pretraining.py's splitter) — of at
    least ``MIN_WORDS`` words."""
    out = []
    for path in text_files([str(folder)], "data.train"):
        for paragraph in iter_paragraphs(path, "blank_line", False, Skipped()):
            for sentence in split_sentences(paragraph) if paragraph else ():
                if len(sentence.split()) >= MIN_WORDS:
                    out.append(EmbeddingExample(len(out), (sentence,), where=str(path)))
    if not out:
        raise DataError(f"{folder}: no sentences of {MIN_WORDS} words or more in its *.txt files")
    return out


def _score(where: str, row: dict, column: str) -> float:
    """The number in ``row[column]``: a float in [0, 5] (a CSV's text "4.2", a JSON number)."""
    score = number_value(where, row, column, "a similarity score")
    if not 0.0 <= score <= MAX_STS_SCORE:
        raise DataError(
            f"{where}: column {column!r} holds {score:g}, out of range (expected a similarity in [0, 1], "
            f"or an STS score in [0, {MAX_STS_SCORE:g}])"
        )
    return score


def read_examples(path: Path, settings) -> list[EmbeddingExample]:
    """The examples of one file, its shape told by the columns ``settings`` (the data section) names: a
    .txt file (or a table without a pair column) is sentences; a pair column makes pairs, scored when the
    label column is in the file, triplets with a negative column. STS scores (above 1) are divided by 5."""
    path = Path(path)
    if path.is_dir():
        return read_books(path)
    if path.suffix.lower() in SENTENCE_FILES and not settings.format:
        return read_sentences(path)
    fmt = settings.format or None
    have = columns(require_file(path, "", "a table of texts (CSV, TSV, JSON Lines, Parquet)"), fmt)
    text, pair = settings.text_column, settings.pair_column or None
    negative = getattr(settings, "negative_column", "") or None
    if negative and not pair:
        raise DataError("data.negative_column: triplets need a positive too (give --pair-column)")
    require_columns(path, have, {"--text-column": text, "--pair-column": pair})
    negative = negative if negative in have else None  # a validation file of pairs (require_triplets)
    scored = pair is not None and negative is None and settings.label_column in have
    wanted = [c for c in (text, pair, negative) if c]
    out = []
    for where, row in rows(path, fmt, what="a table of texts"):
        texts = tuple(text_value(where, row, c) for c in wanted)
        score = _score(where, row, settings.label_column) if scored else None
        out.append(EmbeddingExample(len(out), texts, score, where))
    if scored and max(e.score for e in out) > 1.0:  # STS's 0–5 scale → [0, 1]
        out = [EmbeddingExample(e.id, e.texts, e.score / MAX_STS_SCORE, e.where) for e in out]
    return out


# --- features: the token ids of each text (a sentence twice: SimCSE's two views, dropout between them)
def encode_texts(task: Task, examples, tok, label2id, settings, *, progress=False, words=False) -> list[dict]:
    flat = [t for e in examples for t in (e.texts * 2 if len(e.texts) == 1 else e.texts)]
    per = len(flat) // len(examples) if examples else 0
    encodings = tok.encode_batch(flat, max_length=settings.seq_length, truncation="longest_first").encodings
    features = []
    for i, e in enumerate(examples):
        group = encodings[i * per : (i + 1) * per]
        feature = {"input_ids": [g.ids for g in group], "token_type_ids": [g.type_ids for g in group]}
        if e.score is not None:
            feature["score"] = e.score
        features.append(feature)
    return features


# --- predictions and scores: ``outputs`` holds each example's vectors (C, H), one per text
def ranks(outputs: list[torch.Tensor]) -> list[int]:
    """The rank of each anchor's own positive among all the positives (and negatives) of the examples, by
    cosine similarity: 1 + how many candidates are strictly nearer."""
    vectors = F.normalize(torch.stack([o.float() for o in outputs]), dim=-1)  # (n, C, H)
    anchors, candidates = vectors[:, 0], vectors[:, 1:].transpose(0, 1).reshape(-1, vectors.shape[-1])
    out = []
    for start in range(0, len(anchors), RANKED):
        scores = anchors[start : start + RANKED] @ candidates.T  # (k, n·(C−1)): positives, then negatives
        own = scores[torch.arange(len(scores)), torch.arange(start, start + len(scores))]  # (k,)
        out += (1 + (scores > own[:, None]).sum(1)).tolist()
    return out


def decode(task: Task, outputs: list, examples, features, id2label, settings) -> list:
    """A scored pair's cosine similarity; an unscored pair's (or triplet's) rank of its positive."""
    if shape(examples) == "scored":
        return [float(F.cosine_similarity(o[0].float(), o[1].float(), dim=0)) for o in outputs]
    return ranks(outputs)


def metrics(examples: list, predictions: list) -> dict[str, float]:
    """Scored pairs: Spearman and Pearson of the cosines with the gold scores; else recall@1 and MRR, in %."""
    if shape(examples) == "scored":
        return classification_metrics(("spearman", "pearson"), predictions, [e.score for e in examples])
    return {
        "recall_at_1": 100.0 * sum(r == 1 for r in predictions) / len(predictions),
        "mrr": 100.0 * sum(1.0 / r for r in predictions) / len(predictions),
    }


def main_metric(examples: list) -> str:
    """The metric the best checkpoint is chosen by, for these validation examples."""
    return "spearman" if shape(examples) == "scored" else "recall_at_1"


def require_triplets(settings, examples: list) -> None:
    """With data.negative_column, the training file must have it (a validation file may be pairs)."""
    if settings.negative_column and shape(examples) == "sentences":
        raise DataError(f"data.negative_column: {settings.train} holds single sentences, not triplets")
    if settings.negative_column and shape(examples) != "triplets":
        have = columns(Path(settings.train), settings.format or None)
        require_columns(Path(settings.train), have, {"data.negative_column": settings.negative_column})


def check_valid(examples: list, path: str) -> None:
    """A validation file must be pairs (sentences alone have nothing to compare)."""
    if shape(examples) == "sentences":
        raise DataError(
            f"{path}: single sentences; the validation file needs pairs (--pair-column: scored pairs, "
            "e.g. STS-B's sentence1, sentence2, score, or pairs of a text and its positive)"
        )


SENTENCE_EMBEDDING = Task(
    name="sentence-embedding",
    head="embedding",
    files={},
    reader=read_examples,
    encode=encode_texts,
    decode=decode,
    metrics=metrics,
    main_metric="spearman",
    texts=lambda e: e.texts,
    max_seq_length=128,
    gold=lambda e: e.score,
    decoder_shape=None,
    user_files=True,
)
