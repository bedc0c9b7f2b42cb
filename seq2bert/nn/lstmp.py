"""The LSTM with a recurrent projection layer, LSTMP (Sak, Senior & Beaufays 2014), as the big language
models of Jozefowicz et al. (2016) and ELMo's biLM (Peters et al. 2018: 4096 cells projected to 512) use it.

The cell is the LSTM of nn/rnn.py, except that what it outputs and feeds back is a projection r_t of its
C-dimensional output onto P < C dimensions — a C-cell layer at the recurrent cost of a P-cell one::

    i_t, f_t, g_t, o_t = gates(W_i x_t + W_r r_{t−1} + b)      (B, 4C), torch's order i, f, g, o
    c_t = f_t ∘ c_{t−1} + i_t ∘ g_t,  clipped to ±cell_clip       cell clipping (optional)
    h_t = o_t ∘ tanh(c_t)                                          (B, C)
    r_t = W_hr h_t,  clipped to ±proj_clip                        the output and recurrent state (B, P)

torch.nn.LSTM(proj_size=P) computes the same recurrence without the clipping, and this module keeps its
parameters in that layout (``lstm.weight_ih_l0`` (4C, I), ``weight_hh_l0`` (4C, P), ``bias_ih_l0``,
``bias_hh_l0`` (4C,), ``weight_hr_l0`` (P, C)): without clipping it runs torch's fused kernel, with clipping
(or ``explicit=True``) the step function below, one step at a time. Tests hold the two to 1e-6.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.nn.rnn import lstm_cell, run_fused

State = tuple[torch.Tensor, torch.Tensor]  # (r (B, P), c (B, C))

# torch's CPU kernel for proj_size runs without oneDNN and says so on every first call: it is the right one
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")


def lstmp_cell(x, state, w_ih, w_hh, b_ih, b_hh, w_hr, cell_clip=None, proj_clip=None) -> State:
    """One LSTMP step. x: (B, I), state: (r (B, P), c (B, C)) → (r_t, c_t)."""
    h_t, c_t = lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh, cell_clip=cell_clip)  # h_t (B, C)
    r_t = F.linear(h_t, w_hr)  # (B, P)
    if proj_clip is not None:
        r_t = r_t.clamp(-proj_clip, proj_clip)
    return r_t, c_t


class ProjectedLSTM(nn.Module):
    """One LSTMP layer in one direction (left to right; a backward LM reads its input reversed).

    forward(x (B, T, I), state=None) → (r_1 … r_T (B, T, P), (r_T (B, P), c_T (B, C))); ``state`` is the
    (r, c) to start from (None: zeros), e.g. the last segment's under truncated back-propagation."""

    def __init__(
        self,
        input_size: int,
        cell_size: int,
        proj_size: int,
        *,
        cell_clip: float | None = None,
        proj_clip: float | None = None,
        explicit: bool = False,
    ):
        super().__init__()
        if not 0 < proj_size < cell_size:
            raise ValueError(f"proj_size must be in (0, cell_size={cell_size}), got {proj_size}")
        self.lstm = nn.LSTM(input_size, cell_size, proj_size=proj_size, batch_first=True)
        self.input_size, self.cell_size, self.proj_size = input_size, cell_size, proj_size
        self.cell_clip, self.proj_clip, self.explicit = cell_clip, proj_clip, explicit

    @property
    def fused(self) -> bool:
        """Whether torch's kernel computes it (it has no clipping)."""
        return self.cell_clip is None and self.proj_clip is None and not self.explicit

    def zero_state(self, batch_size: int, like: torch.Tensor) -> State:
        return like.new_zeros(batch_size, self.proj_size), like.new_zeros(batch_size, self.cell_size)

    def forward(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        B, T, _ = x.shape
        r, c = state if state is not None else self.zero_state(B, x.float())
        if self.fused:
            out, (r, c) = run_fused(self.lstm, x, (r[None], c[None]))  # states (1, B, ·) for torch
            return out, (r[0], c[0])
        m = self.lstm
        weights = (m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0, m.weight_hr_l0)
        outputs = []
        for t in range(T):
            r, c = lstmp_cell(x[:, t], (r, c), *weights, cell_clip=self.cell_clip, proj_clip=self.proj_clip)
            outputs.append(r)
        return torch.stack(outputs, dim=1), (r, c)  # (B, T, P)
