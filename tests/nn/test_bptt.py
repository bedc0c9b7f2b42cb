"""The hand-written backward through time equals torch.autograd on the same weights (fp64, 1e-10)."""

import pytest
import torch
import torch.nn.functional as F

from seq2bert.nn.bptt import ElmanNetwork

PARAMETERS = ("W", "U", "V", "b", "c")
SHAPES = [(1, 1, 2, 3, 4), (3, 7, 5, 4, 6), (2, 20, 3, 8, 5), (4, 12, 1, 16, 2)]  # B, T, I, H, K


def network_and_data(B, T, I, H, K, *, initial_state, seed=0):
    torch.manual_seed(seed)
    net = ElmanNetwork(I, H, K).double()
    x = torch.randn(B, T, I, dtype=torch.double)
    y = torch.randint(K, (B, T))
    h0 = torch.randn(B, H, dtype=torch.double, requires_grad=True) if initial_state else None
    return net, x, y, h0


def autograd_side(net, x, y, h0, *, truncation=None):
    """The same equations in plain torch, keeping every state h_t as a graph node; with ``truncation=k``,
    the state carried forward is detached after every k steps (h_k, h_2k, …), as a training loop does.
    Returns autograd's gradients: {parameter: ∂L/∂p}, ∂L/∂h_t (B, T, H) and ∂L/∂h_0 (or None)."""
    B, T, _ = x.shape
    h = torch.zeros(B, net.W.size(0), dtype=x.dtype) if h0 is None else h0
    states, loss = [], 0.0
    for t in range(T):
        if truncation is not None and t > 0 and t % truncation == 0:
            h = h.detach()  # h_t ends a chunk: the next chunk starts from its value, not its graph
        h = torch.tanh(net.b + h @ net.W.T + x[:, t] @ net.U.T)
        states.append(h)
        loss = loss + F.cross_entropy(net.c + h @ net.V.T, y[:, t], reduction="sum")
    params = [getattr(net, n) for n in PARAMETERS]
    inputs = params + states + ([h0] if h0 is not None else [])
    grads = torch.autograd.grad(loss, inputs)
    return (
        dict(zip(PARAMETERS, grads[: len(params)], strict=True)),
        torch.stack(grads[len(params) : len(params) + T], 1),
        grads[-1] if h0 is not None else None,
    )


def assert_equal_gradients(mine, auto):
    params, states, h0 = auto
    for name in PARAMETERS:
        torch.testing.assert_close(getattr(mine, name), params[name], rtol=0, atol=1e-10, msg=name)
    torch.testing.assert_close(mine.h, states, rtol=0, atol=1e-10)
    if h0 is not None:
        torch.testing.assert_close(mine.h0, h0, rtol=0, atol=1e-10)


@pytest.mark.parametrize("B,T,I,H,K", SHAPES)
@pytest.mark.parametrize("initial_state", [False, True])
def test_hand_written_bptt_equals_autograd(B, T, I, H, K, initial_state):
    net, x, y, h0 = network_and_data(B, T, I, H, K, initial_state=initial_state)
    fwd = net(x, y, h0)
    mine = net.backward_through_time(fwd)
    assert_equal_gradients(mine, autograd_side(net, x, y, h0))
    # and autograd through the module's own forward gives the same parameter gradients
    auto = torch.autograd.grad(fwd.loss, [getattr(net, n) for n in PARAMETERS])
    for name, g in zip(PARAMETERS, auto, strict=True):
        torch.testing.assert_close(getattr(mine, name), g, rtol=0, atol=1e-10, msg=name)


