import functools

import pytest
import torch
import torch.nn.functional as F

from seq2bert.objectives.cross_entropy import IGNORE_INDEX, linear_cross_entropy, sequence_cross_entropy


def test_label_smoothing_matches_its_definition():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    labels = torch.tensor([[1, 2, IGNORE_INDEX], [0, 4, 3]])
    eps = 0.1
    logp = logits.log_softmax(-1)
    keep = labels.ne(IGNORE_INDEX)
    nll = -logp[keep].gather(1, labels[keep][:, None]).squeeze(1)
    uniform = -logp[keep].mean(-1)
    expected = ((1 - eps) * nll + eps * uniform).mean()
    torch.testing.assert_close(sequence_cross_entropy(logits, labels, label_smoothing=eps), expected)
    torch.testing.assert_close(sequence_cross_entropy(logits, labels), nll.mean())


def linear_example(n=13, d=6, v=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, d, generator=g, requires_grad=True)
    weight = torch.randn(v, d, generator=g, requires_grad=True)
    labels = torch.randint(0, v, (n,), generator=g)
    labels[[2, 7]] = IGNORE_INDEX
    return hidden, weight, labels


def loss_and_grads(loss_fn, hidden, weight, labels, scale=1.0):
    h, w = hidden.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    loss = loss_fn(h, w, labels)
    (scale * loss).backward()
    return loss.detach(), h.grad, w.grad


def plain(h, w, labels):
    return sequence_cross_entropy(F.linear(h, w)[None], labels[None])


@pytest.mark.parametrize("chunk_elements", [1, 30, 1 << 21])  # a row, a few rows, every row at once
def test_linear_cross_entropy_equals_the_loss_of_the_logits_and_its_gradients(chunk_elements):
    hidden, weight, labels = linear_example()
    fused = functools.partial(linear_cross_entropy, chunk_elements=chunk_elements)
    for got, expected in zip(loss_and_grads(fused, hidden, weight, labels, 3.0),
                             loss_and_grads(plain, hidden, weight, labels, 3.0), strict=True):  # fmt: skip
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    with torch.no_grad():  # without autograd: the loss alone
        torch.testing.assert_close(fused(hidden, weight, labels), plain(hidden, weight, labels))


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_linear_cross_entropy_where_the_probability_underflows(eps):
    hidden, weight, labels = linear_example()
    weight = (weight * 40).detach().requires_grad_()  # logits in the hundreds: p_y = 0 in fp32 for some rows
    with torch.no_grad():
        assert bool((F.linear(hidden, weight).softmax(-1).gather(1, labels.clamp(min=0)[:, None]) == 0).any())
    fused = functools.partial(linear_cross_entropy, label_smoothing=eps)

    def smoothed(h, w, y):
        return sequence_cross_entropy(F.linear(h, w)[None], y[None], label_smoothing=eps)

    for got, expected in zip(loss_and_grads(fused, hidden, weight, labels),
                             loss_and_grads(smoothed, hidden, weight, labels), strict=True):  # fmt: skip
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)


def test_linear_cross_entropy_under_autocast_follows_the_plain_loss():
    hidden, weight, labels = linear_example(n=40, d=32, v=300)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = loss_and_grads(
            functools.partial(linear_cross_entropy, chunk_elements=600), hidden, weight, labels
        )
        expected = loss_and_grads(plain, hidden, weight, labels)
    assert got[0].dtype == torch.float32
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=0.02, atol=2e-3)


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("chunk_elements", [1, 30, 1 << 21])
def test_linear_cross_entropy_with_a_bias_and_label_smoothing(eps, chunk_elements):
    """The Transformer's output layer (Marian's final_logits_bias) and ε_ls = 0.1 (Vaswani et al., Sect. 5.4):
    the loss and the gradients of hidden, W and b equal those of the plain loss of the logits."""
    hidden, weight, labels = linear_example()
    bias = torch.randn(weight.size(0), generator=torch.Generator().manual_seed(3))

    def run(fused):
        h, w, b = (t.detach().clone().requires_grad_() for t in (hidden, weight, bias))
        if fused:
            loss = linear_cross_entropy(
                h, w, labels, bias=b, label_smoothing=eps, chunk_elements=chunk_elements
            )
        else:
            loss = sequence_cross_entropy(F.linear(h, w, b)[None], labels[None], label_smoothing=eps)
        (2.0 * loss).backward()
        return loss.detach(), h.grad, w.grad, b.grad

    for got, expected in zip(run(True), run(False), strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        torch.testing.assert_close(
            linear_cross_entropy(hidden, weight, labels, bias=bias, label_smoothing=eps),
            sequence_cross_entropy(F.linear(hidden, weight, bias)[None], labels[None], label_smoothing=eps),
        )
