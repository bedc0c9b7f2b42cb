"""Checkpoints: one directory per save, written atomically, loaded without executing pickled code.

Layout of a checkpoint directory::

    config.json          the model config (with model_type), enough to rebuild the model
    model.safetensors    the weights
    tokenizer.json       the tokenizer
    run.json             the full run config (model, data, train) that produced it
    trainer_state.pt     optimizer, scheduler and RNG states (tensors and plain values only)
    trainer_state.json   step, epoch, position in the data, best metric — human-readable

A run directory holds ``checkpoint-<step>/`` folders (the last ``keep_last`` are kept) and ``best/``, and
``averaged/`` when the last checkpoints are averaged (``average_checkpoints``).
Every directory is first written as a hidden temporary folder beside its target, then renamed into place
(best/ swapped with its successor in one atomic exchange: io.write_dir_atomically), so a crash never leaves
a half-written checkpoint where a resume would find it, nor a run without best/. A run holds its directory
for its lifetime (``run_dir_lock``: ``.lock``), so two runs never write into one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import pickle
import random
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from seq2bert.errors import CheckpointError, ConfigError, UserError
from seq2bert.io import (  # noqa: F401 (re-exported)
    CHECKPOINT_RE,
    clean_leftovers,
    latest_checkpoint,
    list_checkpoints,
    load_weights,
    read_json,
    resolve_checkpoint,
    save_tensors,
    save_weights,
    write_dir_atomically,
)

try:
    import fcntl
except ImportError:  # Windows: runs are not locked
    fcntl = None


def rng_state() -> dict[str, Any]:
    """Every random number generator the loop touches, as tensors and plain values (safe to load)."""
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "keys": torch.from_numpy(np_state[1].astype(np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "python": [list(x) if isinstance(x, tuple) else x for x in random.getstate()],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(
        ("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"])
    )
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def write_progress(directory: Path, progress: dict[str, Any]) -> None:
    (Path(directory) / "trainer_state.json").write_text(json.dumps(progress, indent=2) + "\n")


def save_trainer_state(
    directory: Path,
    *,
    progress: dict[str, Any],
    optimizer,
    scheduler,
    rngs: list[dict[str, Any]] | None = None,
) -> None:
    """Optimizer, schedule, progress and the RNG states of every process (``rngs``, one per rank)."""
    directory = Path(directory)
    state = {
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": rngs if rngs is not None else [rng_state()],
        "progress": progress,
    }
    path = directory / "trainer_state.pt"
    try:  # through a Python file: a failed write is the system's OSError (a full disk), which torch's own
        with open(path, "wb") as f:  # file writer hides behind its RuntimeError "unexpected pos …"
            torch.save(state, f)
    except (OSError, RuntimeError) as e:
        failed = e
        while failed is not None and not isinstance(failed, OSError):  # torch's, raised while closing
            failed = failed.__context__
        if failed is None or failed.errno is None:
            raise
        raise OSError(failed.errno, failed.strerror, str(path)) from None
    write_progress(directory, progress)


TRAINER_STATE_KEYS = ("optimizer", "scheduler", "rng", "progress")


def load_trainer_state(directory: Path) -> dict[str, Any]:
    """The trainer state of a checkpoint, read without executing pickled code; a file that is truncated, not
    a torch archive, holds more than plain tensors and values, or lacks TRAINER_STATE_KEYS is a one-line
    CheckpointError (never torch's own advice to load it unsafely)."""
    path = Path(directory) / "trainer_state.pt"
    if not path.is_file():
        raise CheckpointError(f"{directory}: no trainer_state.pt (a model-only checkpoint cannot be resumed)")
    earlier = "resume from an earlier checkpoint-<step>/ (move this one aside) or start a new run"
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)  # never executes pickled code
    except pickle.UnpicklingError:
        raise CheckpointError(
            f"{path}: holds more than tensors and plain values (not written by seq2bert); {earlier}"
        ) from None
    except Exception:  # torch raises RuntimeErrors of its zip reader, EOFError, …
        raise CheckpointError(f"{path}: truncated or not a torch archive; {earlier}") from None
    missing = [k for k in TRAINER_STATE_KEYS if not isinstance(state, dict) or k not in state]
    if missing:
        raise CheckpointError(f"{path}: not a trainer state (no {', '.join(missing)}); {earlier}")
    return state


log = logging.getLogger(__name__)
LOCK = ".lock"
_HELD: dict[Path, list] = {}  # run directories this process holds: [lock file descriptor, depth]


