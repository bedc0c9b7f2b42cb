"""Losses that train sentence embeddings: a bi-encoder maps each text to a vector u = pool(encoder(text)),
and the losses compare the cosine similarities cos(u, v) = u·v / (‖u‖ ‖v‖) of the vectors of a batch.

    multiple_negatives_ranking_loss   (anchor, positive) pairs, optionally with a hard negative each:
        Henderson et al. 2017 ("Efficient Natural Language Response Suggestion for Smart Reply", Sect. 4.4),
        the InfoNCE loss of van den Oord et al. 2018; sentence-transformers' MultipleNegativesRankingLoss.
        The other positives of the batch (and every hard negative) are the negatives of each anchor:

            L = −(1/B) Σ_i log( exp(s·cos(a_i, p_i)) / Σ_j exp(s·cos(a_i, c_j)) ),  c = [p_1…p_B, n_1…n_B]

        with the scale s = 20 (a temperature τ = 1/s = 0.05). Unsupervised SimCSE (Gao et al. 2021, Eq. 1)
        is this loss with a_i and p_i the same sentence encoded twice, dropout the only difference.
    cosent_loss   pairs with a gold similarity score: CoSENT (Su 2022), a ranking of the pairs' cosines in
        the order of their scores,

            L = log(1 + Σ_{(i, j): y_i > y_j} exp(s·(cos_j − cos_i))),  s = 20.
    cosine_similarity_loss   pairs with a score in [0, 1]: the mean squared error of cos(u, v) and the score
        (Reimers & Gurevych 2019, Sect. 3, "regression objective function").
    triplet_loss   (anchor, positive, negative): max(‖a − p‖ − ‖a − n‖ + ε, 0), ε = 5, with the Euclidean
        distance (Reimers & Gurevych 2019, Sect. 3, "triplet objective function"; Schroff et al. 2015).

Each loss takes the pooled vectors (B, H) and returns the mean over the batch, a scalar.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

SCALE = 20.0  # s = 1/τ, τ = 0.05: sentence-transformers' default, SimCSE's temperature
TRIPLET_MARGIN = 5.0  # ε, sentence-transformers' default for the Euclidean distance


def _wide(x: torch.Tensor) -> torch.Tensor:
    """``x`` in fp32 when it is in a half precision (bf16 autocast): the softmax and the sums need it."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_j) for every pair of rows: (N, H), (M, H) → (N, M)."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def multiple_negatives_ranking_loss(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor | None = None,
    *,
    scale: float = SCALE,
) -> torch.Tensor:
    """In-batch negatives: anchor i is scored against every positive of the batch (and every hard negative),
    its own positive the right class. anchors, positives, negatives: (B, H) → a scalar."""
    candidates = positives if negatives is None else torch.cat([positives, negatives])  # (B or 2B, H)
    scores = scale * cosine_matrix(anchors, candidates)  # (B, B or 2B)
    target = torch.arange(len(anchors), device=anchors.device)  # anchor i's positive is candidate i
    return F.cross_entropy(_wide(scores), target)


def cosent_loss(
    a: torch.Tensor, b: torch.Tensor, scores: torch.Tensor, *, scale: float = SCALE
) -> torch.Tensor:
    """CoSENT: every pair of pairs whose gold scores are ordered (y_i > y_j) adds exp(s·(cos_j − cos_i)); the
    1 inside the log is the exp(0) of the empty sum. a, b: (B, H); scores: (B,) → a scalar."""
    cos = scale * _wide(F.cosine_similarity(a, b, dim=-1))  # (B,)
    diff = cos[None, :] - cos[:, None]  # (B, B): diff[i, j] = s·(cos_j − cos_i)
    ordered = scores[:, None] > scores[None, :]  # (B, B): y_i > y_j
    terms = diff[ordered]  # the ordered pairs' terms only
    return torch.logsumexp(torch.cat([cos.new_zeros(1), terms]), dim=0)


def cosine_similarity_loss(a: torch.Tensor, b: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Mean squared error of cos(a_i, b_i) and the gold score y_i ∈ [0, 1]: (B, H), (B, H), (B,) → a scalar."""
    return F.mse_loss(
        _wide(F.cosine_similarity(a, b, dim=-1)), scores.to(torch.promote_types(a.dtype, torch.float32))
    )


def triplet_loss(
    anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor, *, margin: float = TRIPLET_MARGIN
) -> torch.Tensor:
    """max(‖a − p‖ − ‖a − n‖ + ε, 0), averaged: the negative at least ε farther from the anchor than the
    positive. (B, H) each → a scalar."""
    near = F.pairwise_distance(anchors, positives)  # (B,); torch's eps = 1e-6 added to a − p, as theirs
    far = F.pairwise_distance(anchors, negatives)
    return _wide(F.relu(near - far + margin)).mean()


LOSSES = {  # the loss names of ``embedding.loss``
    "mnrl": "multiple negatives ranking (in-batch negatives; a hard negative each with triplets)",
    "cosent": "CoSENT (scored pairs)",
    "cosine": "cosine-similarity MSE (scored pairs, scores in [0, 1])",
    "triplet": "triplet margin (Euclidean)",
}
