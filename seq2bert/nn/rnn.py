"""Recurrent networks written from their equations: Elman RNN, LSTM and GRU, deep and bidirectional.

These modules exist to be read and taught from. They store their parameters exactly as torch.nn.RNN / LSTM /
GRU do (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``, ``…_reverse`` for the
backward direction; gates stacked in torch's order), so a state dict moves freely between an explicit module
and the fused torch module that training uses (:func:`recurrent` builds either). Tests check both give the
same outputs to 1e-6.

Elman (1990) RNN::

    h_t = tanh(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh)          (or ReLU; the IRNN of Le et al. 2015 starts
                                                                 from W_hh = I and zero biases)
LSTM (Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al. 2000)::

    i_t = σ(W_ii x_t + b_ii + W_hi h_{t−1} + b_hi)              input gate
    f_t = σ(W_if x_t + b_if + W_hf h_{t−1} + b_hf)              forget gate
    g_t = tanh(W_ig x_t + b_ig + W_hg h_{t−1} + b_hg)           candidate cell
    o_t = σ(W_io x_t + b_io + W_ho h_{t−1} + b_ho)              output gate
    c_t = f_t ∘ c_{t−1} + i_t ∘ g_t
    h_t = o_t ∘ tanh(c_t)

GRU (Cho et al. 2014)::

    r_t = σ(W_ir x_t + b_ir + W_hr h_{t−1} + b_hr)              reset gate
    z_t = σ(W_iz x_t + b_iz + W_hz h_{t−1} + b_hz)              update gate
    h̄_t = tanh(W_in x_t + b_in + r_t ∘ (W_hn h_{t−1} + b_hn))   candidate
    h_t = z_t ∘ h_{t−1} + (1 − z_t) ∘ h̄_t

A deep network feeds each layer's outputs to the next (with dropout between layers); a bidirectional one
runs a second network from the end of each sequence and concatenates the states, [h→_t; h←_t].
Padded batches: with ``lengths``, each row stops at its own length — the final state is the state after the
last real token, the backward direction starts at it, and outputs at padded positions are zero (as torch's
packed sequences give).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seq2bert.precision import full_precision, widen  # widen is also imported from here by the models

MODES = ("rnn_tanh", "rnn_relu", "lstm", "gru")
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity=torch.tanh):
    """Elman: h_t = f(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh). x: (B, I), h: (B, H) → (B, H)."""
    return nonlinearity(F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh))


def lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh, cell_clip: float | None = None):
    """One LSTM step. x: (B, I), state: (h, c), h (B, H_in) and c (B, H) → (h_t, c_t), each (B, H).
    ``cell_clip``: c_t is clipped to ±cell_clip before it makes h_t (the LSTMP of nn/lstmp.py)."""
    h, c = state
    # the products may run in bf16 under autocast; the gates and the cell state stay in fp32 (they accumulate)
    gates = widen(F.linear(x, w_ih, b_ih)) + widen(F.linear(h, w_hh, b_hh))  # (B, 4H), order i, f, g, o
    i, f, g, o = gates.chunk(4, dim=1)  # each (B, H)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c_t = f * widen(c) + i * g
    if cell_clip is not None:
        c_t = c_t.clamp(-cell_clip, cell_clip)
    h_t = o * torch.tanh(c_t)
    return h_t, c_t


def gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    """One GRU step. x: (B, I), h: (B, H) → h_t (B, H)."""
    # the products may run in bf16 under autocast; the gates and the state update stay in fp32
    gx = widen(F.linear(x, w_ih, b_ih))  # (B, 3H), torch's order r, z, n
    gh = widen(F.linear(h, w_hh, b_hh))  # (B, 3H)
    h = widen(h)
    xr, xz, xn = gx.chunk(3, dim=1)
    hr, hz, hn = gh.chunk(3, dim=1)
    r = torch.sigmoid(xr + hr)
    z = torch.sigmoid(xz + hz)
    h_bar = torch.tanh(xn + r * hn)
    return z * h + (1 - z) * h_bar


class ExplicitRNN(nn.Module):
    """A deep, optionally bidirectional RNN / LSTM / GRU computed step by step from the equations above.

    Same constructor, parameters and outputs as torch.nn.RNN / LSTM / GRU (batch_first):
    forward(x (B, T, I), hx=None, lengths=None) → (output (B, T, D·H), h_n (D·L, B, H) or (h_n, c_n) for LSTM).
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        *,
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bidirectional, self.dropout, self.bias = (
            num_layers,
            bidirectional,
            dropout,
            bias,
        )
        G, H = GATES[mode], hidden_size
        for layer in range(num_layers):
            for suffix in self._suffixes():
                in_size = input_size if layer == 0 else H * self.num_directions
                self.register_parameter(
                    f"weight_ih_l{layer}{suffix}", nn.Parameter(torch.empty(G * H, in_size))
                )
                self.register_parameter(f"weight_hh_l{layer}{suffix}", nn.Parameter(torch.empty(G * H, H)))
                if bias:
                    self.register_parameter(f"bias_ih_l{layer}{suffix}", nn.Parameter(torch.empty(G * H)))
                    self.register_parameter(f"bias_hh_l{layer}{suffix}", nn.Parameter(torch.empty(G * H)))
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self) -> list[str]:
        return ["", "_reverse"] if self.bidirectional else [""]

    def reset_parameters(self) -> None:
        """torch's initialisation: U(−1/√H, 1/√H) for every parameter."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def _weights(self, layer: int, suffix: str):
        get = lambda name: getattr(self, f"{name}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _step(self, x, state, weights):
        if self.mode == "lstm":
            return lstm_cell(x, state, *weights)
        if self.mode == "gru":
            return gru_cell(x, state, *weights)
        return rnn_cell(
            x, state, *weights, nonlinearity=torch.relu if self.mode == "rnn_relu" else torch.tanh
        )

    def _run(self, x, state, weights, lengths):
        """One direction of one layer over (B, T, I); rows stop at their length → outputs (B, T, H), final state."""
        B, T, _ = x.shape
        outputs = x.new_zeros(B, T, self.hidden_size)
        for t in range(T):
            new = self._step(x[:, t], state, weights)
            alive = (t < lengths)[:, None]  # (B, 1): this row still has a real token at t
            if self.mode == "lstm":
                state = (torch.where(alive, new[0], state[0]), torch.where(alive, new[1], state[1]))
                outputs[:, t] = torch.where(alive, new[0], 0.0)
            else:
                state = torch.where(alive, new, state)
                outputs[:, t] = torch.where(alive, new, 0.0)
        return outputs, state

    def forward(self, x: torch.Tensor, hx=None, lengths: torch.Tensor | None = None):
        B, T, _ = x.shape
        L, D, H = self.num_layers, self.num_directions, self.hidden_size
        lengths = torch.full((B,), T, device=x.device) if lengths is None else lengths.to(x.device)
        if hx is None:
            zeros = x.new_zeros(L * D, B, H)
            hx = (zeros, zeros.clone()) if self.mode == "lstm" else zeros
        finals_h, finals_c = [], []
        layer_input = x
        for layer in range(L):
            outs = []
            for d, suffix in enumerate(self._suffixes()):
                k = layer * D + d
                state = (hx[0][k], hx[1][k]) if self.mode == "lstm" else hx[k]
                # the backward direction starts at each row's last real token: reverse the real part only
                inp = reverse_padded(layer_input, lengths) if d == 1 else layer_input
                out, state = self._run(inp, state, self._weights(layer, suffix), lengths)
                outs.append(reverse_padded(out, lengths) if d == 1 else out)
                if self.mode == "lstm":
                    finals_h.append(state[0])
                    finals_c.append(state[1])
                else:
                    finals_h.append(state)
            layer_input = torch.cat(outs, dim=-1)  # (B, T, D·H) = [h→; h←]
            if layer < L - 1 and self.dropout and self.training:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        h_n = torch.stack(finals_h)  # (L·D, B, H)
        if self.mode == "lstm":
            return layer_input, (h_n, torch.stack(finals_c))
        return layer_input, h_n


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse the first lengths[b] time steps of each row of x (B, T, ...), leaving right padding in place.

    E.g. token ids [a b c PAD] → [c b a PAD]. Used for the backward direction of bidirectional networks and
    for the reversed source of Sutskever et al. (2014).
    """
    T = x.size(1)
    positions = torch.arange(T, device=x.device)  # (T,)
    lengths = lengths.to(x.device)[:, None]  # (B, 1)
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)  # (B, T)
    index = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


