"""The engine on a toy regression problem: checkpoints, best model, early stopping, accumulation, bf16."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from seq2bert.errors import CheckpointError, ConfigError, DataError
from seq2bert.models.outputs import Seq2SeqLMOutput
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, x, y):
        return Seq2SeqLMOutput(logits=self.lin(x), loss=((self.lin(x) - y) ** 2).mean())


class Plan:
    def __init__(self, n, bs):
        self.n, self.bs = n, bs

    def batches(self, epoch):
        g = torch.Generator().manual_seed(epoch)
        order = torch.randperm(self.n, generator=g).tolist()
        return [order[i : i + self.bs] for i in range(0, self.n, self.bs)]


torch.manual_seed(0)
X = torch.randn(72, 4)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1


def collate(idx):
    return {"x": X[idx], "y": Y[idx]}


def mse(model):
    with torch.no_grad():
        return {"loss": float(((model.lin(X[:64]) - Y[:64]) ** 2).mean())}


def make(tmp_path, evaluate=mse, **kw):
    torch.manual_seed(0)
    cfg = TrainConfig(**{"lr": 0.05, "clip_norm": 0.0, "weight_decay": 0.0, "max_epochs": 5, **kw})
    return Trainer(
        Toy(),
        cfg,
        plan=Plan(64, 8),
        collate=collate,
        out_dir=tmp_path,
        evaluate=evaluate,
        progress_bar=False,
        plot_curves=plot_training_curves,
    )


def test_training_lowers_the_loss_and_writes_logs_and_checkpoints(tmp_path):
    before = mse(make(tmp_path / "x").model)["loss"]
    result = make(tmp_path, keep_last=2, lr=0.3).fit()
    assert result.progress.step == 40 and result.progress.epoch == 5
    assert result.progress.last_eval["loss"] < before / 10
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["split"] == "valid"] == [8, 16, 24, 32, 40]
    assert all({"loss", "lr", "tokens_per_s"} <= r.keys() for r in records if r["split"] == "train")
    assert [p.name for p in ckpt.list_checkpoints(tmp_path)] == ["checkpoint-32", "checkpoint-40"]
    state = json.loads((tmp_path / "checkpoint-40" / "trainer_state.json").read_text())
    assert state["step"] == 40 and state["best_step"] == 40
    assert (tmp_path / "best" / "model.safetensors").is_file()
    assert (tmp_path / "curves.png").stat().st_size > 5000
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary folder left behind


def test_best_checkpoint_and_early_stopping(tmp_path):
    scores = iter([5.0, 3.0, 4.0, 4.5, 6.0, 7.0])
    trainer = make(
        tmp_path, evaluate=lambda m: {"loss": next(scores)}, eval_every=4, patience=2, max_epochs=10
    )
    result = trainer.fit()
    assert result.progress.stopped_early
    assert result.progress.best == 3.0 and result.progress.best_step == 8
    assert result.progress.step == 16  # two evaluations (at 12, 16) without improvement
    assert json.loads((tmp_path / "best" / "trainer_state.json").read_text())["step"] == 8


def test_higher_is_better_metric(tmp_path):
    scores = iter([1.0, 3.0, 2.0, 2.5, 2.7, 2.8])
    result = make(tmp_path, evaluate=lambda m: {"acc": next(scores)}, metric="acc", eval_every=8).fit()
    assert result.progress.best == 3.0 and result.progress.best_step == 16


def test_gradient_accumulation_matches_bigger_batches(tmp_path):
    # fp32 on every CPU: the sums are equal only up to rounding, and bf16 rounds far more coarsely
    a = make(tmp_path / "a", accumulate=2, max_epochs=1, optimizer="sgd", bf16=False)
    a.plan = Plan(64, 4)
    a.fit()
    b = make(tmp_path / "b", max_epochs=1, optimizer="sgd", bf16=False)
    b.plan = Plan(64, 8)
    # the same examples per step: batches of 8 in order = pairs of batches of 4 in the same order
    b.plan.batches = lambda e: [
        sum(pair, []) for pair in zip(Plan(64, 4).batches(e)[::2], Plan(64, 4).batches(e)[1::2], strict=True)
    ]
    b.fit()
    torch.testing.assert_close(a.model.lin.weight, b.model.lin.weight)


def test_bf16_autocast_runs_and_learns(tmp_path):
    result = make(tmp_path, bf16=True, lr=0.3).fit()
    assert result.progress.last_eval["loss"] < 1.0


def test_max_steps_and_time_limit(tmp_path):
    assert make(tmp_path / "s", max_steps=13).fit().progress.step == 13
    assert make(tmp_path / "t", max_minutes=1e-6, max_epochs=100).fit().progress.step == 1


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    def broken(d):
        (d / "half.bin").write_bytes(b"x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        ckpt.write_dir_atomically(tmp_path / "checkpoint-5", broken)
    assert list(tmp_path.iterdir()) == []
    ckpt.write_dir_atomically(tmp_path / "checkpoint-5", lambda d: (d / "a").write_text("1"))
    ckpt.write_dir_atomically(tmp_path / "checkpoint-5", lambda d: (d / "b").write_text("2"))
    assert [p.name for p in (tmp_path / "checkpoint-5").iterdir()] == ["b"]


def test_trainer_state_loads_without_pickled_code(tmp_path):
    make(tmp_path, max_steps=3, save_every=3).fit()
    state = torch.load(tmp_path / "checkpoint-3" / "trainer_state.pt", weights_only=True)
    assert {"optimizer", "scheduler", "rng", "progress"} <= state.keys()


def test_resolve_checkpoint(tmp_path):
    make(tmp_path, max_steps=3).fit()
    assert ckpt.resolve_checkpoint(tmp_path) == tmp_path / "best"
    assert ckpt.resolve_checkpoint(tmp_path / "checkpoint-3") == tmp_path / "checkpoint-3"
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        ckpt.resolve_checkpoint(tmp_path / "missing")


def test_a_short_last_group_of_an_epoch_is_averaged_over_its_own_size(tmp_path):
    """18 micro-batches with accumulate=4: the epoch's last step has 2 micro-batches and divides by 2."""
    a = make(tmp_path / "a", accumulate=4, max_epochs=1, optimizer="sgd", bf16=False)  # fp32: see above
    a.plan = Plan(72, 4)
    a.fit()
    b = make(tmp_path / "b", max_epochs=1, optimizer="sgd", bf16=False)
    small = Plan(72, 4).batches(0)
    b.plan.batches = lambda e: [sum(small[i : i + 4], []) for i in range(0, 18, 4)]  # 4 steps of 16, one of 8
    b.fit()
    assert a.progress.step == b.progress.step == 5
    torch.testing.assert_close(a.model.lin.weight, b.model.lin.weight)


