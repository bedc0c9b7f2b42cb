"""Metrics of the fine-tuning tasks: GLUE, CoNLL-2003 NER, SQuAD v1.1/v2.0. Every score is in % (0-100).

* GLUE (Wang et al. 2018): accuracy, F1 of the positive class (MRPC, QQP), Matthews correlation (CoLA),
  Pearson and Spearman correlation (STS-B), through scikit-learn and scipy. Each task's metrics and the one
  that picks the best checkpoint are in :data:`seq2bert.data.glue.GLUE_TASKS`; any classification task
  (SWAG's choices, a task of your own) is scored by the same functions (:func:`classification_metrics`).
* NER: entity-level precision, recall and F1 as in the CoNLL-2003 ``conlleval`` script, through seqeval
  (its default mode: an entity is a maximal B-/I- run of one type, and a stray I- starts one); an entity
  counts only when both its boundaries and its type are right.
* SQuAD (Rajpurkar et al. 2016, 2018): exact match and token F1 after the normalisation of the official
  ``evaluate-v1.1.py`` / ``evaluate-v2.0.py`` scripts, the best score over the reference answers.
"""

from __future__ import annotations

import re
import string
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from scipy import stats
from seqeval import metrics as seqeval
from seqeval import scheme as seqeval_scheme
from sklearn import metrics as sklearn

from seq2bert.data.glue import GlueTask, get_glue_task
from seq2bert.data.squad import QAExample

# ---------------------------------------------------------------------------------------------------------
# GLUE


def glue_metrics(task: str | GlueTask, predictions: Sequence, labels: Sequence) -> dict[str, float]:
    """The metrics of a GLUE task, in %: ``{"accuracy": 91.2, "f1": 88.0}`` for MRPC; keys = ``task.metrics``.

    Args:
        task: the task or its name.
        predictions: predicted class ids (a float score for STS-B), one per example.
        labels: the true class ids (scores for STS-B).

    Matthews and the correlations are multiplied by 100 like the others. A correlation is undefined when
    either side is constant (e.g. a model that predicts one class); it is reported as 0, as scikit-learn
    does for Matthews.
    """
    return classification_metrics(get_glue_task(task).metrics, predictions, labels)