@pytest.mark.parametrize("B,T,I,H,K", SHAPES[1:])
@pytest.mark.parametrize("k", [1, 3, 5, 100])
@pytest.mark.parametrize("initial_state", [False, True])
def test_truncated_bptt_equals_autograd_with_h_detached_every_k_steps(B, T, I, H, K, k, initial_state):
    net, x, y, h0 = network_and_data(B, T, I, H, K, initial_state=initial_state, seed=1)
    mine = net.backward_through_time(net(x, y, h0), truncation=k)
    assert_equal_gradients(mine, autograd_side(net, x, y, h0, truncation=k))
    full = net.backward_through_time(net(x, y, h0))
    if k < T:  # truncation changes the recurrent gradients; the last chunk's states are untouched
        assert not torch.allclose(mine.W, full.W)
        last = (T - 1) // k * k  # the first step of the last chunk, from 0
        torch.testing.assert_close(mine.h[:, last:], full.h[:, last:], rtol=0, atol=1e-12)
    else:
        torch.testing.assert_close(mine.W, full.W, rtol=0, atol=1e-12)


def test_parameter_gradients_equal_torch_rnn_on_the_same_weights():
    """An independent forward: torch.nn.RNN (W_hh = W, W_ih = U, b_ih = b, b_hh = 0) and a linear readout."""
    net, x, y, h0 = network_and_data(3, 9, 4, 6, 5, initial_state=True)
    rnn = torch.nn.RNN(4, 6, batch_first=True).double()
    readout = torch.nn.Linear(6, 5).double()
    with torch.no_grad():
        for p, q in ((rnn.weight_hh_l0, net.W), (rnn.weight_ih_l0, net.U), (rnn.bias_ih_l0, net.b)):
            p.copy_(q)
        rnn.bias_hh_l0.zero_()
        readout.weight.copy_(net.V)
        readout.bias.copy_(net.c)
    out, _ = rnn(x, h0[None])
    loss = F.cross_entropy(readout(out).flatten(0, 1), y.flatten(), reduction="sum")
    loss.backward()
    mine = net.backward_through_time(net(x, y, h0))
    torch.testing.assert_close(net(x, y, h0).loss, loss, rtol=0, atol=1e-10)
    for name, p in (("W", rnn.weight_hh_l0), ("U", rnn.weight_ih_l0), ("b", rnn.bias_ih_l0)):
        torch.testing.assert_close(getattr(mine, name), p.grad, rtol=0, atol=1e-10, msg=name)
    torch.testing.assert_close(mine.V, readout.weight.grad, rtol=0, atol=1e-10)
    torch.testing.assert_close(mine.c, readout.bias.grad, rtol=0, atol=1e-10)
    torch.testing.assert_close(mine.h0, h0.grad, rtol=0, atol=1e-10)


def test_loss_at_the_last_step_only_and_state_norms():
    """y_t = ignore_index for t < T: L = L_T; ∂L_T/∂h_t vanishes with distance for a contractive W."""
    net, x, y, _ = network_and_data(2, 30, 3, 8, 4, initial_state=False)
    y[:, :-1] = net.ignore_index
    fwd = net(x, y)
    mine = net.backward_through_time(fwd)
    assert_equal_gradients(mine, autograd_side_last_step(net, x, y))
    norms = mine.state_norms()  # (B, T)
    assert norms.shape == (2, 30)
    with torch.no_grad():
        net.W.mul_(0.5 / torch.linalg.eigvals(net.W).abs().max())  # ρ(W) = 0.5
    norms = net.backward_through_time(net(x, y)).state_norms()
    assert (norms[:, 0] < 1e-6 * norms[:, -1]).all()


def autograd_side_last_step(net, x, y):
    B, T, _ = x.shape
    h, states = torch.zeros(B, net.W.size(0), dtype=x.dtype), []
    for t in range(T):
        h = torch.tanh(net.b + h @ net.W.T + x[:, t] @ net.U.T)
        states.append(h)
    loss = F.cross_entropy(net.c + h @ net.V.T, y[:, -1], reduction="sum")
    grads = torch.autograd.grad(loss, [getattr(net, n) for n in PARAMETERS] + states)
    return dict(zip(PARAMETERS, grads[:5], strict=True)), torch.stack(grads[5:], 1), None


def test_truncation_must_be_positive():
    net, x, y, _ = network_and_data(1, 3, 2, 3, 4, initial_state=False)
    with pytest.raises(ValueError, match="positive"):
        net.backward_through_time(net(x, y), truncation=0)