def run_fused(rnn: nn.RNNBase, x, hx=None):
    """Call torch's fused ``rnn`` (nn.RNN / LSTM / GRU) on x, a (B, T, I) tensor or a PackedSequence.

    The recurrence runs in fp32 under autocast, as the explicit cells keep their states: left to autocast,
    torch would run it in bf16 (oneDNN on CPUs with AVX-512 BF16, cuDNN on GPUs), carrying h and c from step
    to step in bf16 and rounding them at every step (tests/nn/test_rnn.py holds it in fp32). On CPUs without
    AVX-512 oneDNN has no bf16 LSTM at all. Outputs are fp32."""
    data = x.data if isinstance(x, nn.utils.rnn.PackedSequence) else x
    if not torch.is_autocast_enabled(data.device.type):
        return rnn(x, hx)
    with full_precision(data):
        if hx is not None:
            hx = tuple(map(widen, hx)) if isinstance(hx, tuple) else widen(hx)
        if data.dtype in (torch.bfloat16, torch.float16):
            x = x.float()  # a tensor or a PackedSequence
        return rnn(x, hx)


class FusedRNN(nn.Module):
    """torch's fused RNN / LSTM / GRU with the ExplicitRNN interface (lengths → packed sequences).

    Parameters live in ``self.rnn`` (keys ``rnn.weight_ih_l0`` …): ``explicit.load_state_dict(fused.rnn.state_dict())``
    and ``fused.rnn.load_state_dict(explicit.state_dict())`` move weights between the two.
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        *,
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        kwargs = dict(
            num_layers=num_layers,
            bidirectional=bidirectional,
            dropout=dropout if num_layers > 1 else 0.0,
            bias=bias,
            batch_first=True,
        )
        if mode == "lstm":
            self.rnn = nn.LSTM(input_size, hidden_size, **kwargs)
        elif mode == "gru":
            self.rnn = nn.GRU(input_size, hidden_size, **kwargs)
        elif mode in ("rnn_tanh", "rnn_relu"):
            self.rnn = nn.RNN(input_size, hidden_size, nonlinearity=mode[4:], **kwargs)
        else:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode

    def forward(self, x: torch.Tensor, hx=None, lengths: torch.Tensor | None = None):
        if lengths is None:
            return run_fused(self.rnn, x, hx)
        T = x.size(1)
        packed = pack_padded_sequence(x, lengths.cpu().clamp(min=1), batch_first=True, enforce_sorted=False)
        out, state = run_fused(self.rnn, packed, hx)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, D·H), zeros on padding
        return out, state


def recurrent(mode: str, input_size: int, hidden_size: int, *, explicit: bool = False, **kwargs) -> nn.Module:
    """The fused torch module for training, or the explicit one for reading (same parameters, same results)."""
    cls = ExplicitRNN if explicit else FusedRNN
    return cls(mode, input_size, hidden_size, **kwargs)


def init_irnn(module: nn.Module, scale: float = 1.0) -> None:
    """IRNN (Le, Jaitly & Hinton 2015): recurrent weights W_hh = scale·I, all biases 0 (for ReLU RNNs)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf.startswith("weight_hh"):
                p.copy_(scale * torch.eye(p.size(1), dtype=p.dtype).repeat(p.size(0) // p.size(1), 1))
            elif leaf.startswith("bias"):
                p.zero_()
