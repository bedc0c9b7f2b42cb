"""A non-finite value never trains (issue 23, item 5): a non-finite config value is refused in one line, and a
step whose loss or gradient is not finite either stops the run — its checkpoints keep the last good, finite
weights and it resumes — or, with train.nonfinite=skip, is skipped and counted."""

import json
import math

import pytest
import torch

from seq2bert.cli import main
from seq2bert.errors import ConfigError, RunFailure
from seq2bert.io import load_weights
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from tests.training.test_trainer import Toy, make


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "inf", "nan", "1e999"])
def test_a_non_finite_config_value_is_one_line(value, tmp_path, capsys):
    assert main(["train", "--task", "copy", "--out", str(tmp_path / "r"), "--set", f"train.lr={value}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "train.lr: expected a finite number" in err
    assert not (tmp_path / "r").exists()
    with pytest.raises(ConfigError, match="finite"):
        TrainConfig(clip_norm=math.inf)


class Poisoned(Toy):
    """The toy regression whose loss is NaN from the ``at``-th call on (or its gradient, ``grad=True``)."""

    def __init__(self, at, grad=False):
        super().__init__()
        self.calls, self.at, self.grad = 0, at, grad

    def forward(self, x, y):
        out = super().forward(x, y)
        self.calls += 1
        if self.calls >= self.at and self.training:
            if self.grad:  # a finite loss whose gradient is not: sqrt at 0
                out.loss = out.loss + torch.sqrt(self.lin.weight.sum() * 0)
            else:
                out.loss = out.loss * float("nan")
        return out


def poisoned_trainer(tmp_path, at, grad=False, **kw):
    t = make(tmp_path, eval_every=2, keep_last=10, clip_norm=1.0, **kw)
    model = Poisoned(at, grad)
    model.load_state_dict(t.model.state_dict())
    t.model = t.wrapped = model
    t.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    from seq2bert.training.optim import build_scheduler

    t.scheduler = build_scheduler(t.optimizer, t.cfg, t.total_steps, t.steps_per_epoch)
    return t


@pytest.mark.parametrize("grad", [False, True])
def test_a_non_finite_step_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, grad):
    t = poisoned_trainer(tmp_path, at=6, grad=grad)
    with pytest.raises(RunFailure, match=r"step 6: (loss|gradient norm) nan, not finite.*checkpoint-4 holds"):
        t.fit()
    assert all(torch.isfinite(p).all() for p in t.model.parameters())  # the bad step updated nothing
    last = ckpt.latest_checkpoint(tmp_path)
    assert last.name == "checkpoint-4"
    model = Toy()
    load_weights(model, last)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_skip_counts_the_non_finite_steps_and_trains_on(tmp_path):
    t = poisoned_trainer(tmp_path, at=3, nonfinite="skip")
    calls = {"n": 0}
    forward = t.model.forward

    def sometimes(x, y):  # NaN on calls 3 and 5 only
        calls["n"] += 1
        t.model.at = calls["n"] if calls["n"] in (3, 5) else 10**9
        t.model.calls = calls["n"] - 1
        return forward(x, y)

    t.model.forward = sometimes
    result = t.fit()
    assert result.progress.skipped_steps == 2
    assert result.progress.step == 5 * 8 - 2  # 8 batches an epoch, 5 epochs, 2 skipped
    assert all(torch.isfinite(p).all() for p in t.model.parameters())
    records = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert any(r.get("skipped_steps") == 2 for r in records)
