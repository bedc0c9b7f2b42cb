import torch

from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.masked_lm import masked_lm_loss


def hand_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """−log softmax at each labelled position, by the formula: z_y − log Σ_v exp z_v."""
    terms = []
    for pos in zip(*torch.nonzero(labels.ne(IGNORE_INDEX), as_tuple=True), strict=True):
        z = logits[pos].double()
        terms.append(torch.logsumexp(z, 0) - z[labels[pos]])
    return torch.stack(terms).mean()


def test_dense_loss_is_the_mean_over_the_labelled_positions_only():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    labels = torch.full((2, 5), IGNORE_INDEX)
    labels[0, 1], labels[0, 4], labels[1, 2] = 3, 0, 6
    loss = masked_lm_loss(logits, labels)
    torch.testing.assert_close(loss.double(), hand_nll(logits, labels))
    logits[labels.eq(IGNORE_INDEX)] = 100.0  # the unlabelled positions do not count
    torch.testing.assert_close(masked_lm_loss(logits, labels), loss)


def test_sparse_logits_at_the_labelled_positions_give_the_dense_loss():
    torch.manual_seed(1)
    logits = torch.randn(3, 6, 11)
    labels = torch.full((3, 6), IGNORE_INDEX)
    labels[0, 0], labels[1, 3], labels[1, 5], labels[2, 2] = 1, 10, 4, 7
    where = labels.ne(IGNORE_INDEX)
    sparse = masked_lm_loss(logits[where], labels[where])  # (N, V), (N,)
    torch.testing.assert_close(sparse, masked_lm_loss(logits, labels))
    torch.testing.assert_close(sparse.double(), hand_nll(logits, labels))


def test_the_loss_is_fp32_for_bf16_logits_and_under_autocast():
    torch.manual_seed(2)
    logits = torch.randn(2, 4, 9).bfloat16()
    labels = torch.tensor([[1, IGNORE_INDEX, 8, 0], [IGNORE_INDEX, 2, 2, IGNORE_INDEX]])
    loss = masked_lm_loss(logits, labels)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, masked_lm_loss(logits.float(), labels))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert masked_lm_loss(logits, labels).dtype == torch.float32
