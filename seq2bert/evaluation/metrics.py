"""Metrics for sequence-to-sequence models: token accuracy, exact match, BLEU (through sacrebleu), perplexity."""

from __future__ import annotations

import math
from collections.abc import Sequence

import sacrebleu


def token_accuracy(hyps: Sequence[Sequence[int]], refs: Sequence[Sequence[int]]) -> float:
    """Share of reference tokens predicted at the same position (a missing position counts as wrong), in %."""
    total = sum(len(r) for r in refs)
    if total == 0:
        return 0.0
    right = sum(
        sum(1 for h, r in zip(hyp, ref, strict=False) if h == r) for hyp, ref in zip(hyps, refs, strict=True)
    )
    return 100.0 * right / total


def exact_match(hyps: Sequence, refs: Sequence) -> float:
    """Share of hypotheses identical to their reference, in %."""
    if not refs:
        return 0.0
    return 100.0 * sum(h == r for h, r in zip(hyps, refs, strict=True)) / len(refs)


def bleu(hyps: Sequence[str], refs: Sequence[str], *, lowercase: bool = False) -> float:
    """Corpus BLEU of detokenized hypotheses against one reference each (sacrebleu's 13a tokenization)."""
    if not refs:
        return 0.0
    return sacrebleu.corpus_bleu(list(hyps), [list(refs)], lowercase=lowercase).score


LENGTH_BUCKETS = (5, 10, 15, 20, 25, 30)


def bucket_label(length: int, edges: Sequence[int] = LENGTH_BUCKETS) -> str:
    """The bucket of a length: "1-5", "6-10", …, ">30" for the default edges."""
    low = 1
    for edge in edges:
        if length <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f">{edges[-1]}"


def bleu_by_length(
    hyps: Sequence[str],
    refs: Sequence[str],
    source_lengths: Sequence[int],
    edges: Sequence[int] = LENGTH_BUCKETS,
) -> dict[str, dict[str, float]]:
    """Corpus BLEU per source-length bucket (Bahdanau et al. 2015, Fig. 2), in bucket order, empty ones left out.

    → {"1-5": {"sentences": n, "bleu": …, "bleu_lowercase": …}, "6-10": …}. Lengths are in source words.
    """
    groups: dict[str, list[int]] = {}
    labels = [bucket_label(e, edges) for e in edges] + [f">{edges[-1]}"]
    for i, n in enumerate(source_lengths):
        groups.setdefault(bucket_label(n, edges), []).append(i)
    out = {}
    for label in labels:
        idx = groups.get(label)
        if not idx:
            continue
        h, r = [hyps[i] for i in idx], [refs[i] for i in idx]
        out[label] = {"sentences": len(idx), "bleu": bleu(h, r), "bleu_lowercase": bleu(h, r, lowercase=True)}
    return out


def perplexity(mean_nll: float) -> float:
    """exp of the mean per-token negative log-likelihood (capped to stay finite)."""
    return math.exp(min(mean_nll, 50.0))
