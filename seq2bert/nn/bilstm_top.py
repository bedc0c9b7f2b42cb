"""A BiLSTM on top of an encoder (Devlin et al. 2019, Sect. 5.1, Table 5, "+ BiLSTM"): "we added a randomly
initialized BiLSTM on top" of the left-to-right model for fine-tuning, so that every position sees its right
context again before the task head reads it.

    →h_t = LSTM_fw(x_1 … x_t),  ←h_t = LSTM_bw(x_t … x_T),  y_t = [→h_t ; ←h_t]

x (B, T, d_model) → y (B, T, d_model): d_model / 2 units each way (the paper does not give the width; this
one keeps the heads' input as it was), over each row's real tokens only — one run of them, padded on the
right or on the left; the padding positions keep x.
"""

from __future__ import annotations

import torch
from torch import nn

from seq2bert.nn.rnn import recurrent
from seq2bert.nn.sesame import real_span


class BiLSTMTop(nn.Module):
    """``layers`` bidirectional LSTM layers of d_model / 2 units each way over (B, T, d_model)."""

    def __init__(self, d_model: int, layers: int = 1):
        super().__init__()
        if d_model % 2:
            raise ValueError(f"a BiLSTM of d_model / 2 units each way: d_model {d_model} is odd")
        self.lstm = recurrent("lstm", d_model, d_model // 2, num_layers=layers, bidirectional=True)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        if valid is None:
            return self.lstm(x)[0].to(x.dtype)
        B, T, C = x.shape
        first, last = real_span(valid, B, T, x.device)  # (B, 1) each
        t = torch.arange(T, device=x.device).expand(B, T)
        start = (t + first).clamp(max=T - 1)  # each row's real tokens moved to its start
        y = self.lstm(x.gather(1, start[..., None].expand(B, T, C)), lengths=(last - first + 1)[:, 0])[0]
        back = (t - first).clamp(min=0)  # and back to where they were
        y = y.to(x.dtype).gather(1, back[..., None].expand(B, T, C))
        return torch.where(valid[..., None], y, x)
