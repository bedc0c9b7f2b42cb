"""Recipe: vanishing and exploding gradients, measured — ‖∂L_T/∂h_t‖ against t for a tanh RNN, an IRNN, an
LSTM and a GRU on the same task, at initialisation and after training with and without gradient clipping.

    seq2bert gradients --out runs/gradients [--length 100] [--steps 200] [--seed 0]

The task, "remember the first token" (a form of the long-time-lag problems of Hochreiter & Schmidhuber
1997): x_1 … x_T are symbols drawn uniformly from K, fed one-hot; the one target, at the last step, is x_1.
Everything the answer needs arrives at t = 1 and everything after is noise, so ‖∂L_T/∂h_1‖ is exactly the
signal a learner gets about the one input that matters. We chose it over their adding problem because its
loss is the softmax cross-entropy of ``nn/bptt.py``: the tanh RNN's curve here is also the one the
hand-written backward through time gives (``tests/recipes/test_gradients.py`` checks it).

Back through time the gradient is multiplied at each step by a Jacobian: for the Elman network
∂h_t/∂h_{t−1} = diag(1 − h_t²) W, so ‖∂L_T/∂h_t‖ shrinks or grows roughly like ρ(W)^(T−t), with ρ the
spectral radius (Bengio, Simard & Frasconi 1994; Pascanu, Mikolov & Bengio 2013, §2 and §3). The cells
(``nn/rnn.py``, every one with a linear read-out of h_T):

    tanh          Elman RNN, torch's initialisation U(−1/√H, 1/√H): ρ(W) ≈ 1/√3 < 1, the gradient vanishes
    tanh ρ>1      the same, W rescaled to ρ(W) = ``exploding_radius`` (2 by default): it explodes
    irnn          ReLU RNN with W = I and zero biases (Le, Jaitly & Hinton 2015): ρ(W) = 1
    lstm          the cell state's Jacobian is diag(f_t): the forget gate decides how much flows back;
                  its bias starts at 1 (Gers, Schmidhuber & Cummins 2000; Jozefowicz et al. 2015), f ≈ 0.73
    gru           h_t = z_t ∘ h_{t−1} + …: the update gate plays the forget gate's part (torch's initialisation)

Training: plain SGD on the mean loss over a batch, as Pascanu et al. train, once as is and once with their
clipping of the global gradient norm (Algorithm 1): ĝ ← (threshold / ‖ĝ‖) ĝ when ‖ĝ‖ ≥ threshold. Both runs
of a cell start from the same weights and see the same batches. A run whose loss or gradient stops being
finite stops there (``diverged_at_step``). Norms are measured in fp64 (a vanished gradient of 1e-25 stays
a number), on one fixed batch, as the mean over its sequences of the per-sequence norm.

Read top to bottom: ``CELLS``, ``remember_first`` (the task), ``build``, ``state_gradient_norms`` (the
measurement), ``train``, ``measure`` (everything, as JSON-ready numbers), ``run_gradients`` (the files),
``format_table`` (what the command prints).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from seq2bert.errors import ConfigError
from seq2bert.io import write_json
from seq2bert.nn.rnn import gru_cell, init_irnn, lstm_cell, recurrent, rnn_cell
from seq2bert.viz.gradients import plot_gradient_norms

RUNS = ("init", "sgd", "sgd+clip")  # at initialisation; after `steps` SGD steps without / with clipping


@dataclass(frozen=True)
class GradientsConfig:
    length: int = 100  # T
    steps: int = 200  # SGD steps per training run
    seed: int = 0
    hidden_size: int = 32  # H
    num_symbols: int = 8  # K
    batch_size: int = 32  # training batches; the measuring batch is twice as large
    lr: float = 0.01
    clip_norm: float = 1.0  # Pascanu et al.'s threshold
    exploding_radius: float = 2.0  # ρ(W) of the "tanh ρ>1" cell, above 1
    forget_bias: float = 1.0  # the LSTM's forget-gate bias at initialisation

    def __post_init__(self):
        for name in ("length", "steps", "hidden_size", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.num_symbols < 2:
            raise ConfigError(f"num_symbols must be at least 2, got {self.num_symbols}")
        for name in ("lr", "clip_norm"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.exploding_radius > 1:
            raise ConfigError(f"exploding_radius must be above 1, got {self.exploding_radius}")


@dataclass(frozen=True)
class Cell:
    name: str
    mode: str  # nn/rnn.py's mode
    label: str  # for the figure


CELLS = (
    Cell("tanh", "rnn_tanh", "tanh RNN"),
    Cell("tanh ρ>1", "rnn_tanh", "tanh RNN, W scaled"),
    Cell("irnn", "rnn_relu", "IRNN (ReLU, W = I)"),
    Cell("lstm", "lstm", "LSTM"),
    Cell("gru", "gru", "GRU"),
)
ELMAN = ("rnn_tanh", "rnn_relu")  # the cells with one recurrent matrix W, whose ρ(W) we report
STEP = {  # one step of each cell, from its equations in nn/rnn.py
    "rnn_tanh": rnn_cell,
    "rnn_relu": partial(rnn_cell, nonlinearity=torch.relu),
    "lstm": lstm_cell,
    "gru": gru_cell,
}


def remember_first(
    batch_size: int, length: int, num_symbols: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """The task: x (B, T, K) one-hot symbols, y (B,) = the first symbol of each sequence."""
    tokens = torch.randint(num_symbols, (batch_size, length), generator=generator)  # (B, T)
    return F.one_hot(tokens, num_symbols).float(), tokens[:, 0]


def build(cell: Cell, cfg: GradientsConfig) -> tuple[nn.Module, nn.Linear]:
    """The cell (nn/rnn.py's fused module, parameters ``rnn.weight_hh_l0`` …) and its read-out, from cfg.seed."""
    H, K = cfg.hidden_size, cfg.num_symbols
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        rnn, readout = recurrent(cell.mode, K, H), nn.Linear(H, K)
    r = rnn.rnn
    with torch.no_grad():
        if cell.name == "tanh ρ>1":
            r.weight_hh_l0.mul_(cfg.exploding_radius / spectral_radius(r.weight_hh_l0))
        elif cell.name == "irnn":
            init_irnn(rnn)
        elif cell.name == "lstm":
            # gates stacked i, f, g, o: the forget gate's bias b_if + b_hf = forget_bias
            r.bias_ih_l0[H : 2 * H] = cfg.forget_bias
            r.bias_hh_l0[H : 2 * H] = 0.0
    return rnn, readout


def spectral_radius(W: torch.Tensor) -> float | None:
    """ρ(W) = max |λ_i(W)|, or None once W holds inf or NaN."""
    W = W.detach().double()
    return float(torch.linalg.eigvals(W).abs().max()) if torch.isfinite(W).all() else None


def state_gradient_norms(
    rnn: nn.Module, readout: nn.Linear, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """‖∂L_T/∂h_t‖ for t = 1 … T: (T,), the mean over the batch of each sequence's norm, in fp64.

    The cell runs step by step (nn/rnn.py's cell functions on the module's own weights), so every h_t is a
    node of the graph and autograd gives the total derivative of L_T = −log ŷ_T[y] with respect to it.
    For the LSTM the state is (h_t, c_t) and this is the gradient reaching h_t."""
    r, mode = rnn.rnn, rnn.mode
    weights = [p.detach().double() for p in (r.weight_ih_l0, r.weight_hh_l0, r.bias_ih_l0, r.bias_hh_l0)]
    x = x.double()  # (B, T, K)
    h = x.new_zeros(x.size(0), r.hidden_size).requires_grad_()  # (B, H): h_0, the root of the graph
    state, states = ((h, torch.zeros_like(h)) if mode == "lstm" else h), []
    with torch.enable_grad():
        for t in range(x.size(1)):
            state = STEP[mode](x[:, t], state, *weights)
            states.append(state[0] if mode == "lstm" else state)
        logits = F.linear(states[-1], readout.weight.detach().double(), readout.bias.detach().double())
        # L_T summed over the sequences: ∂L/∂h_t of sequence b is ∂L_T^(b)/∂h_t^(b)
        loss = F.cross_entropy(logits, y, reduction="sum")
        grads = torch.autograd.grad(loss, states)
    return torch.stack(grads, 1).norm(dim=-1).mean(0)  # (B, T, H) → (T,)


def global_norm(parameters: list[nn.Parameter]) -> float:
    """‖ĝ‖ over every parameter's gradient together."""
    return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters])))


