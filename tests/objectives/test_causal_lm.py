import torch

from seq2bert.objectives.causal_lm import causal_lm_loss, causal_lm_loss_from_hidden
from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def hand_shifted(logits: torch.Tensor, labels: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Eq. 1 by hand: position t predicts token t + 1; padding (IGNORE_INDEX) is left out."""
    B, T, V = logits.shape
    terms = []
    for b in range(B):
        for t in range(T - 1):
            y = int(labels[b, t + 1])
            if y == IGNORE_INDEX:
                continue
            logp = logits[b, t].double().log_softmax(-1)
            terms.append(-(1 - eps) * logp[y] - eps * logp.mean())
    return torch.stack(terms).mean()


def example():
    torch.manual_seed(0)
    logits = torch.randn(2, 6, 8)
    labels = torch.randint(0, 8, (2, 6))
    labels[1, 4:] = IGNORE_INDEX  # the second sequence is padded
    return logits, labels


def test_the_logits_at_t_predict_the_label_at_t_plus_one():
    logits, labels = example()
    torch.testing.assert_close(causal_lm_loss(logits, labels).double(), hand_shifted(logits, labels))


def test_the_last_position_and_the_first_label_are_never_used():
    logits, labels = example()
    loss = causal_lm_loss(logits, labels)
    changed_logits, changed_labels = logits.clone(), labels.clone()
    changed_logits[:, -1] = torch.randn(2, 8) * 10
    changed_labels[:, 0] = (labels[:, 0] + 1) % 8
    torch.testing.assert_close(causal_lm_loss(changed_logits, changed_labels), loss)
    changed_logits = logits.clone()
    changed_logits[0, 2] += torch.randn(8)  # a position that does predict (token 3 of sequence 0)
    assert not torch.allclose(causal_lm_loss(changed_logits, labels), loss)


def test_without_shift_labels_are_already_the_next_tokens():
    logits, labels = example()
    shifted = torch.cat([labels[:, 1:], torch.full((2, 1), IGNORE_INDEX)], 1)  # (B, T): next token or −100
    torch.testing.assert_close(causal_lm_loss(logits, shifted, shift=False), causal_lm_loss(logits, labels))


def test_label_smoothing():
    logits, labels = example()
    got = causal_lm_loss(logits, labels, label_smoothing=0.1)
    torch.testing.assert_close(got.double(), hand_shifted(logits, labels, eps=0.1))


def test_the_loss_is_fp32_for_bf16_logits():
    logits, labels = example()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = causal_lm_loss(logits.bfloat16(), labels)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, causal_lm_loss(logits.bfloat16().float(), labels))


def test_from_the_final_states_equals_the_loss_of_the_logits():
    torch.manual_seed(0)
    hidden, weight = torch.randn(2, 6, 4, requires_grad=True), torch.randn(8, 4, requires_grad=True)
    _, labels = example()
    fused = causal_lm_loss_from_hidden(hidden, weight, labels)
    fused.backward()
    grads = hidden.grad, weight.grad
    hidden.grad = weight.grad = None
    plain = causal_lm_loss(hidden @ weight.t(), labels)
    plain.backward()
    torch.testing.assert_close(fused, plain)
    torch.testing.assert_close(grads, (hidden.grad, weight.grad))
