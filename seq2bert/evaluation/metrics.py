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


def perplexity(mean_nll: float) -> float:
    """exp of the mean per-token negative log-likelihood (capped to stay finite)."""
    return math.exp(min(mean_nll, 50.0))
