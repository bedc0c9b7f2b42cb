import math

import pytest
import torch

from seq2bert.errors import ConfigError
from seq2bert.objectives.classification import (
    problem_type_of,
    sequence_classification_loss,
    token_classification_loss,
)
from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def test_problem_type_rule_of_transformers():
    assert problem_type_of(None, 1) == "regression"
    assert problem_type_of(None, 2) == problem_type_of(None, 5) == "single_label_classification"
    assert problem_type_of("multi_label_classification", 3) == "multi_label_classification"
    assert problem_type_of("single_label_classification", 1) == "single_label_classification"


def test_regression_is_the_mean_squared_error():
    logits = torch.tensor([[0.5], [2.0], [-1.0]])  # (B, 1)
    labels = torch.tensor([1.0, 2.0, 3.0])  # (B,)
    expected = (0.25 + 0.0 + 16.0) / 3
    assert math.isclose(
        sequence_classification_loss(logits, labels, "regression").item(), expected, rel_tol=1e-6
    )
    several = torch.tensor([[0.0, 1.0], [2.0, 3.0]])  # K = 2 outputs: (B, K) against (B, K)
    target = torch.tensor([[1.0, 1.0], [2.0, 1.0]])
    assert math.isclose(
        sequence_classification_loss(several, target, "regression").item(), 5 / 4, rel_tol=1e-6
    )


def test_multi_label_is_the_mean_binary_cross_entropy_of_each_output():
    logits = torch.tensor([[0.0, 2.0, -1.0], [1.0, -2.0, 0.5]])
    labels = torch.tensor([[0, 1, 1], [1, 0, 0]])

    def bce(z, y):
        p = 1 / (1 + math.exp(-z))
        return -(y * math.log(p) + (1 - y) * math.log(1 - p))

    expected = (
        sum(
            bce(z, y)
            for zs, ys in zip(logits.tolist(), labels.tolist(), strict=True)
            for z, y in zip(zs, ys, strict=True)
        )
        / 6
    )
    got = sequence_classification_loss(logits, labels, "multi_label_classification")
    assert math.isclose(got.item(), expected, rel_tol=1e-6)


def test_single_label_is_the_softmax_cross_entropy():
    logits = torch.tensor([[1.0, 0.0, -1.0], [0.0, 3.0, 1.0]])
    labels = torch.tensor([2, 1])
    expected = (
        sum(
            math.log(sum(math.exp(v) for v in z)) - z[y]
            for z, y in zip(logits.tolist(), labels.tolist(), strict=True)
        )
        / 2
    )
    got = sequence_classification_loss(logits, labels, "single_label_classification")
    assert math.isclose(got.item(), expected, rel_tol=1e-6)


def test_an_unknown_problem_type_is_an_error():
    with pytest.raises(ConfigError, match="problem_type"):
        sequence_classification_loss(torch.zeros(2, 3), torch.tensor([0, 1]), "ranking")


def test_token_classification_ignores_unlabelled_positions():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 5)
    labels = torch.tensor([[IGNORE_INDEX, 3, IGNORE_INDEX, 0], [IGNORE_INDEX, 4, 4, IGNORE_INDEX]])
    keep = labels.ne(IGNORE_INDEX)
    expected = torch.nn.functional.nll_loss(logits[keep].log_softmax(-1), labels[keep])
    torch.testing.assert_close(token_classification_loss(logits, labels), expected)


@pytest.mark.parametrize(
    "kind, labels",
    [
        ("regression", torch.tensor([0.5, -1.0])),
        ("single_label_classification", torch.tensor([0, 1])),
        ("multi_label_classification", torch.tensor([[1, 0], [0, 1]])),
    ],
)
def test_losses_are_fp32_for_bf16_logits(kind, labels):
    logits = torch.randn(2, 1 if kind == "regression" else 2).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = sequence_classification_loss(logits, labels, kind)
        tokens = token_classification_loss(
            torch.randn(2, 3, 4).bfloat16(), torch.tensor([[0, 1, 2], [3, 0, 1]])
        )
    assert loss.dtype == tokens.dtype == torch.float32
    torch.testing.assert_close(loss, sequence_classification_loss(logits.float(), labels, kind))