def train(rnn: nn.Module, readout: nn.Linear, cfg: GradientsConfig, *, clip: bool, bar=None) -> dict:
    """cfg.steps SGD steps on fresh batches (the same batches for every run); clip: Pascanu et al.'s
    Algorithm 1. Returns the loss, ‖ĝ‖ and the norm of the gradient applied, per step, and where it diverged."""
    parameters = [*rnn.parameters(), *readout.parameters()]
    optimizer = torch.optim.SGD(parameters, lr=cfg.lr)
    generator = torch.Generator().manual_seed(cfg.seed + 1)
    record = {"loss": [], "grad_norm": [], "applied_norm": [], "diverged_at_step": None}
    for step in range(1, cfg.steps + 1):
        x, y = remember_first(cfg.batch_size, cfg.length, cfg.num_symbols, generator)
        outputs, _ = rnn(x)  # (B, T, H)
        loss = F.cross_entropy(readout(outputs[:, -1]), y)  # L_T, the mean over the batch
        optimizer.zero_grad()
        loss.backward()
        norm = global_norm(parameters)
        if not (math.isfinite(loss.item()) and math.isfinite(norm)):
            record["diverged_at_step"] = step
            break
        # Algorithm 1 (Pascanu et al. 2013): if ‖ĝ‖ ≥ threshold then ĝ ← (threshold / ‖ĝ‖) ĝ
        if clip and norm >= cfg.clip_norm:
            for p in parameters:
                p.grad.mul_(cfg.clip_norm / norm)
        record["loss"].append(loss.item())
        record["grad_norm"].append(norm)
        record["applied_norm"].append(global_norm(parameters))
        optimizer.step()
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.update(cfg.steps - len(record["loss"]))
    return record


