"""The explicit cells equal torch's fused RNN / LSTM / GRU on the same weights (≤ 1e-6)."""

import pytest
import torch

from seq2bert.nn.rnn import ExplicitRNN, gru_cell, init_irnn, lstm_cell, recurrent, reverse_padded

CASES = [
    (mode, layers, bidir)
    for mode in ("rnn_tanh", "rnn_relu", "lstm", "gru")
    for layers, bidir in ((1, False), (2, False), (2, True), (3, True))
]


def pair(mode, layers, bidir, input_size=5, hidden=7):
    torch.manual_seed(0)
    fused = recurrent(mode, input_size, hidden, num_layers=layers, bidirectional=bidir)
    explicit = recurrent(mode, input_size, hidden, num_layers=layers, bidirectional=bidir, explicit=True)
    explicit.load_state_dict(fused.rnn.state_dict())  # the same parameter names and shapes
    return fused.double(), explicit.double()


def assert_same_state(a, b):
    if isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, rtol=0, atol=1e-6)
    else:
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


@pytest.mark.parametrize("mode,layers,bidir", CASES)
def test_explicit_equals_fused_on_full_sequences(mode, layers, bidir):
    fused, explicit = pair(mode, layers, bidir)
    x = torch.randn(3, 6, 5, dtype=torch.double)
    out_f, state_f = fused(x)
    out_e, state_e = explicit(x)
    torch.testing.assert_close(out_e, out_f, rtol=0, atol=1e-6)
    assert_same_state(state_e, state_f)


@pytest.mark.parametrize("mode,layers,bidir", CASES)
def test_explicit_equals_packed_fused_on_padded_batches(mode, layers, bidir):
    fused, explicit = pair(mode, layers, bidir)
    x = torch.randn(4, 6, 5, dtype=torch.double)
    lengths = torch.tensor([6, 2, 4, 1])
    x[1, 2:] = 99.0  # garbage on padding must not leak into anything
    x[2, 4:] = -99.0
    x[3, 1:] = 42.0
    out_f, state_f = fused(x, lengths=lengths)
    out_e, state_e = explicit(x, lengths=lengths)
    torch.testing.assert_close(out_e, out_f, rtol=0, atol=1e-6)
    assert_same_state(state_e, state_f)
    assert out_e[1, 2:].abs().max() == 0  # zero output on padding


def test_initial_state_is_used():
    fused, explicit = pair("lstm", 2, True)
    x = torch.randn(2, 3, 5, dtype=torch.double)
    h0 = torch.randn(4, 2, 7, dtype=torch.double)
    c0 = torch.randn(4, 2, 7, dtype=torch.double)
    torch.testing.assert_close(explicit(x, (h0, c0))[0], fused(x, (h0, c0))[0], rtol=0, atol=1e-6)


def test_lstm_cell_is_the_equations():
    torch.manual_seed(1)
    H, I = 3, 2
    w_ih, w_hh, b_ih, b_hh = (
        torch.randn(4 * H, I),
        torch.randn(4 * H, H),
        torch.randn(4 * H),
        torch.randn(4 * H),
    )
    x, h, c = torch.randn(1, I), torch.randn(1, H), torch.randn(1, H)
    pre = w_ih @ x[0] + b_ih + w_hh @ h[0] + b_hh
    i, f, g, o = (
        torch.sigmoid(pre[:H]),
        torch.sigmoid(pre[H : 2 * H]),
        torch.tanh(pre[2 * H : 3 * H]),
        torch.sigmoid(pre[3 * H :]),
    )
    c_t = f * c[0] + i * g
    h_t = o * torch.tanh(c_t)
    got_h, got_c = lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    torch.testing.assert_close(got_c[0], c_t)
    torch.testing.assert_close(got_h[0], h_t)
    ref = torch.nn.LSTMCell(I, H)
    ref.load_state_dict({"weight_ih": w_ih, "weight_hh": w_hh, "bias_ih": b_ih, "bias_hh": b_hh})
    torch.testing.assert_close(ref(x, (h, c))[0], got_h, rtol=0, atol=1e-6)


