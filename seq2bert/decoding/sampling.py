"""Sampling the next token instead of taking the most probable one: temperature, top-k and nucleus (top-p).

    p_T(y) ∝ exp(log p(y | x, y_<t) / T)          T > 1 flattens the distribution, T < 1 sharpens it (T → 0:
                                                  greedy)
    top-k  (Fan et al. 2018)                      keep the k most probable tokens, renormalise
    top-p  (Holtzman et al. 2020, "nucleus")      keep the smallest set of most probable tokens whose
                                                  probability reaches p, renormalise

applied in that order, as transformers' logits warpers are; then y_t ~ p. A ``seed`` makes the draws
repeatable (one torch.Generator per call).
"""

from __future__ import annotations

import torch


def filtered_scores(log_probs: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """log_probs (N, V) → the scores (N, V) to sample from: tempered, −∞ outside the top-k and the nucleus."""
    scores = log_probs / temperature
    if top_k and top_k < scores.size(-1):
        kth = scores.topk(top_k, dim=-1).values[:, -1:]  # (N, 1) the k-th largest score
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p < 1.0:
        sorted_scores, order = scores.sort(dim=-1, descending=True)  # (N, V)
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
        # drop a token when the tokens before it already reach p (the most probable one always stays)
        drop = (cumulative - sorted_scores.softmax(dim=-1)) >= top_p
        scores = scores.masked_fill(drop.scatter(1, order, drop), float("-inf"))
    return scores


def sample(
    log_probs: torch.Tensor, temperature: float, top_k: int, top_p: float, generator=None
) -> torch.Tensor:
    """One token per row, drawn from the filtered distribution: log_probs (N, V) → tokens (N,)."""
    probs = filtered_scores(log_probs, temperature, top_k, top_p).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)
