"""Replaced token detection (ELECTRA): labels on hand-made cases, sampling that follows the generator's
distribution (a chi-square test) and is seeded, the loss over real positions only. (No gradient through the
sample: tests/models/test_electra.py, on the generator's parameters.)"""

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from seq2bert.objectives.replaced_token_detection import (
    LAMBDA,
    corrupt,
    electra_loss,
    original_tokens,
    replaced_token_detection_loss,
    sample_replacements,
)


def test_labels_mark_the_tokens_that_differ_and_a_lucky_sample_is_original():
    original = torch.tensor([[2, 10, 11, 12, 3], [2, 20, 21, 3, 0]])
    masked = torch.tensor([[0, 1, 0, 1, 0], [0, 1, 1, 0, 0]], dtype=torch.bool)
    sampled = torch.tensor(
        [10, 99, 7, 21]
    )  # row-major: (0,1) the original again, (0,3), (1,1), (1,2) original
    corrupted, labels = corrupt(original, masked, sampled)
    assert corrupted.tolist() == [[2, 10, 11, 99, 3], [2, 7, 21, 3, 0]]
    assert labels.tolist() == [[0, 0, 0, 1, 0], [0, 1, 0, 0, 0]]
    assert original.tolist() == [[2, 10, 11, 12, 3], [2, 20, 21, 3, 0]]  # not changed in place


def test_original_tokens_come_from_the_mlm_labels():
    masked_input = torch.tensor([[2, 4, 11, 4, 3]])  # 4 = [MASK]
    labels = torch.tensor([[-100, 10, -100, 12, -100]])
    original, masked = original_tokens(masked_input, labels)
    assert original.tolist() == [[2, 10, 11, 12, 3]]
    assert masked.tolist() == [[False, True, False, True, False]]


def test_sampling_follows_the_distribution_and_is_seeded():
    # x̂ ~ softmax(logits): 20,000 draws at p = (.5, .3, .2) pass a chi-square test (an argmax sampler, or
    # one that ignored the temperature, would not: its counts are far off at any reasonable level)
    logits = torch.tensor([0.5, 0.3, 0.2]).log().expand(20_000, 3)
    for temperature, p in [(1.0, np.array([0.5, 0.3, 0.2])), (0.5, np.array([25, 9, 4]) / 38)]:
        seeded = torch.Generator().manual_seed(0)
        draw = sample_replacements(logits, generator=seeded, temperature=temperature)
        counts = np.bincount(draw.numpy(), minlength=3)
        assert stats.chisquare(counts, 20_000 * p).pvalue > 1e-3, (temperature, counts)
    flat = torch.zeros(4, 7)
    a = sample_replacements(flat, generator=torch.Generator().manual_seed(5))
    b = sample_replacements(flat, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and a.dtype == torch.long
    assert sample_replacements(torch.zeros(0, 7)).shape == (0,)
    # a token of probability 0 is never drawn, first and last of the vocabulary included
    impossible = torch.tensor([-float("inf"), 0.0, -float("inf"), 0.0, -float("inf")]).expand(5_000, 5)
    assert set(sample_replacements(impossible, generator=torch.Generator().manual_seed(1)).tolist()) == {1, 3}
    # that the discriminator's loss gives the generator no gradient through the sample:
    # tests/models/test_electra.py, test_no_gradient_flows_from_the_discriminator_loss_into_the_generator


def test_loss_is_the_bce_over_real_positions_only():
    logits = torch.tensor([[1.0, -2.0, 0.5], [3.0, 100.0, -100.0]])
    labels = torch.tensor([[1, 0, 0], [1, 0, 1]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    expected = F.binary_cross_entropy_with_logits(
        torch.tensor([1.0, -2.0, 0.5, 3.0]), torch.tensor([1.0, 0.0, 0.0, 1.0])
    )
    torch.testing.assert_close(replaced_token_detection_loss(logits, labels, mask), expected)
    everywhere = F.binary_cross_entropy_with_logits(logits, labels.float())
    torch.testing.assert_close(replaced_token_detection_loss(logits, labels), everywhere)
    assert LAMBDA == 50.0
    torch.testing.assert_close(electra_loss(torch.tensor(2.0), torch.tensor(0.1)), torch.tensor(7.0))


def test_the_balanced_loss_weighs_each_class_by_the_inverse_of_its_share():
    """balanced: N / (2 n_c) per class over the real positions — one replaced token among four weighs 2, each
    original 2/3; the all-original prior is no longer the loss's floor, and even classes give the plain loss."""
    logits = torch.tensor([[1.0, -2.0, 0.5, 0.3], [9.0, 9.0, 9.0, 9.0]])
    labels = torch.tensor([[1, 0, 0, 0], [1, 1, 1, 1]])
    mask = torch.tensor([[1, 1, 1, 1], [0, 0, 0, 0]])
    per_token = F.binary_cross_entropy_with_logits(
        torch.tensor([1.0, -2.0, 0.5, 0.3]), torch.tensor([1.0, 0.0, 0.0, 0.0]), reduction="none"
    )
    expected = (per_token * torch.tensor([2.0, 2 / 3, 2 / 3, 2 / 3])).mean()
    torch.testing.assert_close(replaced_token_detection_loss(logits, labels, mask, balanced=True), expected)
    even = torch.tensor([[1, 0], [0, 1]])
    scores = torch.tensor([[0.2, -0.7], [1.5, 0.1]])
    torch.testing.assert_close(
        replaced_token_detection_loss(scores, even, balanced=True),
        replaced_token_detection_loss(scores, even),
    )
    prior = torch.full((1, 4), float(np.log(1 / 3)))  # the all-original prior's score: P(replaced) = 1/4
    fair = torch.zeros(1, 4)  # no information, classes alike: P(replaced) = 1/2
    one = torch.tensor([[1, 0, 0, 0]])
    assert replaced_token_detection_loss(fair, one, balanced=True) < replaced_token_detection_loss(
        prior, one, balanced=True
    )
