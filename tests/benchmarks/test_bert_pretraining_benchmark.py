"""benchmarks/bert_pretraining.py runs end to end for each family on a tiny model (``--quick``), the
equal-loss check included (the script exits 1 when the losses differ)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("transformers")


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "electra"])
def test_the_pretraining_benchmark_runs_quick(family):
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's seq2bert, whatever is installed
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bert_pretraining.py"), "--family", family, "--quick",
         "--precision", "fp32"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith(f"{family}-tiny") and "(ours) =" in lines[1]
    assert lines[-1].startswith("fp32") and lines[-1].split()[3].endswith("x")
