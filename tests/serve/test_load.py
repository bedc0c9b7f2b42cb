"""benchmarks/serve_load.py at CI's size on the tiny checkpoints: the server process answers every request
of concurrent clients with and without dynamic batching, each answer equal to the offline pipeline's, and
an overloaded queue refuses some requests with 503 while the server stays healthy (the script exits 1
otherwise). The full size is a command: `python benchmarks/serve_load.py CLASSIFIER ENCODER`."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, load_script

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
         str(checkpoints["pretrained"]), "--clients", "4", "--requests", "10", "--sentences", str(tmp_path / "dev.tsv"), "--rounds", "2"],
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
        wrong = int(table[mode][4])
        expected = 80 if mode == "batched" else 40  # batched: --rounds 2 on the same server
        assert requests == answered == expected and refused == lost == wrong == 0
        start, halfway, highest, end = (float(x) for x in table[mode][-2].split("/"))  # resident MB
        assert 0 < start <= highest and start <= halfway <= highest and start <= end <= highest
    assert int(table["overloaded"][2]) > 0  # refused
    assert "server is healthy" in proc.stdout and "batched, after round 2 of 2: 80 requests" in proc.stdout


def answer(*scores: tuple[str, float]) -> list[dict]:
    return [{"label": k, "score": p} for k, p in sorted(scores, key=lambda kp: -kp[1])]


def test_a_served_answer_is_wrong_when_its_label_or_a_probability_moved():
    judge = load_script("benchmarks/serve_load.py").judge
    offline = answer(("0", 0.56), ("1", 0.44))
    assert not judge("classify", answer(("0", 0.6), ("1", 0.4)), offline, 0.05, 0.999)
    assert judge("classify", answer(("0", 0.6), ("1", 0.4)), offline, 1e-3, 0.9999)  # fp32's tolerance
    # a changed label is wrong even with every probability within the tolerance
    assert judge("classify", answer(("1", 0.51), ("0", 0.49)), answer(("0", 0.52), ("1", 0.48)), 0.05, 0.999)
    assert judge("classify", answer(("0", 0.56)), offline, 0.05, 0.999)  # a label missing
    value = {"label": "score", "score": 3.2}  # a regression model's answer: one dict
    assert not judge("classify", {"label": "score", "score": 3.2004}, value, 1e-3, 0.9999)
    assert judge("classify", {"label": "score", "score": 3.3}, value, 1e-3, 0.9999)
    assert judge("embed", [1.0, 0.0], [1.0, 0.05], 1e-2, 0.999)  # cosine 0.99875
    assert not judge("embed", [1.0, 0.0], [1.0, 0.01], 1e-2, 0.999)
