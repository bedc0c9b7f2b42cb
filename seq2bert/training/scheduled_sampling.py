"""Scheduled sampling (Bengio, Vinyals, Jaitly & Shazeer, 2015): at training step i, the probability ε_i that
the decoder is fed the true previous token rather than its own prediction.

Teacher forcing feeds the decoder the true y_{t−1}; at inference it is fed its own previous output, and an
early mistake puts it in states it never saw in training. Sect. 2.4 of the paper bridges the gap with a
curriculum: at the i-th mini-batch, for every target position t > 1 of every example, flip a coin — the true
y_{t−1} with probability ε_i, else a token sampled from the model's own distribution at t − 1 — and let ε_i
decay from 1 (teacher forcing) towards 0 (the model feeds itself, as at inference). The decays (Fig. 2):

    linear            ε_i = max(ε, k − c·i)      ε ∈ [0, 1) the least truth the model is given
    exponential       ε_i = k^i                  k < 1
    inverse sigmoid   ε_i = k / (k + exp(i/k))   k ≥ 1; ε_i = 1/2 at i = k·ln k

The feeding itself is every encoder-decoder's, through the decoding protocol (models/encoder_decoder.py,
``ScheduledSampling``); this module turns a ``ScheduledSamplingConfig`` into ε_i. The paper leaves k and c
to "the expected speed of convergence"; left out here, they follow the run's length T: k makes ε_{T/2} = 1/2
(linear: k = 1), and the linear slope c = k/T reaches 0 at the end of the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from seq2bert.errors import ConfigError

SCHEDULES = ("none", "inverse_sigmoid", "exponential", "linear")


# --- Fig. 2 of the paper
def linear(i: int, *, k: float, c: float, floor: float) -> float:
    """ε_i = max(ε, k − c·i), ε = ``floor``."""
    return max(floor, k - c * i)


def exponential(i: int, *, k: float) -> float:
    """ε_i = k^i (k < 1)."""
    return k**i


def inverse_sigmoid(i: int, *, k: float) -> float:
    """ε_i = k / (k + exp(i/k)) (k ≥ 1)."""
    return k / (k + math.exp(min(i / k, 700.0)))  # exp(700) is near float's largest: ε_i ≈ 0 from there on


def halfway_k(schedule: str, total_steps: int) -> float:
    """The k with ε_{T/2} = 1/2 for a run of T = ``total_steps`` steps (linear: k = 1, the paper's start)."""
    half = max(total_steps, 1) / 2
    if schedule == "exponential":  # k^(T/2) = 1/2
        return 0.5 ** (1 / half)
    if schedule == "inverse_sigmoid":  # k / (k + exp(T/2k)) = 1/2  ⇔  k·ln k = T/2, solved by bisection
        low, high = 1.0, max(half, math.e)
        for _ in range(100):
            mid = (low + high) / 2
            low, high = (mid, high) if mid * math.log(mid) < half else (low, mid)
        return (low + high) / 2
    return 1.0


@dataclass
class ScheduledSamplingConfig:
    """``train.scheduled_sampling`` of a translation run (recurrent models only).

    ``schedule``: none (teacher forcing, the default), inverse_sigmoid, exponential or linear; ``k``, and for
    linear ``c`` and ``min_epsilon`` (the paper's ε), as in the formulas above — left out (null), k makes ε_i
    fall to 1/2 halfway through the run and c = k/T. ``sampling``: feed a token ``sample``d from the model's
    distribution (the paper) or its ``argmax``."""

    schedule: Literal["none", "inverse_sigmoid", "exponential", "linear"] = "none"
    k: float | None = None
    c: float | None = None
    min_epsilon: float = 0.0
    sampling: Literal["sample", "argmax"] = "sample"

    @property
    def enabled(self) -> bool:
        return self.schedule != "none"

    def validate(self) -> None:
        s, k = self.schedule, self.k
        if not self.enabled and (k is not None or self.c is not None or self.min_epsilon):
            raise ConfigError(
                "schedule: none (teacher forcing) takes no k, c or min_epsilon; name a schedule"
            )
        if s == "inverse_sigmoid" and k is not None and not k >= 1:
            raise ConfigError(f"k: the inverse_sigmoid schedule needs k >= 1, got {k}")
        if s == "exponential" and k is not None and not 0 < k <= 1:
            raise ConfigError(f"k: the exponential schedule needs 0 < k <= 1, got {k}")
        if s == "linear" and k is not None and not 0 < k <= 1:
            raise ConfigError(f"k: the linear schedule starts at ε_0 = k in (0, 1], got {k}")
        for name in ("c", "min_epsilon"):
            if getattr(self, name) and s != "linear":
                raise ConfigError(f"{name}: only the linear schedule has one (schedule: {s})")
        if self.c is not None and not self.c >= 0:
            raise ConfigError(f"c: the slope of the linear schedule must be >= 0, got {self.c}")
        if not 0 <= self.min_epsilon < 1:
            raise ConfigError(f"min_epsilon: must be in [0, 1), got {self.min_epsilon}")

    def __post_init__(self) -> None:
        self.validate()


def epsilon_schedule(cfg: ScheduledSamplingConfig, total_steps: int) -> Callable[[int], float]:
    """i ↦ ε_i of ``cfg`` for a run of ``total_steps`` steps (k and c filled in when left out)."""
    k = cfg.k if cfg.k is not None else halfway_k(cfg.schedule, total_steps)
    if cfg.schedule == "inverse_sigmoid":
        return lambda i: inverse_sigmoid(i, k=k)
    if cfg.schedule == "exponential":
        return lambda i: exponential(i, k=k)
    if cfg.schedule == "linear":
        c = cfg.c if cfg.c is not None else k / max(total_steps, 1)
        return lambda i: linear(i, k=k, c=c, floor=cfg.min_epsilon)
    return lambda i: 1.0  # teacher forcing


def describe(cfg: ScheduledSamplingConfig, total_steps: int) -> str:
    """One line for the log: the schedule, its k, and ε at the first, middle and last step."""
    eps = epsilon_schedule(cfg, total_steps)
    k = cfg.k if cfg.k is not None else halfway_k(cfg.schedule, total_steps)
    points = ", ".join(f"ε_{i} = {eps(i):.3f}" for i in (0, total_steps // 2, total_steps))
    return f"scheduled sampling ({cfg.sampling}): {cfg.schedule} with k = {k:.4g}: {points}"
