"""Attention for recurrent encoder-decoders: Bahdanau's additive alignment and Luong's scores and windows.

Shapes: a query is one decoder state per row, q (B, H_q); the memory is the encoder's annotations
h (B, S, H_k) with a mask (B, S) that is True on real tokens. Every function returns the context (B, H_k)
and the weights α (B, S); padded positions get weight exactly 0.

Bahdanau, Cho & Bengio (2015), Sect. 3.1 and Appendix A.1.2::

    e_ij = a(s_{i−1}, h_j) = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)      below Eq. 6; A.1.2 (U_a h_j: once per source)
    α_ij = exp(e_ij) / Σ_k exp(e_ik)                               Eq. 6
    c_i  = Σ_j α_ij h_j                                             Eq. 5

Luong, Pham & Manning (2015), Sect. 3.1–3.2 (h_t the current target state, h̄_s the source states)::

    score(h_t, h̄_s) = h_tᵀ h̄_s                     dot
                     = h_tᵀ W_a h̄_s                 general
                     = v_aᵀ tanh(W_a [h_t; h̄_s])    concat
    a_t = softmax(W_a h_t)                          location, Eq. 8 (over source positions; positions past
                                                    max_source_length get weight 0, footnote 6)
    local-m: p_t = t;  local-p: p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))                         Eq. 9
    a_t(s) = align(h_t, h̄_s) · exp(−(s − p_t)² / 2σ²),  σ = D/2, window [p_t − D, p_t + D]    Eq. 10

Hard (stochastic) attention, Xu et al. (2015, "Show, Attend and Tell", Sect. 4.1): the same weights α_i are
the probabilities of one location s_i, and the context is the annotation there, not the expectation:

    s_i ~ Multinoulli(α_i),   c_i = h_{s_i}                                   Eq. 8–9
    (with probability 0.5 the context is Σ_j α_ij h_j, the expected one, "to further reduce the estimator
    variance"; at test time the most probable location, argmax_j α_ij)

trained by REINFORCE with a moving-average baseline (objectives/reinforce.py).

Precision: under bf16 autocast both attentions compute in fp32 — the projected keys, the scores, the softmax
and the context — as torch's fused scaled dot-product attention does for the Transformer. Scores rounded to
bf16 (8 bits of mantissa) and weights rounded back to bf16 put error into the gradients once attention is
sharp: measured on a trained Luong model, 8–34 % relative gradient error against fp32, 1.7–16 % with fp32
attention alone, 0.8–2.8 % with the recurrent states in fp32 as well (docs/results.md, "The tour on every
CPU"; tests/nn/test_attention.py). These are small (B, S, H) products, once per target step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.precision import full_precision, widen

LUONG_SCORES = ("dot", "general", "concat", "location")


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """softmax over the last axis with masked-out positions at exactly 0. scores (B, S), mask (B, S) bool."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # rows with no real position stay 0, not NaN
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights.to(scores.dtype)