def test_refuses_to_mix_two_runs_in_one_directory(tmp_path):
    make(tmp_path, max_steps=2).fit()
    with pytest.raises(CheckpointError, match="already holds a run: pass --resume"):
        make(tmp_path, max_steps=2).fit()
    make(tmp_path, max_steps=4).fit(resume=True)
    assert ckpt.latest_checkpoint(tmp_path).name == "checkpoint-4"


def toy_checkpoint(directory, weight: float, bias: float):
    model = Toy()
    with torch.no_grad():
        model.lin.weight.fill_(weight)
        model.lin.bias.fill_(bias)
    directory.mkdir(parents=True)
    ckpt.save_weights(model, directory)
    (directory / "config.json").write_text('{"model_type": "toy"}')
    (directory / "trainer_state.json").write_text("{}")
    return directory


def test_average_checkpoints_is_the_mean_of_the_weights_with_the_last_ones_files(tmp_path):
    dirs = [
        toy_checkpoint(tmp_path / f"checkpoint-{i}", w, b)
        for i, (w, b) in enumerate([(1, 0), (2, 3), (6, -6)])
    ]
    ckpt.average_checkpoints(dirs, tmp_path / "averaged")
    model = Toy()
    ckpt.load_weights(model, tmp_path / "averaged")
    assert torch.allclose(model.lin.weight, torch.full((1, 4), 3.0))
    assert torch.allclose(model.lin.bias, torch.tensor([-1.0]))
    names = sorted(p.name for p in (tmp_path / "averaged").iterdir())
    assert names == ["averaged.json", "config.json", "model.safetensors"]  # no optimizer state: not resumable
    assert json.loads((tmp_path / "averaged" / "averaged.json").read_text())["checkpoints"] == [
        "checkpoint-0",
        "checkpoint-1",
        "checkpoint-2",
    ]


def test_average_checkpoints_averages_every_weights_file_beside_the_model(tmp_path):
    """An encoder option's <name>.safetensors (the BiLSTM on top, SesameBERT's excitation) is averaged as
    model.safetensors is, not copied from the last checkpoint."""
    dirs = [toy_checkpoint(tmp_path / f"checkpoint-{i}", i, 0) for i in range(3)]
    for i, d in enumerate(dirs):
        save_file({"top.w": torch.full((2,), float(3 * i))}, str(d / "bilstm_top.safetensors"))
    ckpt.average_checkpoints(dirs, tmp_path / "averaged")
    averaged = load_file(str(tmp_path / "averaged" / "bilstm_top.safetensors"))
    assert torch.equal(averaged["top.w"], torch.full((2,), 3.0))
    (dirs[0] / "bilstm_top.safetensors").unlink()
    with pytest.raises(CheckpointError, match="checkpoint-0: no bilstm_top.safetensors"):
        ckpt.average_checkpoints(dirs, tmp_path / "again")


def test_average_checkpoints_refuses_checkpoints_of_different_models(tmp_path):
    a = toy_checkpoint(tmp_path / "checkpoint-1", 1, 0)
    b = tmp_path / "checkpoint-2"
    b.mkdir()
    ckpt.save_weights(nn.Linear(4, 2), b)
    with pytest.raises(CheckpointError, match="checkpoint-2.*differ"):
        ckpt.average_checkpoints([a, b], tmp_path / "averaged")


