import math

import torch

from seq2bert.objectives.next_sentence import next_sentence_loss


def test_next_sentence_loss_is_the_two_way_softmax_cross_entropy():
    logits = torch.tensor([[2.0, -1.0], [0.5, 0.5], [-3.0, 1.0]])  # (B, 2): IsNext, NotNext scores
    labels = torch.tensor([0, 1, 1])  # IsNext, NotNext, NotNext

    def nll(z, y):
        return math.log(math.exp(z[0]) + math.exp(z[1])) - z[y]

    expected = sum(nll(z, y) for z, y in zip(logits.tolist(), labels.tolist(), strict=True)) / 3
    assert math.isclose(next_sentence_loss(logits, labels).item(), expected, rel_tol=1e-6)


def test_label_zero_means_is_next():
    logits = torch.tensor([[5.0, -5.0]])  # the classifier is sure of index 0
    assert next_sentence_loss(logits, torch.tensor([0])) < 1e-3
    assert next_sentence_loss(logits, torch.tensor([1])) > 9.0


def test_the_loss_is_fp32_for_bf16_logits():
    logits = torch.randn(4, 2).bfloat16()
    labels = torch.tensor([0, 1, 0, 1])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = next_sentence_loss(logits, labels)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, next_sentence_loss(logits.float(), labels))