def weighted_sum(weights: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
    """c = Σ_j α_j h_j. weights (B, S), memory (B, S, H) → (B, H)."""
    return torch.bmm(weights.unsqueeze(1), memory).squeeze(1)


class AdditiveAttention(nn.Module):
    """Bahdanau et al. (2015), Eq. 5–6 and A.1.2: e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.W_a = nn.Linear(query_size, attention_size, bias=False)
        self.U_a = nn.Linear(key_size, attention_size, bias=True)
        self.v_a = nn.Linear(attention_size, 1, bias=False)

    def project_keys(self, memory: torch.Tensor) -> torch.Tensor:
        """U_a h_j for every source position, once per source: (B, S, H_k) → (B, S, A), fp32."""
        with full_precision(memory):
            return self.U_a(widen(memory))

    def forward(self, query, memory, mask=None, projected_keys=None):
        """query s_{i−1} (B, H_q), memory h (B, S, H_k) → context c_i (B, H_k), weights α_i (B, S); fp32."""
        keys = self.project_keys(memory) if projected_keys is None else projected_keys  # (B, S, A)
        with full_precision(query):
            query, memory, keys = widen(query), widen(memory), widen(keys)
            e = self.v_a(torch.tanh(self.W_a(query).unsqueeze(1) + keys)).squeeze(-1)  # e_ij (A.1.2): (B, S)
            alpha = masked_softmax(e, mask)  # Eq. 6
            return weighted_sum(alpha, memory), alpha  # Eq. 5


class LuongAttention(nn.Module):
    """Luong et al. (2015) global or local attention with the dot / general / concat / location scores.

    ``window`` D > 0 makes it local: ``local="monotonic"`` (local-m, p_t = t) or ``"predictive"`` (local-p).
    ``max_source_length`` is needed by the location score, whose W_a maps h_t to one logit per position.
    """

    def __init__(
        self,
        hidden_size: int,
        score: str = "general",
        *,
        local: str | None = None,
        window: int = 10,
        max_source_length: int = 128,
    ):
        super().__init__()
        if score not in LUONG_SCORES:
            raise ValueError(f"score must be one of {LUONG_SCORES}, got {score!r}")
        if local not in (None, "monotonic", "predictive"):
            raise ValueError(f"local must be None, 'monotonic' or 'predictive', got {local!r}")
        self.score_name, self.local, self.D = score, local, window
        H = hidden_size
        if score == "general":
            self.W_a = nn.Linear(H, H, bias=False)
        elif score == "concat":
            self.W_a = nn.Linear(2 * H, H, bias=False)
            self.v_a = nn.Linear(H, 1, bias=False)
        elif score == "location":
            self.W_a = nn.Linear(H, max_source_length, bias=False)
        if local == "predictive":
            self.W_p = nn.Linear(H, H, bias=False)
            self.v_p = nn.Linear(H, 1, bias=False)

    def project_keys(self, memory: torch.Tensor) -> torch.Tensor | None:
        """The part of the score that depends on the source only, computed once per source (B, S, H) or None.

        general: W_a h̄_s; concat: the h̄_s half of W_a [h_t; h̄_s] = W_a[:, :H] h_t + W_a[:, H:] h̄_s. fp32.
        """
        with full_precision(memory):
            memory = widen(memory)
            if self.score_name == "general":
                return self.W_a(memory)
            if self.score_name == "concat":
                H = memory.size(-1)
                return memory @ self.W_a.weight[:, H:].T
        return None

    def score(
        self, h_t: torch.Tensor, memory: torch.Tensor, keys: torch.Tensor | None = None
    ) -> torch.Tensor:
        """score(h_t, h̄_s) for every s: h_t (B, H), memory h̄ (B, S, H) → (B, S)."""
        if self.score_name == "dot":  # h_tᵀ h̄_s
            return torch.bmm(memory, h_t.unsqueeze(-1)).squeeze(-1)
        if self.score_name in ("general", "concat") and keys is None:
            keys = self.project_keys(memory)
        if self.score_name == "general":  # h_tᵀ (W_a h̄_s)
            return torch.bmm(keys, h_t.unsqueeze(-1)).squeeze(-1)
        if self.score_name == "concat":  # v_aᵀ tanh(W_a [h_t; h̄_s])
            H = h_t.size(-1)
            query = h_t @ self.W_a.weight[:, :H].T  # (B, H)
            return self.v_a(torch.tanh(query.unsqueeze(1) + keys)).squeeze(-1)
        S = memory.size(1)  # location (Eq. 8): a_t = softmax(W_a h_t), one logit per source position
        scores = self.W_a(h_t)[:, :S]  # (B, min(S, max_source_length))
        if S > self.W_a.out_features:  # footnote 6: "for long sentences, we ignore words near the end"
            scores = F.pad(scores, (0, S - self.W_a.out_features), value=float("-inf"))
        return scores

    def forward(
        self, h_t, memory, mask=None, *, keys=None, t: int | torch.Tensor | None = None, lengths=None
    ):
        """h_t (B, H), memory (B, S, H), mask (B, S) → context c_t (B, H), weights a_t (B, S).

        ``keys`` is ``project_keys(memory)``, passed in to compute it once per source. Local attention also
        needs the target position t (local-m); both local forms use the source lengths (from the mask).
        Computed in fp32, also under autocast.
        """
        with full_precision(h_t):
            keys = None if keys is None else widen(keys)
            return self._attend(widen(h_t), widen(memory), mask, keys, t, lengths)

    def _attend(self, h_t, memory, mask, keys, t, lengths):
        scores = self.score(h_t, memory, keys)  # (B, S)
        if self.local is None:
            alpha = masked_softmax(scores, mask)
            return weighted_sum(alpha, memory), alpha
        B, S = scores.shape
        positions = torch.arange(S, device=scores.device, dtype=torch.float)[None, :]  # (1, S)
        if lengths is None:
            lengths = mask.sum(-1) if mask is not None else torch.full((B,), S, device=scores.device)
        if self.local == "monotonic":  # local-m: p_t = t (clipped to the source)
            p_t = torch.as_tensor(t, device=scores.device, dtype=torch.float).expand(B)
            p_t = torch.minimum(p_t, (lengths - 1).float())
        else:  # local-p, Eq. 9: p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))
            p_t = lengths.float() * torch.sigmoid(self.v_p(torch.tanh(self.W_p(h_t)))).squeeze(-1)
        p_t = p_t[:, None]  # (B, 1)
        in_window = (positions - p_t).abs() <= self.D  # (B, S)
        window_mask = in_window if mask is None else (in_window & mask)
        alpha = masked_softmax(scores, window_mask)
        if self.local == "predictive":  # Eq. 10: favour points near p_t with a Gaussian, σ = D/2
            sigma = self.D / 2
            alpha = alpha * torch.exp(-((positions - p_t) ** 2) / (2 * sigma**2))
        return weighted_sum(alpha, memory), alpha


@dataclass
class HardAlignment:
    """One step's hard attention: the context (B, H), the log-probability log α_{i, s_i} of each row's sampled
    location (B,) (0 where the row took the expected context, or at test time) and the entropy H(α_i) (B,)."""

    context: torch.Tensor
    log_prob: torch.Tensor
    entropy: torch.Tensor


def hard_alignment(
    alpha: torch.Tensor, memory: torch.Tensor, *, sample: bool, expected_prob: float = 0.5
) -> HardAlignment:
    """Xu et al.'s hard attention over weights α (B, S) and memory h (B, S, H): with ``sample`` (training)
    s ~ Multinoulli(α) and c = h_s, or for a row chosen with probability ``expected_prob`` c = Σ_j α_j h_j;
    without, c = h at argmax α. The location is a discrete choice: no gradient flows through c to α (the
    log-probability carries α's gradient, for REINFORCE)."""
    B = alpha.size(0)
    rows = torch.arange(B, device=alpha.device)
    p = alpha.float()
    entropy = -(p * torch.log(p.clamp(min=1e-12))).sum(-1)  # H(α_i): (B,)
    if not sample:
        location = p.argmax(-1)  # (B,)
        zero = torch.zeros(B, device=alpha.device)
        return HardAlignment(memory[rows, location], zero, entropy)
    location = torch.multinomial(p.detach(), 1).squeeze(-1)  # s_i ~ Multinoulli(α_i): (B,)
    expected = torch.rand(B, device=alpha.device) < expected_prob  # (B,) rows that take Σ_j α_ij h_j
    context = torch.where(expected[:, None], weighted_sum(alpha, memory), memory[rows, location])
    log_prob = torch.log(p[rows, location].clamp(min=1e-12)).masked_fill(expected, 0.0)
    return HardAlignment(context, log_prob, entropy)