@pytest.mark.parametrize("averaged_score, wins", [(0.5, True), (9.0, False)])
def test_average_last_evaluates_the_average_and_keeps_it_as_best_only_if_better(
    tmp_path, averaged_score, wins
):
    scores = iter([5.0, 4.0, 3.0, 2.0, 1.0, averaged_score])  # five epochs, then the average
    trainer = make(tmp_path, evaluate=lambda m: {"loss": next(scores)}, average_last=3, keep_last=1)
    result = trainer.fit()
    kept = [p.name for p in ckpt.list_checkpoints(tmp_path)]
    assert kept == ["checkpoint-24", "checkpoint-32", "checkpoint-40"]  # keep_last raised to average_last
    mean = Toy()
    weights = []
    for name in kept:
        m = Toy()
        ckpt.load_weights(m, tmp_path / name)
        weights.append(m.lin.weight)
    ckpt.load_weights(mean, tmp_path / "averaged")
    assert torch.allclose(mean.lin.weight, torch.stack(weights).mean(0))
    best = Toy()
    ckpt.load_weights(best, tmp_path / "best")
    last = weights[-1]
    assert torch.allclose(best.lin.weight, mean.lin.weight if wins else last)
    assert result.progress.averaged == (kept if wins else [])
    assert torch.equal(trainer.model.lin.weight, last)  # the model ends with the last checkpoint's weights
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["loss"] for r in records if r["split"] == "averaged"] == [averaged_score]


def test_training_data_without_a_batch_is_a_one_line_data_error(tmp_path):
    with pytest.raises(DataError, match="no training batches") as e:  # before: zero steps and no word
        Trainer(Toy(), TrainConfig(), plan=Plan(0, 8), collate=collate, out_dir=tmp_path, progress_bar=False)
    assert "\n" not in str(e.value)


class Stack(nn.Module):
    """An embedding, two layers and a head: ULMFiT's four layer groups."""

    def __init__(self):
        super().__init__()
        self.embeddings = nn.Linear(4, 4)
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.head = nn.Linear(4, 1)

    def forward(self, x, y):
        h = self.embeddings(x)
        for layer in self.layers:
            h = torch.tanh(layer(h))
        out = self.head(h)
        return Seq2SeqLMOutput(logits=out, loss=((out - y) ** 2).mean())


def test_gradual_unfreezing_trains_one_more_group_from_the_top_each_epoch(tmp_path):
    torch.manual_seed(0)
    model = Stack()
    parts = [model.embeddings, model.layers[0], model.layers[1], model.head]
    snapshots = [[m.weight.detach().clone() for m in parts]]

    def at_epoch_end(m):  # the engine evaluates at each epoch's end
        snapshots.append([p.weight.detach().clone() for p in parts])
        return {}

    cfg = TrainConfig(lr=0.05, clip_norm=0.0, weight_decay=0.0, max_epochs=4, gradual_unfreezing=True)
    Trainer(model, cfg, plan=Plan(64, 8), collate=collate, out_dir=tmp_path, evaluate=at_epoch_end,
            progress_bar=False).fit()  # fmt: skip
    moved = [
        [not torch.equal(a, b) for a, b in zip(before, after, strict=True)]
        for before, after in zip(snapshots, snapshots[1:], strict=False)
    ]
    assert moved == [
        [False, False, False, True],
        [False, False, True, True],
        [False, True, True, True],
        [True, True, True, True],
    ]


def test_gradual_unfreezing_every_n_steps_unfreezes_within_an_epoch(tmp_path):
    torch.manual_seed(0)
    model = Stack()
    parts = [model.embeddings, model.layers[0], model.layers[1], model.head]
    snapshots = [[m.weight.detach().clone() for m in parts]]

    def after_step(*_):
        snapshots.append([p.weight.detach().clone() for p in parts])

    cfg = TrainConfig(
        lr=0.05, clip_norm=0.0, weight_decay=0.0, max_epochs=1, gradual_unfreezing=True, unfreeze_every=2
    )
    trainer = Trainer(model, cfg, plan=Plan(64, 8), collate=collate, out_dir=tmp_path, progress_bar=False)
    trainer.optimizer.register_step_post_hook(after_step)
    trainer.fit()
    moved = [
        [not torch.equal(a, b) for a, b in zip(before, after, strict=True)]
        for before, after in zip(snapshots, snapshots[1:], strict=False)
    ]
    stages = [[False, False, False, True], [False, False, True, True], [False, True, True, True], [True] * 4]
    assert moved == [stage for stage in stages for _ in range(2)]  # 8 steps: a group more every 2
    with pytest.raises(ConfigError, match="unfreeze_every: must be >= 0"):
        TrainConfig(gradual_unfreezing=True, unfreeze_every=-1)