def test_gru_cell_is_the_equations():
    torch.manual_seed(2)
    H, I = 3, 2
    w_ih, w_hh, b_ih, b_hh = (
        torch.randn(3 * H, I),
        torch.randn(3 * H, H),
        torch.randn(3 * H),
        torch.randn(3 * H),
    )
    x, h = torch.randn(1, I), torch.randn(1, H)
    gx, gh = w_ih @ x[0] + b_ih, w_hh @ h[0] + b_hh
    r = torch.sigmoid(gx[:H] + gh[:H])
    z = torch.sigmoid(gx[H : 2 * H] + gh[H : 2 * H])
    h_bar = torch.tanh(gx[2 * H :] + r * gh[2 * H :])
    expected = z * h[0] + (1 - z) * h_bar
    torch.testing.assert_close(gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)[0], expected)
    ref = torch.nn.GRUCell(I, H)
    ref.load_state_dict({"weight_ih": w_ih, "weight_hh": w_hh, "bias_ih": b_ih, "bias_hh": b_hh})
    torch.testing.assert_close(ref(x, h), gru_cell(x, h, w_ih, w_hh, b_ih, b_hh), rtol=0, atol=1e-6)


def test_dropout_between_layers_only_in_training():
    torch.manual_seed(0)
    explicit = ExplicitRNN("gru", 4, 6, num_layers=2, dropout=0.5)
    x = torch.randn(2, 5, 4)
    explicit.eval()
    a, _ = explicit(x)
    b, _ = explicit(x)
    torch.testing.assert_close(a, b)
    explicit.train()
    c, _ = explicit(x)
    assert not torch.allclose(a, c)


def test_irnn_initialisation():
    rnn = recurrent("rnn_relu", 3, 4, num_layers=2)
    init_irnn(rnn)
    torch.testing.assert_close(rnn.rnn.weight_hh_l1, torch.eye(4))
    assert rnn.rnn.bias_ih_l0.abs().sum() == 0
    # with zero input the identity recurrence keeps a positive state unchanged
    explicit = ExplicitRNN("rnn_relu", 3, 4)
    init_irnn(explicit)
    h0 = torch.rand(1, 1, 4)
    _, h = explicit(torch.zeros(1, 5, 3) @ torch.zeros(3, 3), h0)
    torch.testing.assert_close(h, h0)


def test_reverse_padded_keeps_padding_in_place():
    ids = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])
    out = reverse_padded(ids, torch.tensor([3, 2, 4]))
    assert out.tolist() == [[3, 2, 1, 0], [5, 4, 0, 0], [9, 8, 7, 6]]
    x = torch.arange(12.0).view(2, 3, 2)  # (B, T, H): whole time steps move
    out = reverse_padded(x, torch.tensor([2, 3]))
    assert (
        out[0].tolist() == [[2.0, 3.0], [0.0, 1.0], [4.0, 5.0]] and out[1].tolist() == x[1].flip(0).tolist()
    )


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_fused_rnn_keeps_its_recurrence_in_fp32_under_bf16_autocast(mode):
    """Under autocast the recurrence runs in fp32 on every CPU (oneDNN would carry h and c in bf16 where it
    has bf16 kernels, and has no bf16 LSTM elsewhere): equal to the plain fp32 run, bitwise, lengths and
    initial state included, also from a bf16 input (a bf16 matmul's output)."""
    torch.manual_seed(0)
    fused = recurrent(mode, 5, 7, num_layers=2, bidirectional=True)
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 4, 1])
    h0 = torch.randn(4, 3, 7)
    hx = (h0, torch.randn(4, 3, 7)) if mode == "lstm" else h0
    expected, expected_state = fused(x, hx, lengths=lengths)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, state = fused(x, hx, lengths=lengths)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert_same_state(state, expected_state)
    x16 = x.bfloat16()
    expected16, _ = fused(x16.float(), hx, lengths=lengths)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out16, _ = fused(x16, hx, lengths=lengths)
    torch.testing.assert_close(out16, expected16, rtol=0, atol=0)
