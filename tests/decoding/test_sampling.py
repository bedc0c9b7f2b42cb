"""Sampling (decoding/sampling.py): temperature, top-k and the nucleus against their definitions."""

import math

import torch

from seq2bert.decoding.sampling import filtered_scores, sample


def test_temperature_top_k_and_nucleus_keep_what_their_definitions_keep():
    probs = torch.tensor([[0.5, 0.2, 0.15, 0.1, 0.05]])
    log_probs = probs.log()
    tempered = filtered_scores(log_probs, 2.0, 0, 1.0).softmax(-1)
    torch.testing.assert_close(tempered, (probs**0.5) / (probs**0.5).sum())  # p^(1/T), renormalised
    kept = filtered_scores(log_probs, 1.0, 2, 1.0).isfinite()
    assert kept.tolist() == [[True, True, False, False, False]]
    # the smallest set of the most probable tokens whose probability reaches p
    for p, n in ((0.45, 1), (0.6, 2), (0.8, 3), (0.9, 4), (1.0, 5)):
        assert int(filtered_scores(log_probs, 1.0, 0, p).isfinite().sum()) == n, p
    nucleus = filtered_scores(log_probs, 1.0, 0, 0.65).softmax(-1)
    torch.testing.assert_close(nucleus, torch.tensor([[0.5, 0.2, 0, 0, 0]]) / 0.7)


def test_draws_follow_the_distribution_and_a_seed_repeats_them():
    log_probs = torch.tensor([[0.7, 0.2, 0.1]]).log().expand(20000, 3)
    g = torch.Generator().manual_seed(0)
    counts = torch.bincount(sample(log_probs, 1.0, 0, 1.0, g), minlength=3).float() / 20000
    torch.testing.assert_close(counts, torch.tensor([0.7, 0.2, 0.1]), atol=0.015, rtol=0)
    a = sample(log_probs[:50], 1.0, 0, 1.0, torch.Generator().manual_seed(5))
    b = sample(log_probs[:50], 1.0, 0, 1.0, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    assert math.isclose(float(counts.sum()), 1.0, abs_tol=1e-6)
