"""benchmarks/gpt.py runs end to end on a tiny model (``--quick``): generation and the training step, both
libraries, the equal-output checks included (the script exits 1 when fp32 outputs or losses differ)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("transformers")


@pytest.mark.slow
def test_the_gpt_benchmark_runs_quick():
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's seq2bert, whatever is installed
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpt.py"), "--quick"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "greedy, fp32" in out and "beam 4, fp32" in out and "training step" in out
    generation = [line for line in out.splitlines() if ", fp32 " in line]
    assert len(generation) == 2 and all(line.endswith("identical") for line in generation)
