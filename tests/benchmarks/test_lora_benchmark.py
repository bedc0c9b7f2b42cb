"""benchmarks/lora.py runs both fine-tunings end to end on a tiny BERT and prints their table with the ratios
of what their results.json record."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO
from tests.recipes.test_finetune import init_dir, write_sst2  # noqa: F401 (a fixture)


@pytest.mark.slow
def test_the_lora_benchmark_runs_both_ways_and_prints_the_ratios(init_dir, tmp_path):  # noqa: F811
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [sys.executable, str(REPO / "benchmarks" / "lora.py"), "--init", str(init_dir), "--data",
            str(tmp_path / "sst2"), "--out", str(tmp_path / "runs"), "--steps", "4", "--minutes", "0",
            "--eval-every", "2", "--r", "2"]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = {n: json.loads((tmp_path / "runs" / n / "results.json").read_text()) for n in ("full", "lora")}
    assert results["lora"]["trainable_parameters"] < results["full"]["trainable_parameters"]
    assert results["lora"]["checkpoint_bytes"] < results["full"]["checkpoint_bytes"]
    rows = {
        line.split(" | ")[0].strip("| "): line for line in proc.stdout.splitlines() if line.startswith("| ")
    }
    assert {"full", "lora", "lora / full"} <= rows.keys()
    ratio = results["lora"]["trainable_parameters"] / results["full"]["trainable_parameters"]
    assert f"{ratio:.3f}×" in rows["lora / full"]
    assert "full: seq2bert finetune --task sst2" in proc.stdout and "train.lora.r=2" in proc.stdout
