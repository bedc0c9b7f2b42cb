"""SesameBERT's two blocks (Su & Cheng 2019, "SesameBERT: Attention for Anywhere", arXiv:1910.03176), generic:
any stack of Transformer layers takes them (seq2bert/models/sesame.py attaches them to an encoder).

Squeeze and Excitation over the layers (Sect. 3.1; Hu et al. 2018's channels are here the N layer outputs
u_1 … u_N, each (T, H)):

    z_ℓ = 1/(T·H) Σ_t Σ_j u_ℓ[t, j]                 squeeze: one number per layer
    s   = σ(W_2 δ(W_1 z + b_1) + b_2)               excitation: W_1 (N/r × N), W_2 (N × N/r), δ = ReLU, r = 3
    ũ_ℓ = s_ℓ · u_ℓ                                  scale

As in the authors' released code, the task head reads ũ_N (the last layer, scaled by a gate computed from
every layer), and both biases start at 0.8. Departure, marked where it happens: the squeeze averages over
the real tokens only (the released code averages over the padding too, so a sentence's gate would depend
on how long the other sentences of its batch are).

Gaussian blurring of the attention (Sect. 3.2): the attention's output (the heads concatenated, before W^O)
is convolved along the sequence with a normalised Gaussian, each channel on its own,

    y_t = Σ_{j=−r…r} w_j x_{t+j},    w_j = exp(−j² / 2σ²) / Σ_i exp(−i² / 2σ²),    k = 2r + 1 = 3, σ = 0.3

so that every position also carries a little of its neighbours' context. The sequence is extended past its
ends by reflection (x_{−1} = x_0, x_{T} = x_{T−1}: tf.pad's SYMMETRIC, as the released code). Departure: the
ends are those of each row's real tokens, so no padding is blurred into a word.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn


class LayerExcitation(nn.Module):
    """Squeeze and Excitation over ``num_layers`` layer outputs: their gates s (B, N) (the module's docstring).
    ``reduction`` r: W_1 maps the N squeezed layers to max(1, N // r)."""

    def __init__(
        self, num_layers: int, *, reduction: int = 3, bias_init: float = 0.8, init_range: float = 0.02
    ):
        super().__init__()
        if num_layers < 1 or reduction < 1:
            raise ValueError(
                f"need at least one layer and a reduction >= 1, got {num_layers} and {reduction}"
            )
        self.num_layers = num_layers
        self.squeeze = nn.Linear(num_layers, max(1, num_layers // reduction))  # W_1, b_1
        self.excite = nn.Linear(self.squeeze.out_features, num_layers)  # W_2, b_2
        for linear in (self.squeeze, self.excite):
            nn.init.normal_(linear.weight, std=init_range)
            nn.init.constant_(linear.bias, bias_init)

    def forward(self, layers: Sequence[torch.Tensor], valid: torch.Tensor | None = None) -> torch.Tensor:
        """N layer outputs, each (B, T, H), and the real tokens ``valid`` (B, T) (None: all) → s (B, N)."""
        if len(layers) != self.num_layers:
            raise ValueError(f"{len(layers)} layer outputs for an excitation of {self.num_layers} layers")
        u = torch.stack([x.float() for x in layers], dim=1)  # (B, N, T, H)
        if valid is None:
            z = u.mean(dim=(2, 3))  # (B, N): squeeze
        else:  # departure: the mean over the real tokens only
            w = valid.to(u.dtype)[:, None, :, None]  # (B, 1, T, 1)
            z = (u * w).sum(dim=(2, 3)) / (w.sum(dim=(2, 3)) * u.size(-1)).clamp(min=1)
        return torch.sigmoid(self.excite(torch.relu(self.squeeze(z))))  # (B, N): excitation


def gaussian_kernel(kernel_size: int, sigma: float) -> torch.Tensor:
    """(k,) weights w_{−r} … w_r of a normalised Gaussian, k = 2r + 1."""
    if kernel_size < 1 or kernel_size % 2 == 0 or not sigma > 0:
        raise ValueError(f"kernel_size: an odd number >= 1 and sigma > 0, got {kernel_size} and {sigma}")
    r = kernel_size // 2
    w = torch.tensor(
        [math.exp(-(j * j) / (2 * sigma * sigma)) for j in range(-r, r + 1)], dtype=torch.float64
    )
    return (w / w.sum()).float()


def real_span(valid: torch.Tensor | None, batch: int, length: int, device: torch.device):
    """The first and last real position (B, 1) of each row: ``valid`` (B, T) holds one run of real tokens
    (padding on the right or on the left)."""
    if valid is None:
        first = torch.zeros(batch, 1, dtype=torch.long, device=device)
        return first, first + length - 1
    t = torch.arange(length, device=device).expand(batch, length)
    last = torch.where(valid, t, -1).amax(dim=1, keepdim=True)
    first = torch.where(valid, t, length).amin(dim=1, keepdim=True)
    return first, last.clamp(min=first)


def seen_keys(mask: torch.Tensor | None, batch: int, length: int) -> torch.Tensor | None:
    """(B, T) the keys some query may see — the real tokens — of an attention mask broadcastable to
    (B, h, T, T) (nn/masks.py); None for None."""
    if mask is None:
        return None
    m = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))  # (B | 1, h | 1, T | 1, T)
    return m.any(dim=2).any(dim=1).expand(batch, length)


class GaussianBlur(nn.Module):
    """Blur x (B, T, C) along T with a normalised Gaussian of ``kernel_size`` taps and ``sigma`` (the module's
    docstring), each row between the ends of its real tokens; padding positions are left as they are."""

    def __init__(self, kernel_size: int = 3, sigma: float = 0.3):
        super().__init__()
        self.kernel_size, self.sigma = kernel_size, sigma
        self.register_buffer("weights", gaussian_kernel(kernel_size, sigma), persistent=False)  # (k,)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        B, T, C = x.shape
        first, last = real_span(valid, B, T, x.device)  # (B, 1) each
        t = torch.arange(T, device=x.device).expand(B, T)
        r = self.kernel_size // 2
        y = torch.zeros_like(x)
        for j, w in zip(range(-r, r + 1), self.weights.to(x.dtype), strict=True):
            i = t + j
            i = torch.where(i < first, 2 * first - 1 - i, i)  # reflected at the first real token
            i = torch.where(i > last, 2 * last + 1 - i, i)  # and at the last
            i = torch.minimum(torch.maximum(i, first), last)  # a kernel wider than the sentence
            y = y + w * x.gather(1, i[..., None].expand(B, T, C))  # w_j x_{t+j}
        return y if valid is None else torch.where(valid[..., None], y, x)