def measure(cfg: GradientsConfig = GradientsConfig(), *, progress_bar: bool = True) -> dict:
    """Every cell at initialisation and after training without / with clipping: ‖∂L_T/∂h_t‖ for each t, the
    ratio ‖∂L_T/∂h_1‖ / ‖∂L_T/∂h_T‖, ρ(W) for the Elman cells, and the training records. JSON-ready."""
    x, y = remember_first(
        2 * cfg.batch_size, cfg.length, cfg.num_symbols, torch.Generator().manual_seed(cfg.seed)
    )
    results = {"config": asdict(cfg), "cells": {}}
    bar = tqdm(total=len(CELLS) * 2 * cfg.steps, desc="SGD steps", disable=not progress_bar)
    with one_thread(), bar:
        for cell in CELLS:
            results["cells"][cell.name] = measure_cell(cell, cfg, x, y, bar)
    return results


def measure_cell(cell: Cell, cfg: GradientsConfig, x: torch.Tensor, y: torch.Tensor, bar=None) -> dict:
    """One cell's three runs (RUNS), each from the same initial weights, measured on the batch (x, y)."""
    runs = {}
    for run in RUNS:
        rnn, readout = build(cell, cfg)
        record = {} if run == "init" else train(rnn, readout, cfg, clip=run == "sgd+clip", bar=bar)
        finite = all(torch.isfinite(p).all() for p in [*rnn.parameters(), *readout.parameters()])
        norms = state_gradient_norms(rnn, readout, x, y).tolist() if finite else None
        if norms is not None:  # a state that overflowed gives no norm (JSON has no inf or NaN)
            norms = [v if math.isfinite(v) else None for v in norms]
        runs[run] = {
            "spectral_radius": spectral_radius(rnn.rnn.weight_hh_l0) if cell.mode in ELMAN else None,
            "ratio": ratio(norms),
            "norms": norms,
            **record,
        }
    return {"mode": cell.mode, "label": cell.label, "runs": runs}


@contextmanager
def one_thread():
    """torch on one thread inside: on (32 × 32) matrices more threads only wait for each other, and on a
    shared machine they wait a long time."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def ratio(norms: list[float] | None) -> float | None:
    """‖∂L_T/∂h_1‖ / ‖∂L_T/∂h_T‖, or None when it is not a finite number."""
    if not norms or norms[0] is None or norms[-1] is None or not norms[-1] > 0:
        return None
    return norms[0] / norms[-1] if math.isfinite(norms[0] / norms[-1]) else None


def run_gradients(
    out_dir: str | Path, cfg: GradientsConfig = GradientsConfig(), *, progress_bar: bool = True
) -> dict:
    """measure(), then gradients.json and gradients.png in out_dir (each written atomically)."""
    out_dir = Path(out_dir)
    results = measure(cfg, progress_bar=progress_bar)
    write_json(out_dir / "gradients.json", results)
    plot_gradient_norms(results, out_dir / "gradients.png")
    return results


def format_table(results: dict) -> str:
    """ρ(W) and ‖∂L_T/∂h_1‖ / ‖∂L_T/∂h_T‖ per cell: at initialisation, after SGD, after SGD with clipping."""
    steps, T = results["config"]["steps"], results["config"]["length"]
    number = lambda v, f: "—" if v is None else "0" if v == 0 else format(v, f)  # noqa: E731
    lines = [
        f"{'':10} {'ρ(W)':^22}   {f'‖∂L_T/∂h_1‖ / ‖∂L_T/∂h_T‖, T = {T}':^32}",
        f"{'cell':10} {'init':>6} {'SGD':>7} {'+clip':>7}   {'init':>10} {'SGD':>10} {'+clip':>10}   diverged",
    ]
    for name, cell in results["cells"].items():
        runs = [cell["runs"][r] for r in RUNS]
        rho = " ".join(
            number(r["spectral_radius"], ".3g").rjust(w) for r, w in zip(runs, (6, 7, 7), strict=True)
        )
        ratios = " ".join(number(r["ratio"], ".1e").rjust(10) for r in runs)
        diverged = [
            f"{r} at step {cell['runs'][r]['diverged_at_step']}"
            for r in RUNS[1:]
            if cell["runs"][r].get("diverged_at_step")
        ]
        lines.append(f"{name:10} {rho}   {ratios}   {', '.join(diverged) or '—'}")
    lines.append(
        f"(SGD: {steps} steps, lr {results['config']['lr']}; +clip: ‖ĝ‖ clipped to {results['config']['clip_norm']})"
    )
    return "\n".join(lines)
