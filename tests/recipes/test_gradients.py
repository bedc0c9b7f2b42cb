"""Vanishing and exploding gradients, measured: the recipe's numbers behave as the theory says, the tanh RNN's
curve is the hand-written BPTT's, clipping bounds the update, and the command writes its files."""

import json
from dataclasses import replace

import pytest
import torch

from seq2bert.cli import main
from seq2bert.errors import ConfigError
from seq2bert.nn.bptt import ElmanNetwork
from seq2bert.recipes.gradients import (
    CELLS,
    GradientsConfig,
    build,
    one_thread,
    remember_first,
    spectral_radius,
    state_gradient_norms,
    train,
)

CFG = GradientsConfig(length=50, steps=5)
CELL = {cell.name: cell for cell in CELLS}


@pytest.fixture(autouse=True)
def single_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def batch():
    return remember_first(16, CFG.length, CFG.num_symbols, torch.Generator().manual_seed(0))


def decay(name, batch, cfg=CFG):
    """‖∂L_T/∂h_1‖ / ‖∂L_T/∂h_T‖ of a freshly built cell."""
    norms = state_gradient_norms(*build(CELL[name], cfg), *batch)
    assert norms.shape == (cfg.length,) and torch.isfinite(norms).all()
    return float(norms[0] / norms[-1])


def test_tanh_rnn_vanishes_when_w_contracts_and_explodes_when_it_expands(batch):
    rnn, _ = build(CELL["tanh"], CFG)
    assert spectral_radius(rnn.rnn.weight_hh_l0) < 1  # torch's initialisation: ρ(W) ≈ 1/√3
    assert decay("tanh", batch) < 1e-8  # orders of magnitude smaller at t = 1 than at T
    rnn, _ = build(CELL["tanh ρ>1"], CFG)
    assert spectral_radius(rnn.rnn.weight_hh_l0) == pytest.approx(2.0)
    assert decay("tanh ρ>1", batch) > 10  # larger at t = 1: it explodes


def test_lstm_decays_far_less_than_the_tanh_rnn_and_the_forget_bias_is_why(batch):
    lstm, tanh = decay("lstm", batch), decay("tanh", batch)
    assert lstm > 1e6 * tanh
    # with the forget gate at σ(0) = 1/2 (forget bias 0) the cell state halves at every step
    assert lstm > 1e4 * decay("lstm", batch, replace(CFG, forget_bias=0.0))
    assert decay("irnn", batch) > 1e-2  # W = I: the IRNN neither vanishes nor explodes at first


def test_tanh_curve_is_the_hand_written_backward_through_time(batch):
    """The recipe's autograd norms equal nn/bptt.py's ‖∂L/∂h_t‖ with a loss at the last step only."""
    rnn, readout = build(CELL["tanh"], CFG)
    r = rnn.rnn
    x, y = batch
    net = ElmanNetwork(CFG.num_symbols, CFG.hidden_size, CFG.num_symbols).double()
    # the same weights under the book's names: W = W_hh, U = W_ih, b = b_ih + b_hh, (V, c) the read-out
    pairs = {"W": r.weight_hh_l0, "U": r.weight_ih_l0, "b": r.bias_ih_l0.double() + r.bias_hh_l0.double()}
    pairs |= {"V": readout.weight, "c": readout.bias}
    with torch.no_grad():
        for name, value in pairs.items():
            getattr(net, name).copy_(value)
    targets = torch.full((x.size(0), CFG.length), net.ignore_index)
    targets[:, -1] = y  # L = L_T
    grads = net.backward_through_time(net(x.double(), targets))
    expected = grads.state_norms().mean(0)  # (T,)
    torch.testing.assert_close(state_gradient_norms(rnn, readout, x, y), expected, rtol=1e-9, atol=0)


def test_clipping_bounds_the_global_gradient_norm():
    runs = {}
    for clip in (False, True):
        rnn, readout = build(CELL["tanh ρ>1"], CFG)
        runs[clip] = train(rnn, readout, CFG, clip=clip), spectral_radius(rnn.rnn.weight_hh_l0)
    (free, rho_free), (clipped, rho_clipped) = runs[False], runs[True]
    assert max(clipped["grad_norm"]) > 10 * CFG.clip_norm  # the gradient did explode ...
    assert max(clipped["applied_norm"]) <= CFG.clip_norm * (
        1 + 1e-6
    )  # ... and the step saw at most the threshold
    assert free["applied_norm"] == free["grad_norm"] and max(free["grad_norm"]) > 10 * CFG.clip_norm
    assert abs(rho_clipped - 2) < 0.1 < abs(rho_free - 2)  # unclipped, one exploded step moved W far


def test_command_writes_the_picture_and_the_numbers(tmp_path, capsys):
    assert main(["gradients", "--out", str(tmp_path), "--length", "12", "--steps", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "ρ(W)" in out and all(cell.name in out for cell in CELLS)
    assert (tmp_path / "gradients.png").stat().st_size > 10_000
    results = json.loads((tmp_path / "gradients.json").read_text())
    assert results["config"]["length"] == 12 and results["config"]["seed"] == 1
    for cell in CELLS:
        runs = results["cells"][cell.name]["runs"]
        assert set(runs) == {"init", "sgd", "sgd+clip"}
        assert len(runs["init"]["norms"]) == 12 and len(runs["sgd+clip"]["grad_norm"]) == 3
        assert (runs["init"]["spectral_radius"] is not None) == (cell.mode in ("rnn_tanh", "rnn_relu"))


def test_bad_settings_are_one_line_errors(capsys):
    with pytest.raises(ConfigError, match="length"):
        GradientsConfig(length=0)
    assert main(["gradients", "--out", "unused", "--steps", "0"]) == 2
    assert "steps must be at least 1" in capsys.readouterr().err
