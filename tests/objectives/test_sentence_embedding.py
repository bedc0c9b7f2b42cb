"""The sentence-embedding losses against their equations written out term by term, and against
sentence-transformers' implementations on the same vectors where the library is installed."""

import math

import pytest
import torch

from seq2bert.objectives.sentence_embedding import (
    cosent_loss,
    cosine_matrix,
    cosine_similarity_loss,
    multiple_negatives_ranking_loss,
    triplet_loss,
)


def vectors(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def cos(u, v):
    return float(u @ v / (u.norm() * v.norm()))


def test_cosine_matrix_is_each_pairs_cosine():
    a, b = vectors(3, 5), vectors(4, 5, seed=1)
    expected = torch.tensor([[cos(a[i], b[j]) for j in range(4)] for i in range(3)], dtype=torch.float64)
    torch.testing.assert_close(cosine_matrix(a, b), expected)


@pytest.mark.parametrize("hard_negatives", [False, True])
def test_multiple_negatives_ranking_loss_is_the_softmax_over_the_batch(hard_negatives):
    # L = −(1/B) Σ_i log( exp(s·cos(a_i, p_i)) / Σ_j exp(s·cos(a_i, c_j)) ), c = positives (+ negatives)
    B, s = 4, 20.0
    a, p, n = vectors(B, 6), vectors(B, 6, seed=1), vectors(B, 6, seed=2)
    candidates = list(p) + (list(n) if hard_negatives else [])
    total = 0.0
    for i in range(B):
        denominator = sum(math.exp(s * cos(a[i], c)) for c in candidates)
        total -= math.log(math.exp(s * cos(a[i], p[i])) / denominator)
    got = multiple_negatives_ranking_loss(a, p, n if hard_negatives else None, scale=s)
    assert float(got) == pytest.approx(total / B, rel=1e-9)


def test_multiple_negatives_ranking_loss_falls_as_each_anchor_nears_its_own_positive():
    a = vectors(8, 16)
    far = multiple_negatives_ranking_loss(a, vectors(8, 16, seed=3))
    near = multiple_negatives_ranking_loss(a, a + 0.01 * vectors(8, 16, seed=3))
    assert float(near) < 0.01 < float(far)


def test_cosent_loss_is_the_log_of_one_plus_the_ordered_pairs_terms():
    # L = log(1 + Σ_{(i, j): y_i > y_j} exp(s·(cos_j − cos_i)))
    B, s = 6, 20.0
    a, b = vectors(B, 5), vectors(B, 5, seed=1)
    y = torch.tensor([0.2, 0.8, 0.5, 0.5, 1.0, 0.0], dtype=torch.float64)  # a tie adds no term
    c = [cos(a[i], b[i]) for i in range(B)]
    inner = sum(math.exp(s * (c[j] - c[i])) for i in range(B) for j in range(B) if y[i] > y[j])
    assert float(cosent_loss(a, b, y, scale=s)) == pytest.approx(math.log(1 + inner), rel=1e-9)


def test_cosent_loss_of_cosines_in_the_scores_order_is_near_zero():
    a = vectors(5, 4)
    b = torch.stack([a[i] + (4 - i) * vectors(4, seed=10 + i) for i in range(5)])  # farther as i falls
    y = torch.tensor([c for c in (cos(a[i], b[i]) for i in range(5))])  # the gold order is the cosines'
    assert float(cosent_loss(a, b, y)) < float(cosent_loss(a, b, -y))


def test_cosine_similarity_loss_is_the_mean_squared_error_of_the_cosines():
    a, b = vectors(5, 7), vectors(5, 7, seed=1)
    y = torch.tensor([0.1, 0.9, 0.4, 0.0, 1.0], dtype=torch.float64)
    expected = sum((cos(a[i], b[i]) - float(y[i])) ** 2 for i in range(5)) / 5
    assert float(cosine_similarity_loss(a, b, y)) == pytest.approx(expected, rel=1e-6)


def test_triplet_loss_is_the_hinge_of_the_euclidean_distances():
    # max(‖a − p‖ − ‖a − n‖ + ε, 0), averaged
    a, p, n = vectors(6, 4), vectors(6, 4, seed=1), vectors(6, 4, seed=2)
    for margin in (0.5, 5.0):
        expected = sum(max(float((a[i] - p[i]).norm() - (a[i] - n[i]).norm()) + margin, 0) for i in range(6))
        assert float(triplet_loss(a, p, n, margin=margin)) == pytest.approx(expected / 6, abs=1e-5)


def test_the_losses_equal_sentence_transformers_on_the_same_vectors():
    losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")
    a, p, n = (vectors(8, 12, seed=s).float() for s in range(3))
    y = torch.rand(8, generator=torch.Generator().manual_seed(4))
    cases = [
        (losses.MultipleNegativesRankingLoss(None), [a, p], None, multiple_negatives_ranking_loss(a, p)),
        (
            losses.MultipleNegativesRankingLoss(None),
            [a, p, n],
            None,
            multiple_negatives_ranking_loss(a, p, n),
        ),
        (losses.CoSENTLoss(None), [a, p], y, cosent_loss(a, p, y)),
        (losses.CosineSimilarityLoss(None), [a, p], y, cosine_similarity_loss(a, p, y)),
        (losses.TripletLoss(None), [a, p, n], None, triplet_loss(a, p, n)),
    ]
    for loss, embeddings, labels, ours in cases:
        labels = torch.zeros(8) if labels is None else labels
        theirs = loss.compute_loss_from_embeddings(embeddings, labels)
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6, msg=type(loss).__name__)
