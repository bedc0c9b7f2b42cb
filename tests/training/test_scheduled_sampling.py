"""The decays of scheduled sampling (Bengio et al. 2015, Fig. 2) against their formulas, the defaults that follow
the run's length, and the config's checks."""

import math
import re

import pytest

from seq2bert.errors import ConfigError
from seq2bert.training.scheduled_sampling import (
    ScheduledSamplingConfig,
    epsilon_schedule,
    exponential,
    halfway_k,
    inverse_sigmoid,
    linear,
)

STEPS = [0, 1, 7, 100, 999, 5000]


@pytest.mark.parametrize("i", STEPS)
def test_the_schedules_are_their_formulas(i):
    assert linear(i, k=1.0, c=1e-3, floor=0.1) == max(0.1, 1.0 - 1e-3 * i)
    assert exponential(i, k=0.99) == 0.99**i
    assert inverse_sigmoid(i, k=50.0) == pytest.approx(50.0 / (50.0 + math.exp(i / 50.0)), rel=1e-15)


def test_inverse_sigmoid_is_a_half_at_k_ln_k_and_does_not_overflow():
    k = 200.0
    assert inverse_sigmoid(k * math.log(k), k=k) == pytest.approx(0.5)
    assert inverse_sigmoid(0, k=k) == pytest.approx(k / (k + 1))
    assert inverse_sigmoid(10**9, k=1.0) == pytest.approx(0.0, abs=1e-300)  # exp(10^9) is not a float


@pytest.mark.parametrize("schedule", ["inverse_sigmoid", "exponential", "linear"])
@pytest.mark.parametrize("total", [10, 2000, 8000])
def test_left_out_k_puts_one_half_halfway_through_the_run(schedule, total):
    eps = epsilon_schedule(ScheduledSamplingConfig(schedule=schedule), total)
    assert eps(total // 2) == pytest.approx(0.5, abs=1e-9)
    assert eps(0) > 0.5 > eps(total)
    assert all(eps(i) >= eps(i + 1) for i in range(0, total, max(total // 50, 1)))


def test_halfway_k_of_the_inverse_sigmoid_solves_k_ln_k():
    k = halfway_k("inverse_sigmoid", 2000)
    assert k * math.log(k) == pytest.approx(1000.0)


def test_given_k_and_c_are_used_as_given():
    eps = epsilon_schedule(ScheduledSamplingConfig(schedule="inverse_sigmoid", k=30.0), 2000)
    assert eps(17) == inverse_sigmoid(17, k=30.0)
    eps = epsilon_schedule(ScheduledSamplingConfig(schedule="exponential", k=0.9), 2000)
    assert eps(5) == 0.9**5
    cfg = ScheduledSamplingConfig(schedule="linear", k=0.8, c=0.01, min_epsilon=0.2)
    assert [epsilon_schedule(cfg, 2000)(i) for i in (0, 30, 100)] == [0.8, pytest.approx(0.5), 0.2]
    assert epsilon_schedule(ScheduledSamplingConfig(schedule="linear", k=0.6), 100)(100) == pytest.approx(0.0)
    assert epsilon_schedule(ScheduledSamplingConfig(), 100)(50) == 1.0  # none: teacher forcing


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"schedule": "inverse_sigmoid", "k": 0.5}, "k: the inverse_sigmoid schedule needs k >= 1, got 0.5"),
        ({"schedule": "exponential", "k": 1.5}, "k: the exponential schedule needs 0 < k <= 1"),
        ({"schedule": "linear", "k": 0.0}, "k: the linear schedule starts"),
        ({"schedule": "linear", "c": -1.0}, "c: the slope of the linear schedule must be >= 0, got -1.0"),
        (
            {"schedule": "inverse_sigmoid", "c": 0.1},
            "c: only the linear schedule has one (schedule: inverse_sigmoid)",
        ),
        ({"schedule": "exponential", "min_epsilon": 0.1}, "min_epsilon: only the linear schedule has one"),
        ({"schedule": "linear", "min_epsilon": 1.0}, "min_epsilon: must be in [0, 1), got 1.0"),
        ({"k": 100.0}, "schedule: none (teacher forcing) takes no k"),
    ],
)
def test_bad_settings_name_the_key(kw, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        ScheduledSamplingConfig(**kw)
