"""What every recipe does around its training run: seeding, counting parameters, and the two files a run
directory keeps beside its checkpoints — run.json (the whole configuration) and results.json (the results
row) — written atomically."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from seq2bert import config as config_io
from seq2bert.io import write_json


def seed_everything(seed: int) -> None:
    """Python's, NumPy's and torch's generators from one seed."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def count_parameters(model: nn.Module) -> int:
    """Trainable and frozen parameters, each shared tensor once."""
    return sum(p.numel() for p in model.parameters())


def write_run_config(directory: str | Path, cfg: Any) -> None:
    """``directory``/run.json: the run's configuration (a dataclass), as `--config` reads it back."""
    write_json(Path(directory) / "run.json", config_io.to_dict(cfg))


def write_results(run_dir: str | Path, row: dict[str, Any]) -> None:
    """``run_dir``/results.json: the run's results row."""
    write_json(Path(run_dir) / "results.json", row)
