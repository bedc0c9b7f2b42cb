"""The generic tasks over a user's own files: one ``Task`` record each, built from the shapes of the named tasks
(tasks/shapes.py) with readers of a user's tables (data/user_files.py) or SQuAD-format JSON (data/squad.py):

    text-classification   a text → a class                          the shape of SST-2
    text-pair             two texts → a class                       the shape of MRPC, QNLI, MNLI
    regression            a text or a pair → a number               the shape of STS-B
    multi-label           a text or a pair → a set of classes        σ and BCE on each output, a threshold
    multiple-choice       a context → the right one of its choices  the shape of SWAG
    question-answering    a question and a paragraph → its answer   the shape of SQuAD (v2.0's unanswerable
                                                                    questions when a file has them)

    seq2bert finetune --task text-classification --init DIR --train train.csv --valid dev.csv --out runs/x

Their files are the run's data keys (``--train``, ``--valid``, ``--test``; tasks/data.py), not a folder; the
columns are ``--text-column``, ``--pair-column``, ``--label-column``, ``--choice-columns``. The classes of a
classification are ``--labels`` or those of the training file (sorted; numerically when all are integers),
recorded in the run's run.json so ``seq2bert evaluate RUN`` reads the same ids.

Scores: a classification's accuracy, F1 (of the second class, the positive one, for two classes; else the mean
of the classes' F1, "f1_macro", reported for any number) and Matthews' correlation; a regression's Pearson and
Spearman correlations; a multi-label's micro and macro F1 at the threshold on σ(z) that maximises micro F1 on
the validation file (``threshold``, tuned at each evaluation; ``data.threshold`` fixes it), which the best
checkpoint's config.json keeps (``multi_label_threshold``) for the test file and later predictions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seq2bert.data.finetuning import collate, encode_sequences
from seq2bert.data.squad import read_squad
from seq2bert.data.user_files import find_labels, read_choices, read_label_sets, read_scores, read_texts
from seq2bert.evaluation.tasks import best_threshold, classification_metrics, multi_label_metrics
from seq2bert.tasks.shapes import multiple_choice, span_extraction, text_classification
from seq2bert.tasks.task import Task

THRESHOLD_KEY = "multi_label_threshold"  # config.json's key of a multi-label model's tuned threshold


# --- classification: the classes are the run's, so the F1 asked of two classes differs from that of more
def _class_metrics(examples: list, predictions: list) -> dict[str, float]:
    """accuracy, f1 (two classes: of class 1; more: macro), f1_macro, matthews."""
    gold = [e.label for e in examples]
    scores = classification_metrics(("accuracy", "f1_macro", "matthews"), predictions, gold)
    two = max(max(gold), max(predictions)) <= 1
    scores["f1"] = classification_metrics(("f1",), predictions, gold)["f1"] if two else scores["f1_macro"]
    return scores


def _classification(
    name: str, reader, *, metrics=None, main_metric: str = "accuracy", decoder_shape: str | None = None
) -> Task:
    task = text_classification(
        name,
        files={},
        reader=reader,
        labels=(),
        main_metric=main_metric,
        decoder_shape=decoder_shape,
        user_files=True,
    )
    return replace(task, metrics=metrics or _class_metrics, labels=None, find_labels=find_labels)


# --- multi-label: σ(z_k) ≥ t for each class k
@dataclass(frozen=True)
class LabelSet:
    """A multi-label prediction: the classes chosen, every class's σ(z), the threshold that chose them."""

    ids: tuple[int, ...]
    scores: tuple[float, ...]
    threshold: float


def _multi_hot(ids, k: int) -> list[float]:
    row = [0.0] * k
    for i in ids:
        row[i] = 1.0
    return row


def _encode_label_sets(task: Task, examples, tok, label2id, settings, *, progress=False, words=False):
    """Features of a text classification, the labels a multi-hot row over the K classes."""
    features = encode_sequences(examples, tok, settings.seq_length, progress=progress, words=words)
    for f in features:
        if "labels" in f:
            f["labels"] = _multi_hot(f["labels"], len(label2id))
    return features


def _collate_label_sets(features, pad_token_id: int) -> dict:
    """A batch with labels (B, K) of floats, the targets of BCE."""
    batch = collate([{k: v for k, v in f.items() if k != "labels"} for f in features], pad_token_id)
    if "labels" in features[0]:
        batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=torch.float)
    return batch


def _decode_label_sets(task: Task, outputs: list, examples, features, id2label, settings) -> list[LabelSet]:
    """σ(z) of each class; the classes at or above ``settings.threshold``, or — 0, and labelled examples —
    the threshold that maximises their micro F1 (else 0.5)."""
    probs = torch.sigmoid(torch.stack([o.float() for o in outputs])).numpy() if outputs else np.zeros((0, 0))
    threshold = settings.threshold
    if not threshold:
        labelled = all(e.label is not None for e in examples) and len(examples) > 0
        threshold = best_threshold(_gold(examples, probs.shape[1]), probs) if labelled else 0.5
    return [
        LabelSet(tuple(int(i) for i in np.flatnonzero(p >= threshold)), tuple(float(x) for x in p), threshold)
        for p in probs
    ]


def _gold(examples: list, k: int) -> np.ndarray:
    return np.array([_multi_hot(e.label, k) for e in examples], dtype=np.int64).reshape(len(examples), k)


def _label_set_metrics(examples: list, predictions: list[LabelSet]) -> dict[str, float]:
    k = len(predictions[0].scores)
    chosen = np.array([_multi_hot(p.ids, k) for p in predictions], dtype=np.int64)
    return {**multi_label_metrics(_gold(examples, k), chosen), "threshold": predictions[0].threshold}


def _multi_label() -> Task:
    task = _classification("multi-label", read_label_sets, metrics=_label_set_metrics, main_metric="micro_f1")
    return replace(
        task,
        problem_type="multi_label_classification",
        find_labels=partial(find_labels, multi=True),
        encode=_encode_label_sets,
        decode=_decode_label_sets,
        collate=_collate_label_sets,
        augmentable=False,
    )


def _regression() -> Task:
    task = text_classification(
        "regression",
        files={},
        reader=read_scores,
        labels=None,
        metrics=("pearson", "spearman"),
        decoder_shape="similarity",
        user_files=True,
    )
    return task


def _multiple_choice() -> Task:
    return multiple_choice("multiple-choice", files={}, reader=read_choices, user_files=True)


def _read_squad(path: Path, settings: Any) -> list:
    return read_squad(path)


def _question_answering() -> Task:
    task = span_extraction("question-answering", reader=_read_squad, version_2=None, user_files=True)
    return replace(task, files={})


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        _classification("text-classification", read_texts, decoder_shape="classification"),
        _classification("text-pair", partial(read_texts, pair=True), decoder_shape="entailment"),
        _regression(),
        _multi_label(),
        _multiple_choice(),
        _question_answering(),
    )
}
