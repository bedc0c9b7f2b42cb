"""The training engine: one explicit loop that every model of seq2bert trains with.

    for each epoch:                      # a deterministic batch order per (seed, epoch)
        for each micro-batch:            # resumable: position = (epoch, batch index)
            loss = loss_fn(model, batch) under bf16 autocast if asked (auto: where native)
            (loss / accumulate).backward()
            every `accumulate` micro-batches: clip gradient norm, optimizer step, schedule step
            every `log_every` steps: a JSONL record; every `eval_every`: evaluate, keep the best, maybe stop
            every `save_every` steps: an atomic checkpoint with optimizer, schedule, RNG and data position

A run killed at any moment and started again with ``resume=True`` continues from its last checkpoint and
ends with weights bitwise equal to an uninterrupted run on the same machine (tests/training/test_resume.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from tqdm.auto import tqdm

from seq2bert.config import atomic_write_text
from seq2bert.errors import CheckpointError, ConfigError, DataError, RunFailure
from seq2bert.nn.lora import lora_layers
from seq2bert.precision import use_bf16
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import DistInfo, barrier, broadcast_object, gather_objects
from seq2bert.training.optim import build_optimizer, build_scheduler, clip_gradients, layer_groups

log = logging.getLogger(__name__)

Batch = dict[str, torch.Tensor]


class BatchPlan(Protocol):
    """What the engine needs from the data: a deterministic list of index batches per epoch."""

    def batches(self, epoch: int) -> list[list[int]]: ...


def default_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    return model(**batch).loss


def default_token_count(batch: Batch) -> int:
    """Real (non-padding) tokens in a batch: every attention mask plus the labels that count."""
    n = sum(int(v.sum()) for k, v in batch.items() if k.endswith("attention_mask"))
    if "labels" in batch:
        n += int(batch["labels"].ne(-100).sum())
    return n


@dataclass
class Progress:
    """Where a run is; saved in every checkpoint (trainer_state.json)."""

    step: int = 0
    epoch: int = 0
    batch: int = 0  # next micro-batch index within the epoch
    tokens: int = 0
    train_seconds: float = 0.0
    best: float | None = None
    best_step: int = 0
    bad_evals: int = 0
    last_eval: dict[str, float] = field(default_factory=dict)
    eval_step: int = -1  # step of the last evaluation
    stopped_early: bool = False
    averaged: list[str] = field(default_factory=list)  # the checkpoints best/ averages, if it is an average
    skipped_steps: int = 0  # steps whose loss or gradient was not finite, skipped (train.nonfinite=skip)


@dataclass
class TrainResult:
    progress: Progress
    best_checkpoint: Path | None
    last_checkpoint: Path | None
    tokens_per_second: float


class JsonlLog:
    """Metrics appended one JSON object per line (and to TensorBoard when it is installed)."""

    def __init__(self, path: Path, enabled: bool = True):
        self.path = Path(path)
        self.enabled = enabled
        self.tb = None
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.tb = SummaryWriter(str(self.path.parent / "tensorboard"))
            except Exception:  # TensorBoard is optional
                self.tb = None

    def truncate_after(self, step: int) -> None:
        """On resume: drop records the killed run wrote after its last checkpoint."""
        if not self.enabled or not self.path.exists():
            return
        keep = []
        for number, raw in enumerate(self.path.read_bytes().splitlines(), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:  # never written by the loop (JSON lines of ASCII): refused as it is
                raise CheckpointError(
                    f"{self.path}:{number}: invalid UTF-8 (not a record of seq2bert's log); move the file "
                    "aside to resume"
                ) from None
            try:
                if json.loads(line).get("step", 0) <= step:
                    keep.append(line)
            except json.JSONDecodeError:
                continue  # a line cut by the kill
            except AttributeError:  # JSON, but not a record (a list, a number)
                continue
        atomic_write_text(self.path, "".join(k + "\n" for k in keep))

    def write(self, record: dict[str, Any]) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        if self.tb is not None:
            for k, v in record.items():
                if isinstance(v, (int, float)) and k not in ("step", "epoch"):
                    self.tb.add_scalar(f"{record.get('split', 'train')}/{k}", v, record["step"])

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


class Trainer:
    """Runs the loop above for ``model`` on ``plan`` batches built by ``collate``.

    evaluate(model) -> dict of metrics (on the unwrapped model, in eval mode, rank 0 only).
    write_extra(dir) writes the model config, tokenizer and run config into each checkpoint directory;
    save_model / load_model write and read the weights (default: our model.safetensors; BERT writes the
    Hugging Face layout). plot_curves(log.jsonl, curves.png), given by the recipe (seq2bert.viz.curves), draws
    the run's curves at the end; a plot that fails is logged, never fatal. on_start() writes what the recipe
    keeps once the run has begun — restored, when resumed — (its run.json): a run refused before (a checkpoint
    that cannot be resumed) leaves the directory as it was.
    """

    def __init__(
        self,
        model: nn.Module,
        cfg: TrainConfig,
        *,
        plan: BatchPlan,
        collate: Callable[[list[int]], Batch],
        out_dir: str | Path,
        evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
        write_extra: Callable[[Path], None] | None = None,
        loss_fn: Callable[[nn.Module, Batch], torch.Tensor] = default_loss,
        count_tokens: Callable[[Batch], int] = default_token_count,
        device: torch.device | None = None,
        dist: DistInfo | None = None,
        progress_bar: bool = True,
        save_model: Callable[[nn.Module, Path], None] = ckpt.save_weights,
        load_model: Callable[[nn.Module, Path], None] = ckpt.load_weights,
        plot_curves: Callable[[Path, Path], object] | None = None,
        on_start: Callable[[], None] | None = None,
        save_best_model: Callable[[nn.Module, Path], None] | None = None,
        begin_step: Callable[[int], None] | None = None,
    ):
        self.cfg = cfg
        self.begin_step = begin_step  # told the step about to train (a staged objective: ELECTRA's two-stage)
        self.on_start = on_start
        self.save_model, self.load_model = save_model, load_model  # the checkpoint's weight format
        self.save_best_model = save_best_model or save_model  # best/'s (a LoRA run's: merged)
        if cfg.lora.r and not lora_layers(model):
            raise ConfigError(ckpt.NO_LORA)
        self.plot_curves = plot_curves
        self.dist = dist or DistInfo()
        self.device = device or torch.device("cpu")
        self.model = model.to(self.device)
        self.plan, self.collate = plan, collate
        self.out_dir = Path(out_dir)
        self.evaluate_fn, self.write_extra = evaluate, write_extra
        self.loss_fn, self.count_tokens = loss_fn, count_tokens
        self.progress_bar = progress_bar and self.dist.is_main
        self.bf16 = use_bf16(cfg.bf16, self.device)  # auto: only where bf16 is native (seq2bert/precision.py)
        self.optimizer = build_optimizer(self.model, cfg)
        # gradual unfreezing moves requires_grad within the parameters that train at all (not LoRA's frozen ones)
        if cfg.gradual_unfreezing and self.dist.enabled:  # DDP expects a gradient of every parameter it wraps
            raise ConfigError("train.gradual_unfreezing: one process only (not with torchrun)")
        self.unfreezable = layer_groups(self.model) if cfg.gradual_unfreezing else []
        self.unfrozen_stage = -1  # the stage of gradual unfreezing the parameters are set for
        batches = len(plan.batches(0))
        if not batches:  # else zero steps, a run that "trains" without a word
            raise DataError("no training batches: the training data makes no instances (files, settings)")
        self.steps_per_epoch = math.ceil(batches / cfg.accumulate)
        self.total_steps = cfg.max_steps or cfg.max_epochs * self.steps_per_epoch
        # with a token budget the number of batches varies a little between epochs: epoch 0 sets the schedule
        self.scheduler = build_scheduler(self.optimizer, cfg, self.total_steps, self.steps_per_epoch)
        self.progress = Progress()
        self.log = JsonlLog(self.out_dir / "log.jsonl", enabled=self.dist.is_main)
        self.wrapped = self.model
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.wrapped = DDP(self.model, device_ids=ids)

    # --- checkpoints
    def save(self) -> Path | None:
        path = self.out_dir / f"checkpoint-{self.progress.step}"
        rngs = gather_objects(ckpt.rng_state(), self.dist)  # every rank's RNG: dropout differs per rank
        if self.dist.is_main:
            state = vars(self.progress).copy()

            def write(tmp: Path) -> None:
                self.save_model(self.model, tmp)
                ckpt.save_trainer_state(
                    tmp, progress=state, optimizer=self.optimizer, scheduler=self.scheduler, rngs=rngs
                )
                if self.write_extra is not None:
                    self.write_extra(tmp)

            ckpt.write_dir_atomically(path, write)
            ckpt.prune_checkpoints(self.out_dir, max(self.cfg.keep_last, self.cfg.average_last))
        barrier(self.dist)
        return path

    def save_best(self) -> None:
        if self.dist.is_main:

            def write(tmp: Path) -> None:
                self.save_best_model(self.model, tmp)
                ckpt.write_progress(tmp, vars(self.progress))
                if self.write_extra is not None:
                    self.write_extra(tmp)

            ckpt.write_dir_atomically(self.out_dir / "best", write)

    def restore(self, path: Path) -> None:
        self.load_model(self.model, path)
        state = ckpt.load_trainer_state(path)
        try:
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            progress = Progress(**state["progress"])
        except (KeyError, ValueError, TypeError, RuntimeError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise CheckpointError(
                f"{path / 'trainer_state.pt'}: does not fit this run's optimizer, schedule or "
                f"progress ({first})"
            ) from None
        rngs = state["rng"]
        if len(rngs) != self.dist.world_size:
            log.warning(
                "the checkpoint was written by %d processes, this run has %d: RNG streams differ",
                len(rngs),
                self.dist.world_size,
            )
        ckpt.set_rng_state(rngs[self.dist.rank % len(rngs)])
        self.progress = progress
        self.log.truncate_after(self.progress.step)
        log.info(
            "resumed from %s (step %d, epoch %d, batch %d)",
            path,
            self.progress.step,
            self.progress.epoch,
            self.progress.batch,
        )

    def average_last_checkpoints(self) -> None:
        """Vaswani et al. (2017, Sect. 6.1): "For the base models, we used a single model obtained by averaging
        the last 5 checkpoints". The average of the last ``average_last`` checkpoints is written to
        ``averaged/`` and evaluated like a checkpoint (logged as split "averaged"); when it beats the best one
        on the metric it becomes best/. The model ends with the last checkpoint's weights, as before."""
        paths = ckpt.list_checkpoints(self.out_dir)[-self.cfg.average_last :]
        if len(paths) < 2:
            log.info("average_last: only %d checkpoint, nothing to average", len(paths))
            return
        target = self.out_dir / "averaged"
        if self.dist.is_main:
            ckpt.average_checkpoints(paths, target)
        barrier(self.dist)
        log.info("averaged %s into %s", ", ".join(p.name for p in paths), target)
        self.load_model(self.model, target)
        p = self.progress
        best_before = p.best
        p.averaged = [path.name for path in paths]
        self.run_evaluation(split="averaged")  # saves best/ (the averaged weights) if it is better
        if p.best == best_before:
            p.averaged = []
        self.load_model(self.model, paths[-1])

    # --- evaluation
    def run_evaluation(self, split: str = "valid") -> dict[str, float]:
        metrics: dict[str, float] = {}
        if self.dist.is_main and self.evaluate_fn is not None:
            self.model.eval()
            with torch.no_grad(), self.autocast():
                metrics = dict(self.evaluate_fn(self.model))
            self.model.train()
        metrics = broadcast_object(metrics, self.dist)
        p = self.progress
        p.last_eval = metrics
        if self.cfg.metric in metrics:
            value = metrics[self.cfg.metric]
            better = p.best is None or (
                value > p.best if self.cfg.metric_higher_is_better else value < p.best
            )
            if better:
                p.best, p.best_step, p.bad_evals = value, p.step, 0
                self.save_best()
            else:
                p.bad_evals += 1
        elif metrics:
            log.warning("evaluation has no metric %r (has %s)", self.cfg.metric, sorted(metrics))
        p.eval_step = p.step
        self.log.write({"split": split, "step": p.step, "epoch": p.epoch, **metrics})
        if self.cfg.patience and p.bad_evals >= self.cfg.patience:
            p.stopped_early = True
        return metrics

    def autocast(self):
        if not self.bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    # --- the loop
    def _done(self) -> bool:
        p, cfg = self.progress, self.cfg
        if p.stopped_early:
            return True
        if cfg.max_steps and p.step >= cfg.max_steps:
            return True
        if not cfg.max_steps and p.epoch >= cfg.max_epochs:
            return True
        if cfg.max_minutes:  # clocks differ between processes: rank 0 decides for all
            return bool(broadcast_object(p.train_seconds >= 60 * cfg.max_minutes, self.dist))
        return False

    def fit(self, resume: bool = False) -> TrainResult:
        cfg = self.cfg
        if resume and ckpt.latest_checkpoint(self.out_dir) is not None:
            self.restore(ckpt.latest_checkpoint(self.out_dir))
        elif resume:
            log.warning("--resume: no checkpoint in %s yet; starting from scratch", self.out_dir)
            self.log.truncate_after(-1)
        elif self.dist.is_main:
            ckpt.check_fresh_run_dir(self.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.on_start is not None and self.dist.is_main:
            self.on_start()
        p = self.progress
        self.model.train()
        bar = tqdm(
            total=self.total_steps,
            initial=p.step,
            unit="step",
            disable=not self.progress_bar,
            dynamic_ncols=True,
            mininterval=1.0,
        )
        window = {"tokens": 0, "loss": 0.0, "n": 0, "seconds0": p.train_seconds}
        last_saved = p.step if resume else -1
        try:  # the bar ends its line however the loop ends: an error's message gets a line of its own
            while not self._done():
                batches = self.plan.batches(p.epoch)
                while p.batch < len(batches) and not self._done():
                    self._unfreeze(p.step // cfg.unfreeze_every if cfg.unfreeze_every else p.epoch)
                    if self.begin_step is not None:
                        self.begin_step(p.step)
                    t0 = time.perf_counter()
                    # one optimizer step = `accumulate` micro-batches (fewer at the end of an epoch)
                    group = min(cfg.accumulate, len(batches) - p.batch)
                    group_loss, group_tokens = 0.0, 0
                    for k in range(group):
                        batch = self.collate(batches[p.batch])
                        batch = {name: v.to(self.device, non_blocking=True) for name, v in batch.items()}
                        p.batch += 1
                        last = k == group - 1
                        sync = (
                            self.wrapped.no_sync()
                            if self.dist.enabled and not last
                            else contextlib.nullcontext()
                        )
                        with sync:  # DDP averages gradients only on the group's last backward
                            with self.autocast():
                                loss = self.loss_fn(self.wrapped, batch)
                            (loss / group).backward()
                        group_tokens += self.count_tokens(batch)
                        group_loss += float(loss.detach())
                    p.tokens += group_tokens
                    grad_norm = self._optimizer_step(group_loss / group)
                    if grad_norm is None:  # a non-finite step, skipped: no update, not counted as a step
                        p.train_seconds += time.perf_counter() - t0
                        continue
                    window["tokens"] += group_tokens
                    window["loss"] += group_loss
                    window["n"] += group
                    p.step += 1
                    p.train_seconds += time.perf_counter() - t0
                    bar.update(1)
                    if p.step % cfg.log_every == 0 or p.step == self.total_steps:
                        self._log_train(window, grad_norm, bar)
                    if cfg.eval_every and p.step % cfg.eval_every == 0:
                        self.run_evaluation()
                    if (cfg.save_every and p.step % cfg.save_every == 0) or (
                        not cfg.save_every and p.eval_step == p.step
                    ):
                        self.save()  # at an epoch's end, batch == len(batches): a resume runs the epoch-end part
                        last_saved = p.step
                if p.batch >= len(batches):
                    p.epoch, p.batch = p.epoch + 1, 0
                    if not cfg.eval_every:
                        self.run_evaluation()
                        if not cfg.save_every:
                            self.save()
                            last_saved = p.step
        finally:
            bar.close()
        if p.eval_step != p.step:
            self.run_evaluation()
        if last_saved != p.step:
            self.save()
        if cfg.average_last > 1:
            self.average_last_checkpoints()
        self.log.close()
        if self.dist.is_main and self.plot_curves is not None:
            self._plot()
        best = self.out_dir / "best"
        return TrainResult(
            progress=p,
            best_checkpoint=best if best.exists() else None,
            last_checkpoint=ckpt.latest_checkpoint(self.out_dir),
            tokens_per_second=p.tokens / max(p.train_seconds, 1e-9),
        )

    def _unfreeze(self, stage: int) -> None:
        """ULMFiT's gradual unfreezing (Howard & Ruder 2018, Sect. 3.3): "we first unfreeze the last layer and
        fine-tune all unfrozen layers for one epoch. We then unfreeze the next lower frozen layer and repeat,
        until we fine-tune all layers" — stage e (the epoch, or ``train.unfreeze_every`` steps) trains the top
        e + 1 groups of ``optim.layer_groups``."""
        if not self.unfreezable or stage == self.unfrozen_stage:
            return
        self.unfrozen_stage = stage
        trains = len(self.unfreezable) - min(stage + 1, len(self.unfreezable))
        for level, group in enumerate(self.unfreezable):
            for param in group:
                param.requires_grad_(level >= trains)
        log.info(
            "gradual unfreezing: stage %d trains the top %d of %d layer groups",
            stage,
            len(self.unfreezable) - trains,
            len(self.unfreezable),
        )

    def _log_train(self, window: dict, grad_norm: float, bar) -> None:
        """A training record over the steps since the last one; tokens/s counts training time only."""
        p = self.progress
        record = {
            "split": "train",
            "step": p.step,
            "epoch": p.epoch,
            "loss": window["loss"] / max(window["n"], 1),
            "lr": self.scheduler.get_last_lr()[0],
            "grad_norm": grad_norm,
            "tokens_per_s": window["tokens"] / max(p.train_seconds - window.get("seconds0", 0.0), 1e-9),
            "train_seconds": p.train_seconds,
            **({"skipped_steps": p.skipped_steps} if p.skipped_steps else {}),
        }
        self.log.write(record)
        bar.set_postfix(loss=f"{record['loss']:.3f}", tok_s=f"{record['tokens_per_s']:.0f}")
        window.update(tokens=0, loss=0.0, n=0, seconds0=p.train_seconds)

    def _optimizer_step(self, loss: float) -> float | None:
        """Clip, step the optimizer and the schedule; the gradient norm. A step whose ``loss`` or gradient norm
        is not finite updates nothing: with train.nonfinite=skip it is counted and skipped (None), else the run
        stops with a RunFailure naming the step (its checkpoints hold the last good weights). Under DDP every
        rank sees the same all-reduced gradient, so all take the same way."""
        cfg = self.cfg
        grad_norm = clip_gradients(list(self.model.parameters()), cfg.clip_norm or math.inf)
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            self.optimizer.zero_grad(set_to_none=True)
            p = self.progress
            what = f"loss {loss}" if not math.isfinite(loss) else f"gradient norm {grad_norm}"
            if cfg.nonfinite == "skip":
                p.skipped_steps += 1
                log.warning("step %d: %s, not finite: skipped (%d so far)", p.step + 1, what, p.skipped_steps)
                return None
            last = ckpt.latest_checkpoint(self.out_dir)
            kept = (
                f"{last} holds the last good weights" if last is not None else "no checkpoint was written yet"
            )
            raise RunFailure(
                f"step {p.step + 1}: {what}, not finite; the run stops ({kept}; lower train.lr and "
                "--resume, or set train.nonfinite=skip)"
            )
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def _plot(self) -> None:
        try:
            self.plot_curves(self.out_dir / "log.jsonl", self.out_dir / "curves.png")
        except Exception as e:  # a plot must never lose a finished run
            log.warning("could not plot training curves: %s", e)
