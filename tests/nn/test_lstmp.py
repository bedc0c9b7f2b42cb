"""LSTMP (nn/lstmp.py): the step function equals torch.nn.LSTM(proj_size=P) on the same weights, states
carried across calls; clipping bounds the cell and the projection."""

import torch

from seq2bert.nn.lstmp import ProjectedLSTM, lstmp_cell


def test_the_step_function_equals_torch_lstm_with_projection():
    torch.manual_seed(0)
    fused = ProjectedLSTM(6, 12, 4)
    explicit = ProjectedLSTM(6, 12, 4, explicit=True)
    explicit.load_state_dict(fused.state_dict())
    assert [k for k, _ in fused.named_parameters()] == [
        "lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0", "lstm.bias_hh_l0", "lstm.weight_hr_l0",
    ]  # fmt: skip
    x = torch.randn(3, 7, 6)
    reference = torch.nn.LSTM(6, 12, proj_size=4, batch_first=True)
    reference.load_state_dict(fused.lstm.state_dict())
    out_ref, (h_ref, c_ref) = reference(x)
    out, (r, c) = fused(x)
    out_e, (r_e, c_e) = explicit(x)
    for a, b in ((out, out_ref), (out_e, out_ref), (r, h_ref[0]), (r_e, h_ref[0]), (c_e, c_ref[0])):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert out.shape == (3, 7, 4) and c.shape == (3, 12)
    # a state carried from one segment to the next is one pass
    first, state = explicit(x[:, :3])
    second, _ = explicit(x[:, 3:], state)
    torch.testing.assert_close(torch.cat([first, second], 1), out_ref, rtol=0, atol=1e-6)


def test_one_step_by_hand_and_clipping():
    torch.manual_seed(1)
    m = ProjectedLSTM(5, 8, 3, cell_clip=0.05, proj_clip=0.01)
    assert not m.fused
    x, r0, c0 = torch.randn(2, 5), torch.randn(2, 3), torch.randn(2, 8)
    lstm = m.lstm
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + r0 @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, 1)
    c = (torch.sigmoid(f) * c0 + torch.sigmoid(i) * torch.tanh(g)).clamp(-0.05, 0.05)
    r = ((torch.sigmoid(o) * torch.tanh(c)) @ lstm.weight_hr_l0.T).clamp(-0.01, 0.01)
    r_t, c_t = lstmp_cell(x, (r0, c0), lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0,
                          lstm.weight_hr_l0, cell_clip=0.05, proj_clip=0.01)  # fmt: skip
    torch.testing.assert_close(r_t, r, rtol=0, atol=1e-7)
    torch.testing.assert_close(c_t, c, rtol=0, atol=1e-7)
    out, (r, c) = m(torch.randn(2, 9, 5) * 10)
    assert out.abs().max() <= 0.01 and c.abs().max() <= 0.05
