"""Back-propagation through time, written out: the Elman network's gradients from the equations.

The network and its symbols are those of Goodfellow, Bengio & Courville, *Deep Learning* (2016), §10.2.2
("Computing the Gradient in a Recurrent Neural Network"), Eqs. 10.8–10.11 and 10.12–10.14::

    a_t = b + W h_{t−1} + U x_t            W: (H, H) recurrent, U: (H, I) input, b: (H,)
    h_t = tanh(a_t)                        h_0 given (zeros by default)
    o_t = c + V h_t                        V: (K, H) output, c: (K,)
    ŷ_t = softmax(o_t)
    L   = Σ_t L_t,   L_t = −log ŷ_t[y_t]

(Elman 1990; ``nn/rnn.py`` computes the same recurrence with torch's names W_hh = W, W_ih = U,
b_ih + b_hh = b.) :class:`ElmanNetwork` runs the forward and keeps what the backward needs — the inputs,
every state h_0 … h_T and every ŷ_t — and :meth:`ElmanNetwork.backward_through_time` walks back from T to 1
applying the book's gradients (Eqs. 10.17–10.28), without autograd. ``tests/nn/test_bptt.py`` checks every
gradient against torch.autograd on the same weights in fp64 to 1e-10.

Batches: x (B, T, I) holds B independent sequences; L sums over the batch as well as over time. Steps whose
target is ``ignore_index`` have no loss (L_t = 0), so "the loss at the last step only", L_T, is
``y[:, :-1] = ignore_index``.

Truncated BPTT (``truncation=k``): the sequence is cut into chunks of k steps, t ∈ {1…k}, {k+1…2k}, …, and
the gradient of a chunk's losses stops at the state the chunk starts from: ∂L/∂h_{jk} keeps only the
losses of its own chunk (j ≥ 1). This is what a training loop that carries h across chunks with
``h.detach()`` computes (Williams & Peng 1990 call the family BPTT(h; h′); this is h = h′ = k), so it equals
autograd on a graph with h detached after every k steps — which the test checks. No gradient flows back
more than k steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ElmanForward:
    """What the forward keeps for the backward. x (B, T, I), y (B, T), h (B, T+1, H) = h_0 … h_T,
    y_hat (B, T, K) = ŷ_1 … ŷ_T, loss a scalar (a graph autograd can also differentiate)."""

    x: torch.Tensor
    y: torch.Tensor
    h: torch.Tensor
    y_hat: torch.Tensor
    loss: torch.Tensor


@dataclass
class ElmanGradients:
    """∂L/∂ of every parameter (the parameter's shape), of the initial state h_0 (B, H), and of every state
    h_1 … h_T (B, T, H) — the total derivative the backward carries, through all later steps (or, truncated,
    the later steps of its chunk)."""

    W: torch.Tensor
    U: torch.Tensor
    V: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    h0: torch.Tensor
    h: torch.Tensor

    def state_norms(self) -> torch.Tensor:
        """‖∂L/∂h_t‖ for t = 1 … T, one row per sequence: (B, T)."""
        return self.h.norm(dim=-1)


class ElmanNetwork(nn.Module):
    """The Elman network of Deep Learning §10.2.2 (symbols above): ``forward`` by autograd-able torch ops,
    ``backward_through_time`` by hand.

    forward(x (B, T, I), y (B, T), h0 (B, H) | None) → ElmanForward.
    """

    def __init__(self, input_size: int, hidden_size: int, output_size: int, *, ignore_index: int = -100):
        super().__init__()
        H, I, K = hidden_size, input_size, output_size
        self.W = nn.Parameter(torch.empty(H, H))
        self.U = nn.Parameter(torch.empty(H, I))
        self.V = nn.Parameter(torch.empty(K, H))
        self.b = nn.Parameter(torch.empty(H))
        self.c = nn.Parameter(torch.empty(K))
        self.ignore_index = ignore_index
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch.nn.RNN's initialisation, U(−1/√H, 1/√H), for every parameter."""
        bound = 1.0 / math.sqrt(self.W.size(0))
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor, y: torch.Tensor, h0: torch.Tensor | None = None) -> ElmanForward:
        B, T, _ = x.shape
        h = [x.new_zeros(B, self.W.size(0)) if h0 is None else h0]
        for t in range(T):
            # Eqs. 10.8–10.9: h_t = tanh(b + W h_{t−1} + U x_t); rows are sequences, so W h is h Wᵀ
            h.append(torch.tanh(self.b + h[-1] @ self.W.T + x[:, t] @ self.U.T))  # (B, H)
        states = torch.stack(h, dim=1)  # (B, T+1, H): h_0 … h_T
        # Eqs. 10.10–10.11: o_t = c + V h_t, ŷ_t = softmax(o_t)
        o = self.c + states[:, 1:] @ self.V.T  # (B, T, K)
        # Eqs. 10.12–10.14: L = Σ_t −log ŷ_t[y_t], summed over the batch too; ignored steps add nothing
        loss = F.cross_entropy(o.flatten(0, 1), y.flatten(), ignore_index=self.ignore_index, reduction="sum")
        return ElmanForward(x=x, y=y, h=states, y_hat=o.softmax(-1), loss=loss)

    @torch.no_grad()
    def backward_through_time(self, fwd: ElmanForward, *, truncation: int | None = None) -> ElmanGradients:
        """Every gradient of ``fwd.loss``, by hand, from t = T back to 1; ``truncation=k``: truncated BPTT
        (the module docstring)."""
        if truncation is not None and truncation < 1:
            raise ValueError(f"truncation must be a positive number of steps, got {truncation}")
        x, h, y_hat = fwd.x, fwd.h.detach(), fwd.y_hat.detach()  # (B, T, I), (B, T+1, H), (B, T, K)
        T, K = y_hat.shape[1:]
        W, V = self.W.detach(), self.V.detach()

        # Eq. 10.18: ∂L/∂o_t = ŷ_t − 1_{y_t} (the softmax and the log cancel); 0 where the step has no loss
        counted = fwd.y != self.ignore_index  # (B, T)
        target = F.one_hot(fwd.y.where(counted, 0), K).to(y_hat.dtype)  # (B, T, K)
        dL_do = (y_hat - target) * counted[..., None]  # (B, T, K)

        dL_dh = torch.zeros_like(h[:, 1:])  # (B, T, H): ∂L/∂h_t at [:, t−1]
        dL_da = torch.zeros_like(dL_dh)  # (B, T, H): ∂L/∂a_t = diag(1 − h_t²) ∂L/∂h_t
        from_later = torch.zeros_like(h[:, 0])  # (B, H): what step t+1 sends back to h_t
        for t in range(T, 0, -1):  # t = T … 1; h_t is h[:, t], its output gradient dL_do[:, t−1]
            # Eqs. 10.19 and 10.21: ∂L/∂h_t = Vᵀ ∂L/∂o_t + Wᵀ diag(1 − h_{t+1}²) ∂L/∂h_{t+1}
            # (the second term is 0 at t = T, and at the end of a truncated chunk)
            dL_dh[:, t - 1] = dL_do[:, t - 1] @ V + from_later  # (B, K) @ (K, H) → (B, H)
            # tanh′(a_t) = 1 − tanh²(a_t) = 1 − h_t²
            dL_da[:, t - 1] = (1 - h[:, t] ** 2) * dL_dh[:, t - 1]
            # ∂a_t/∂h_{t−1} = W: h_{t−1} receives Wᵀ ∂L/∂a_t ...
            from_later = dL_da[:, t - 1] @ W  # (B, H) @ (H, H): row form of Wᵀ v
            if truncation is not None and (t - 1) % truncation == 0 and t > 1:
                # ... unless h_{t−1} ends a chunk: the chunk from t on started from it detached
                from_later = torch.zeros_like(from_later)
        h_prev, h_t = h[:, :-1], h[:, 1:]  # (B, T, H) each: h_{t−1} and h_t for t = 1 … T
        return ElmanGradients(
            # Eq. 10.22: ∂L/∂c = Σ_t ∂L/∂o_t
            c=dL_do.sum((0, 1)),
            # Eq. 10.23: ∂L/∂b = Σ_t diag(1 − h_t²) ∂L/∂h_t
            b=dL_da.sum((0, 1)),
            # Eq. 10.24: ∂L/∂V = Σ_t (∂L/∂o_t) h_tᵀ
            V=torch.einsum("btk,bth->kh", dL_do, h_t),
            # Eqs. 10.25–10.26: ∂L/∂W = Σ_t diag(1 − h_t²) (∂L/∂h_t) h_{t−1}ᵀ
            W=torch.einsum("bti,btj->ij", dL_da, h_prev),
            # Eqs. 10.27–10.28: ∂L/∂U = Σ_t diag(1 − h_t²) (∂L/∂h_t) x_tᵀ
            U=torch.einsum("bth,bti->hi", dL_da, x.detach()),
            # h_0 starts the first chunk, so it always receives Wᵀ diag(1 − h_1²) ∂L/∂h_1
            h0=from_later,
            h=dL_dh,
        )
