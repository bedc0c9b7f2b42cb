"""A run killed with SIGKILL at a random step and resumed ends bitwise equal to an uninterrupted run."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

ARGS = [
    "--task",
    "copy",
    "--set",
    "data.num_train=400",
    "--set",
    "data.num_valid=40",
    "--set",
    "data.num_test=40",
    "--set",
    "data.max_len=8",
    "--set",
    "data.max_tokens=200",
    "--set",
    "model.embedding_dim=16",
    "--set",
    "model.hidden_size=32",
    "--set",
    "model.num_layers=2",
    "--set",
    "model.dropout=0.3",  # dropout draws random numbers: the RNG state must be restored too
    "--set",
    "train.max_steps=48",
    "--set",
    "train.save_every=4",
    "--set",
    "train.eval_every=12",
    "--set",
    "train.keep_last=2",
    "--set",
    "train.log_every=4",
    "--set",
    "train.accumulate=2",
    "--set",
    "train.schedule=linear",
    "--set",
    "train.warmup_steps=5",
]


def run(out: Path, *extra: str, args: list[str] = ARGS) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "seq2bert.cli", "train", *args, "--out", str(out), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def final_weights(out: Path) -> dict:
    return load_file(str(out / "checkpoint-48" / "model.safetensors"))


@pytest.mark.slow
def test_sigkill_then_resume_is_bitwise_exact(tmp_path):
    ref = run(tmp_path / "ref")
    killed_dir = tmp_path / "killed"
    victim = run(killed_dir)
    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    # kill after the target-th checkpoint appears, plus a random delay of about a save cycle; by checkpoint 24
    # at the latest, so that half the run is left (a step can take 20 ms: later kills found it finished)
    target = rng.randrange(1, 7)
    deadline = time.time() + 120
    while time.time() < deadline and victim.poll() is None:
        if (
            len(list(killed_dir.glob("checkpoint-*")))
            and max(int(p.name.split("-")[1]) for p in killed_dir.glob("checkpoint-*")) >= 4 * target
        ):
            time.sleep(rng.uniform(0.0, 0.1))
            break
        time.sleep(0.01)
    assert victim.poll() is None, (
        f"the run finished before it could be killed (seed {seed}):\n{victim.stdout.read()}"
    )
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not (killed_dir / "checkpoint-48").exists()
    resumed = run(killed_dir, "--resume", args=[])  # the run's own run.json says what to resume
    out_resumed, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out_resumed
    assert "resumed from" in out_resumed
    out_ref, _ = ref.communicate(timeout=300)
    assert ref.returncode == 0, out_ref
    a, b = final_weights(tmp_path / "ref"), final_weights(killed_dir)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].equal(b[k]), (
            f"{k} differs after resume (kill seed {seed}, target checkpoint {4 * target})"
        )
    log = (killed_dir / "log.jsonl").read_text().splitlines()
    ref_log = (tmp_path / "ref" / "log.jsonl").read_text().splitlines()
    # no duplicated records from the killed run; the same records as the uninterrupted run
    assert len([x for x in log if '"train"' in x]) == 48 // 4

    def strip(lines):
        return [
            {k: v for k, v in json.loads(x).items() if k not in ("tokens_per_s", "train_seconds")}
            for x in lines
        ]

    assert strip(log) == strip(ref_log)
