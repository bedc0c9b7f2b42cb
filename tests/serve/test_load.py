"""benchmarks/serve_load.py at CI's size on the tiny checkpoints: the server process answers every request
of concurrent clients with and without dynamic batching, each answer equal to the offline pipeline's, and
an overloaded queue refuses some requests with 503 while the server stays healthy (the script exits 1
otherwise). The full size is a command: `python benchmarks/serve_load.py CLASSIFIER ENCODER`."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


@pytest.mark.slow
def test_the_load_test_runs_small(checkpoints, tmp_path):
    words = "the film was great awful story movie paris john lives".split()
    rows = [" ".join(words[i % 7 : i % 7 + 3 + i % 4]) for i in range(40)]
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"{r}\t0\n" for r in rows))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "serve_load.py"), str(checkpoints["sequence"]),
         str(checkpoints["pretrained"]), "--clients", "4", "--requests", "10", "--sentences", str(tmp_path / "dev.tsv")],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = {
        line.split("|")[1].strip(): line.split("|")[2:]
        for line in proc.stdout.splitlines()
        if line.startswith("| ")
    }
    for mode in ("batched", "unbatched"):
        requests, answered, refused, lost = (int(x) for x in table[mode][:4])
        wrong, changed = table[mode][4].split()  # "W (C)": wrong answers, labels changed among them
        assert requests == answered == 40 and refused == lost == int(wrong) == 0 and changed == "(0)"
    assert int(table["overloaded"][2]) > 0  # refused
    assert "server is healthy" in proc.stdout
