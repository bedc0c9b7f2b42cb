"""What every recipe does around its training run: seeding, counting parameters, the two files a run
directory keeps beside its checkpoints — run.json (the whole configuration) and results.json (the results
row) — written atomically, and what a run refuses before its directory is made (``check_out_dir``,
``check_model_fits``: holds_run_dir's ``check``)."""

from __future__ import annotations

import dataclasses
import os
import random
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from seq2bert import config as config_io
from seq2bert.errors import ConfigError
from seq2bert.io import check_apart, write_json


def seed_everything(seed: int) -> None:
    """Python's, NumPy's and torch's generators from one seed."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def count_parameters(model: nn.Module) -> int:
    """Trainable and frozen parameters, each shared tensor once."""
    return sum(p.numel() for p in model.parameters())


def trainable_parameters(model: nn.Module) -> int:
    """The parameters the optimizer updates (requires_grad), each shared tensor once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def peak_memory(device: torch.device) -> dict[str, int]:
    """The most memory this process has held: its peak resident set (the whole process, loading included),
    and on CUDA the most torch allocated on the device."""
    import resource  # Unix

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"peak_rss_bytes": peak if sys.platform == "darwin" else peak * 1024}  # kilobytes on Linux
    if device.type == "cuda":
        out["cuda_max_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
    return out


def folder_bytes(path: str | Path) -> int:
    """The bytes of the files in ``path`` and below."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def write_run_config(directory: str | Path, cfg: Any) -> None:
    """``directory``/run.json: the run's configuration (a dataclass), as `--config` reads it back."""
    write_json(Path(directory) / "run.json", config_io.to_dict(cfg))


def trained(result: Any) -> dict[str, Any]:
    """The columns of a results row that say how a run trained: its optimizer steps, seconds and tokens per
    second (a Trainer's FitResult)."""
    return {
        "steps": result.progress.step,
        "train_seconds": result.progress.train_seconds,
        "tokens_per_s": result.tokens_per_second,
    }


def write_results(run_dir: str | Path, row: dict[str, Any]) -> None:
    """``run_dir``/results.json: the run's results row."""
    write_json(Path(run_dir) / "results.json", row)


# --- what a run refuses before its directory is made or anything allocated
def check_out_dir(out_dir: str | Path, inputs: Iterable[str | Path]) -> None:
    """The run directory apart from every input the run reads (its data files and folders, the checkpoint it
    starts from, its teacher): neither one of them, nor inside one, nor holding one (io.check_apart)."""
    check_apart(Path(out_dir), tuple(p for p in inputs if p))


def machine_memory() -> int | None:
    """Bytes of memory this process can have: the machine's physical memory, or a smaller cgroup limit (a
    container's); None where the system does not say."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        limit = ""
    return min(total, int(limit)) if limit.isdigit() else total


def parameter_bytes(build: Callable[[], nn.Module]) -> tuple[int, int] | None:
    """(parameters, bytes of parameters and buffers) of the model ``build()`` makes, built on the meta device:
    shapes without memory. None for a model that cannot be built there (one whose builder reads values)."""
    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the model's own (a vocabulary of 0 before the tokenizer's)
            model = build()
    except RuntimeError as e:
        if "overflow" in str(e):  # a tensor of more than 2**63 bytes ("Storage size calculation overflowed")
            return OVERFLOW, 2**63
        return None
    except Exception:  # built for real by the run, which reports what is wrong with it
        return None
    tensors = [*model.parameters(), *model.buffers()]
    return count_parameters(model), sum(t.numel() * t.element_size() for t in tensors)


LARGEST = 2**31  # no width, length, vocabulary or count of layers of a model reaches it
OVERFLOW = -1  # parameter_bytes' count of a model whose tensors overflow the bytes a tensor can have


def largest_setting(config: Any, reference: Any) -> str:
    """The integer field of ``config`` furthest above the ``reference``'s (its defaults, a teacher's): the
    setting that makes a model large."""
    best, ratio = "", 0.0
    for f in dataclasses.fields(config):
        value, ref = getattr(config, f.name), getattr(reference, f.name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            q = (
                value / ref
                if isinstance(ref, int) and not isinstance(ref, bool) and ref > 0
                else float(value)
            )
            best, ratio = (f.name, q) if q > ratio else (best, ratio)
    return best


def check_model_fits(
    build: Callable[[], nn.Module],
    config: Any,
    optimizer: str,
    *,
    key: str = "model",
    reference: Any = None,
    memory: int | None = None,
) -> None:
    """Refuse the model ``build()`` makes when its weights, gradients and optimizer state (AdamW: two moments,
    4× the weights; SGD: 2×) do not fit in the machine's ``memory`` (machine_memory) — one ConfigError naming
    the setting of ``config`` that makes it large (``key``.<field>, the field furthest above ``reference``'s,
    default: the config class's defaults) — before any directory is made or memory allocated, where torch
    would fail part-way."""
    for f in dataclasses.fields(config):  # a size no model has: refused before a build that would not end
        value = getattr(config, f.name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= LARGEST:
            raise ConfigError(f"{key}.{f.name}={value}: past any model's sizes and counts (below 2**31)")
    memory = machine_memory() if memory is None else memory
    size = parameter_bytes(build)
    if memory is None or size is None:
        return
    params, weights = size
    need = weights * (4 if optimizer == "adamw" else 2)
    if need <= memory:
        return
    if reference is None:
        try:
            reference = type(config)()
        except TypeError:  # a config without defaults
            reference = None
    name = largest_setting(config, reference)
    setting = f"{key}.{name}={getattr(config, name)}" if name else key
    size = (
        f"a model of {params:.3g} parameters needs {gib(need)} for its weights, gradients and {optimizer} state"
        if params != OVERFLOW
        else "a model with tensors of more than 2**63 bytes"
    )
    raise ConfigError(f"{setting}: {size}; this machine has {gib(memory)} of memory (choose a smaller model)")


def gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"