@contextlib.contextmanager
def run_dir_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir`` for this process: an exclusive lock on ``run_dir``/.lock (flock, released by the
    kernel however the process ends, so a dead run never leaves a stale lock), which a second run on the
    directory meets as a one-line CheckpointError naming the holder; then the leftovers of interrupted
    atomic writes are cleaned (io.clean_leftovers). Re-entrant within a process; under torchrun rank 0
    holds it for all ranks."""
    path = Path(run_dir).resolve()
    if int(os.environ.get("RANK", "0")) != 0 or fcntl is None:  # other ranks; no flock (Windows)
        yield
        return
    if path in _HELD:
        _HELD[path][1] += 1
        try:
            yield
        finally:
            _HELD[path][1] -= 1
        return
    if path.exists() and not path.is_dir():
        raise UserError(
            f"--out {run_dir}: a file; expected a folder for the run (a new one, or a run to resume)"
        )
    made = [p for p in (path, *path.parents) if not p.exists()]  # the folders this run makes, deepest first
    had_lock = (path / LOCK).exists()
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise CheckpointError(
            f"{path}: in use by another run ({holder}); wait for it to end, or choose another --out"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"process {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
    _HELD[path] = [fd, 1]
    try:
        cleaned = clean_leftovers(path)
        if cleaned:
            log.info("%s: cleaned what interrupted writes left: %s", path, ", ".join(cleaned))
        yield
    except BaseException:
        if not had_lock and [p.name for p in path.iterdir()] == [LOCK]:
            unmake(path, made)  # a start refused before anything was written leaves no trace
        raise
    finally:
        del _HELD[path]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def unmake(path: Path, made: list[Path]) -> None:
    """Remove ``path``/.lock and the empty folders of ``made`` (those the run made, deepest first); a folder
    someone else wrote into meanwhile (another run's lock) stays."""
    (path / LOCK).unlink(missing_ok=True)
    for folder in made:
        try:
            folder.rmdir()
        except OSError:
            return


def holds_run_dir(
    recipe: Callable | None = None,
    *,
    check: Callable[[Any, Path], None] | None = None,
    lora: bool = False,
):
    """A recipe ``recipe(cfg, out_dir, …)`` run holding ``out_dir`` (run_dir_lock) from start to end; first
    ``check(cfg, out_dir)`` refuses what can be refused before the directory is made or anything allocated
    (an ``out_dir`` among the inputs, a model too large for the machine: training/run.py). A recipe that
    does not apply LoRA (``lora=False``) refuses ``train.lora.r`` > 0 first. As a decorator:
    ``@holds_run_dir`` or ``@holds_run_dir(check=…)``."""
    if recipe is None:
        return functools.partial(holds_run_dir, check=check, lora=lora)

    @functools.wraps(recipe)
    def run(cfg, out_dir, *args, **kwargs):
        if not lora and getattr(getattr(getattr(cfg, "train", None), "lora", None), "r", 0):
            raise ConfigError(NO_LORA)
        if check is not None:
            check(cfg, Path(out_dir))
        with run_dir_lock(out_dir):
            return recipe(cfg, out_dir, *args, **kwargs)

    return run


NO_LORA = (
    "train.lora.r: this command trains every weight; LoRA is for `seq2bert finetune` (set train.lora.r=0)"
)


def check_fresh_run_dir(run_dir: Path) -> None:
    """A new run must not mix with an old one in the same directory (logs, checkpoints, best/)."""
    run_dir = Path(run_dir)
    if list_checkpoints(run_dir) or (run_dir / "log.jsonl").exists():
        raise CheckpointError(
            f"{run_dir} already holds a run: pass --resume to continue it, or choose a new --out"
        )


def prune_checkpoints(run_dir: Path, keep_last: int) -> None:
    for old in list_checkpoints(run_dir)[:-keep_last]:
        shutil.rmtree(old, ignore_errors=True)


AVERAGED = "averaged.json"  # what an average holds: the checkpoints it averages


def average_checkpoints(directories: list[Path], target: Path) -> None:
    """Write ``target``, a checkpoint whose weights are the element-wise mean of the ``directories``' weights
    (Vaswani et al. 2017, Sect. 6.1: "a single model obtained by averaging the last 5 checkpoints"), summed
    in fp64 and stored in each tensor's own dtype. Every weights file is averaged: model.safetensors and the
    others beside it (an encoder option's ``<name>.safetensors``, a student's projections). Its other files
    (config, tokenizer, run config) are the last directory's; it holds no optimizer state, so a run cannot
    resume from it."""
    if not directories:
        raise CheckpointError(f"{target}: no checkpoints to average")
    last = Path(directories[-1])
    if not (last / "model.safetensors").is_file():
        raise CheckpointError(f"{last}: no model.safetensors (expected a checkpoint directory)")
    names = sorted(f.name for f in last.glob("*.safetensors"))
    means = {name: mean_tensors([Path(d) / name for d in directories]) for name in names}

    def write(tmp: Path) -> None:
        for name, mean in means.items():
            save_tensors(mean, str(tmp / name), metadata={"format": "pt"})
        for f in last.iterdir():
            if f.is_file() and f.suffix != ".safetensors" and not f.name.startswith("trainer_state"):
                shutil.copy2(f, tmp / f.name)
        (tmp / AVERAGED).write_text(
            json.dumps({"checkpoints": [Path(d).name for d in directories]}, indent=2) + "\n"
        )

    write_dir_atomically(Path(target), write)


def mean_tensors(paths: list[Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the same-named tensors of safetensors files (fp64 sums, each tensor's own
    dtype); integer tensors (position ids) must be equal and are kept."""
    sums: dict[str, torch.Tensor] = {}
    dtypes: dict[str, torch.dtype] = {}
    for i, path in enumerate(paths):
        if not path.is_file():
            raise CheckpointError(
                f"{path.parent}: no {path.name} (expected a checkpoint directory like {paths[-1].parent})"
            )
        tensors = load_file(str(path))
        if i and tensors.keys() != sums.keys():
            raise CheckpointError(
                f"{path}: its tensors differ from {paths[0]}'s (not checkpoints of one model)"
            )
        for name, t in tensors.items():
            if not t.is_floating_point():  # e.g. position ids: equal in every checkpoint, kept as they are
                if i and not torch.equal(t, sums[name]):
                    raise CheckpointError(
                        f"{path}: {name} differs between checkpoints and cannot be averaged"
                    )
                sums.setdefault(name, t)
                continue
            dtypes[name] = t.dtype
            sums[name] = t.double() if i == 0 else sums[name] + t.double()
    return {k: (v / len(paths)).to(dtypes[k]) if k in dtypes else v for k, v in sums.items()}