def classification_metrics(names: Sequence[str], predictions: Sequence, labels: Sequence) -> dict[str, float]:
    """The metrics ``names`` (of :data:`CLASSIFICATION_METRICS`) of class ids or scores, in %; see
    :func:`glue_metrics`, which gives a GLUE task's."""
    unknown = [name for name in names if name not in CLASSIFICATION_METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {', '.join(CLASSIFICATION_METRICS)}")
    if len(predictions) != len(labels):
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels")
    if len(labels) == 0:
        raise ValueError("no examples to score")
    y_pred, y_true = np.asarray(predictions), np.asarray(labels)
    scores = {name: 100.0 * CLASSIFICATION_METRICS[name](y_true, y_pred) for name in names}
    return {name: float(value) for name, value in scores.items()}


def _f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """F1 of class 1 (MRPC "equivalent", QQP "duplicate")."""
    return sklearn.f1_score(y_true, y_pred, pos_label=1, average="binary", zero_division=0)


def _correlation(function: Callable) -> Callable[[np.ndarray, np.ndarray], float]:
    """Wrap ``scipy.stats.pearsonr`` or ``spearmanr``: the coefficient, 0 when either side is constant."""

    def correlation(y_true: np.ndarray, y_pred: np.ndarray) -> float:
        y_true, y_pred = y_true.astype(float), y_pred.astype(float)
        if np.ptp(y_true) == 0 or np.ptp(y_pred) == 0:
            return 0.0  # undefined: a constant has no variance
        return function(y_true, y_pred)[0]

    return correlation


def _f1_macro(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """The unweighted mean of every class's F1 (the classes in either side)."""
    return sklearn.f1_score(y_true, y_pred, average="macro", zero_division=0)


CLASSIFICATION_METRICS = {
    "accuracy": sklearn.accuracy_score,
    "f1": _f1,
    "f1_macro": _f1_macro,
    "matthews": sklearn.matthews_corrcoef,
    "pearson": _correlation(stats.pearsonr),
    "spearman": _correlation(stats.spearmanr),
}


# ---------------------------------------------------------------------------------------------------------
# Multi-label classification: each example has a set of the K classes (a row of 0/1 over K)


def multi_label_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Micro F1 (over every example-class decision) and macro F1 (the mean of the K classes' F1) of 0/1
    matrices (N, K), in %, through scikit-learn."""
    if y_true.shape != y_pred.shape or y_true.ndim != 2 or len(y_true) == 0:
        raise ValueError(f"expected two (N, K) matrices of N > 0, got {y_true.shape} and {y_pred.shape}")
    return {
        name: 100.0 * float(sklearn.f1_score(y_true, y_pred, average=name.split("_")[0], zero_division=0))
        for name in ("micro_f1", "macro_f1")
    }


THRESHOLDS = np.round(np.arange(0.01, 1.0, 0.01), 2)  # the decision thresholds tried on σ(z)


def best_threshold(y_true: np.ndarray, probs: np.ndarray) -> float:
    """The threshold t of THRESHOLDS whose decisions σ(z) ≥ t maximise micro F1 = 2TP / (2TP + FP + FN) on
    (N, K) gold 0/1 and probabilities; the lowest of equal ones."""
    gold = y_true.astype(bool)[None]  # (1, N, K)
    chosen = probs[None] >= THRESHOLDS[:, None, None]  # (S, N, K)
    tp = (chosen & gold).sum((1, 2))
    wrong = (chosen ^ gold).sum((1, 2))  # FP + FN
    f1 = np.where(2 * tp + wrong > 0, 2 * tp / np.maximum(2 * tp + wrong, 1), 0.0)
    return float(THRESHOLDS[int(np.argmax(f1))])


# ---------------------------------------------------------------------------------------------------------
# Named-entity recognition


def ner_metrics(
    true_tags: list[list[str]], pred_tags: list[list[str]], *, strict: str | None = None
) -> dict[str, float]:
    """Entity-level scores of tagged sentences, in %, through seqeval (IOB2 tags, conlleval rules; ``strict``
    "IOB2" or "IOBES": seqeval's strict mode in that scheme, where only a well-formed entity is one).

    Returns:
        ``{"precision", "recall", "f1"}`` (micro-averaged over entities), ``"accuracy"`` (of tokens), and
        ``"f1_{TYPE}"`` for each entity type in either the truth or the predictions, e.g. ``"f1_PER"``.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"{len(pred_tags)} predicted sentences for {len(true_tags)} true ones")
    for i, (true, pred) in enumerate(zip(true_tags, pred_tags, strict=True)):
        if len(true) != len(pred):
            raise ValueError(f"sentence {i}: {len(pred)} predicted tags for {len(true)} tokens")
    mode = {} if strict is None else {"mode": "strict", "scheme": getattr(seqeval_scheme, strict)}
    scores = {
        "precision": seqeval.precision_score(true_tags, pred_tags, zero_division=0, **mode),
        "recall": seqeval.recall_score(true_tags, pred_tags, zero_division=0, **mode),
        "f1": seqeval.f1_score(true_tags, pred_tags, zero_division=0, **mode),
        "accuracy": seqeval.accuracy_score(true_tags, pred_tags),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns about types with no true entity
        report = seqeval.classification_report(
            true_tags, pred_tags, output_dict=True, zero_division=0, **mode
        )
    for entity_type, row in sorted(report.items()):
        if not entity_type.endswith(" avg"):
            scores[f"f1_{entity_type}"] = row["f1-score"]
    return {name: 100.0 * float(value) for name, value in scores.items()}


def tagging_metrics(
    true_tags: list[list[str]], pred_tags: list[list[str | None]], scheme: str
) -> dict[str, float]:
    """Scores of tagged sentences in the tag scheme of their file (data/tagged_files.py), in %.

    ``"none"`` (part-of-speech tags, any label set): ``{"accuracy"}`` of tokens. IOB1: :func:`ner_metrics`,
    conlleval's rules (which IOB1 is written for). IOB2 / IOBES: seqeval's strict mode in that scheme — a
    predicted I-PER after O starts no entity — with ``"f1_conlleval"``, the F1 by conlleval's rules, beside
    it (what CoNLL-2003 results and the named task conll2003 report). A word not predicted (None: cut by the
    length, in a label set without O) is wrong, and no entity.
    """
    if scheme == "none":
        return {"accuracy": 100.0 * float(seqeval.accuracy_score(true_tags, pred_tags))}
    pred_tags = [[tag or "O" for tag in tags] for tags in pred_tags]
    conlleval = ner_metrics(true_tags, pred_tags)
    if scheme == "IOB1":
        return conlleval
    return {**ner_metrics(true_tags, pred_tags, strict=scheme), "f1_conlleval": conlleval["f1"]}


# ---------------------------------------------------------------------------------------------------------
# SQuAD: the normalisation and scores of the official evaluate-v1.1.py and evaluate-v2.0.py

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)  # ASCII only, as in the official scripts


def normalize_answer(s: str) -> str:
    """Lowercase, drop ASCII punctuation, drop the words a/an/the, collapse whitespace (in that order).

    >>> normalize_answer("The  Cat!")
    'cat'
    """
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def squad_exact_match(prediction: str, gold: str) -> float:
    """1.0 when the two answers are equal after :func:`normalize_answer`, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def squad_f1(prediction: str, gold: str, *, version: Literal["1.1", "2.0"] = "2.0") -> float:
    """Token F1 between two answers after :func:`normalize_answer` (tokens = whitespace-split words).

    Precision is the share of predicted tokens that are in the gold answer, counted as a bag (a token twice
    in both counts twice), recall the share of gold tokens predicted. The two scripts differ only when an
    answer is empty after normalisation: evaluate-v2.0.py (the default) scores "no answer" against "no
    answer" 1.0, evaluate-v1.1.py scores it 0.0.
    """
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if version == "2.0" and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_metrics(
    predictions: dict[str, str], examples: Sequence[QAExample], *, version_2: bool | None = None
) -> dict[str, float]:
    """Exact match and F1 over all questions, in %, each the best over the question's reference answers.

    A question without a prediction counts as predicting "" (no answer): the official v1.1 script scores
    it 0 too, while the v2.0 script leaves it out of the totals. Predictions for other ids are ignored.

    ``version_2`` True (or None and any example ``is_impossible``) scores as ``evaluate-v2.0.py`` does: the
    references of an unanswerable question are ``[""]``, so "" scores 1 on it, and the result adds
    ``HasAns_exact``, ``HasAns_f1``, ``NoAns_exact``, ``NoAns_f1`` and the counts ``HasAns_total``,
    ``NoAns_total``. Otherwise it is scored as ``evaluate-v1.1.py`` does.

    Returns:
        ``{"exact_match": …, "f1": …}`` (and the v2.0 keys).
    """
    if not examples:
        raise ValueError("no examples to score")
    v2 = any(example.is_impossible for example in examples) if version_2 is None else version_2
    version: Literal["1.1", "2.0"] = "2.0" if v2 else "1.1"
    exact, f1 = [], []
    for example in examples:
        prediction = predictions.get(example.id, "")
        golds = [answer.text for answer in example.answers]
        if v2:  # evaluate-v2.0.py drops references that normalise to nothing; none left means "no answer"
            golds = [gold for gold in golds if normalize_answer(gold)] or [""]
        exact.append(max(squad_exact_match(prediction, gold) for gold in golds))
        f1.append(max(squad_f1(prediction, gold, version=version) for gold in golds))
    scores = {"exact_match": _percent(exact), "f1": _percent(f1)}
    if v2:
        for name, keep in (("HasAns", True), ("NoAns", False)):
            chosen = [i for i, example in enumerate(examples) if bool(example.answers) == keep]
            if chosen:
                scores[f"{name}_exact"] = _percent([exact[i] for i in chosen])
                scores[f"{name}_f1"] = _percent([f1[i] for i in chosen])
            scores[f"{name}_total"] = float(len(chosen))
    return scores


def _percent(values: list[float]) -> float:
    return 100.0 * sum(values) / len(values)
