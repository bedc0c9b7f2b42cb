import torch

from seq2bert.objectives.span_qa import span_qa_loss


def nll(logits: torch.Tensor, i: int) -> float:
    return float(torch.logsumexp(logits.double(), 0) - logits[i].double())


def test_span_loss_is_half_the_sum_of_start_and_end_log_likelihoods():
    torch.manual_seed(0)
    start, end = torch.randn(3, 10), torch.randn(3, 10)
    s, e = [1, 0, 7], [2, 0, 9]  # example 1: no answer, pointed at [CLS]
    expected = (
        sum(nll(start[b], s[b]) for b in range(3)) / 3 + sum(nll(end[b], e[b]) for b in range(3)) / 3
    ) / 2
    got = span_qa_loss(start, end, torch.tensor(s), torch.tensor(e))
    assert abs(got.item() - expected) < 1e-5


def test_positions_beyond_the_sequence_are_clamped_to_t_and_ignored():
    torch.manual_seed(1)
    T = 10
    start, end = torch.randn(3, T), torch.randn(3, T)
    s, e = (
        torch.tensor([1, 12, 3]),
        torch.tensor([2, 4, 40]),
    )  # example 1's start and example 2's end cut away
    start_loss = (nll(start[0], 1) + nll(start[2], 3)) / 2  # the mean over the two starts that count
    end_loss = (nll(end[0], 2) + nll(end[1], 4)) / 2
    got = span_qa_loss(start, end, s, e)
    assert abs(got.item() - (start_loss + end_loss) / 2) < 1e-5
    # exactly T is ignored too; negative positions clamp to 0 ([CLS]) and count
    assert abs(span_qa_loss(start, end, torch.tensor([1, T, 3]), e).item() - got.item()) < 1e-6
    low = span_qa_loss(start[:1], end[:1], torch.tensor([-5]), torch.tensor([0]))
    assert abs(low.item() - (nll(start[0], 0) + nll(end[0], 0)) / 2) < 1e-5


def test_the_loss_is_fp32_for_bf16_logits():
    start, end = torch.randn(2, 6).bfloat16(), torch.randn(2, 6).bfloat16()
    s, e = torch.tensor([1, 2]), torch.tensor([3, 5])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = span_qa_loss(start, end, s, e)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, span_qa_loss(start.float(), end.float(), s, e))
