"""A run directory belongs to one run at a time and never loses best/ (issue 23, items 2 and 3): a second run
(or a --resume) on a directory in use is one line and exit 2, a killed run's lock dies with it, best/ is
replaced by one atomic exchange (and where the system cannot exchange, a kill between the two renames is
repaired at the next start), and what interrupted writes leave is cleaned when a run takes the directory."""

import os
import signal
import subprocess
import sys
import time

import pytest

from seq2bert import io
from seq2bert.cli import main
from seq2bert.errors import CheckpointError
from seq2bert.training import checkpoint as ckpt
from tests.conftest import REPO

COPY = ["--task", "copy", "--set", "data.num_train=400", "--set", "data.num_valid=40", "--set", "data.num_test=40",
        "--set", "model.hidden_size=16", "--set", "model.embedding_dim=8", "--set", "train.bf16=false"]  # fmt: skip


def start_run(out, *extra):
    """A `seq2bert train` in another process, returned once it holds ``out``."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "seq2bert.cli", "train", *COPY, "--out", str(out), *extra],
                            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    for _ in range(600):
        if (out / ".lock").is_file() and (out / ".lock").read_text().startswith("process"):
            return proc
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read())
        time.sleep(0.05)
    raise AssertionError("the run never took its directory")


@pytest.mark.slow
def test_a_second_run_on_a_directory_in_use_is_one_line_and_a_killed_run_frees_it(tmp_path, capsys):
    out = tmp_path / "run"
    proc = start_run(out, "--set", "train.max_epochs=1000", "--set", "train.max_minutes=0.3")
    try:
        for args in (["train", *COPY, "--out", str(out)], ["train", *COPY, "--out", str(out), "--resume"]):
            assert main(args) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"in use by another run (process {proc.pid}," in err
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    with ckpt.run_dir_lock(out):  # the kernel released the dead run's lock: the directory is free again
        pass


def test_the_lock_is_reentrant_in_one_process_and_released_after(tmp_path):
    with ckpt.run_dir_lock(tmp_path):
        with ckpt.run_dir_lock(tmp_path):
            pass
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        code = f"from seq2bert.training.checkpoint import run_dir_lock\nwith run_dir_lock({str(tmp_path)!r}): pass"
        other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert other.returncode != 0 and "in use by another run" in other.stderr
    with ckpt.run_dir_lock(tmp_path):  # released: taken again
        pass


def write(content):
    def fill(d):
        (d / "model.safetensors").write_text(content)

    return fill


def test_best_is_exchanged_in_one_step_and_never_missing(tmp_path):
    best = tmp_path / "best"
    io.write_dir_atomically(best, write("one"))
    inode = best.stat().st_ino
    seen = []
    real = os.replace

    def watching(a, b):  # the fallback's renames: none may run when the exchange works
        seen.append((a, b))
        return real(a, b)

    os.replace = watching
    try:
        io.write_dir_atomically(best, write("two"))
    finally:
        os.replace = real
    if seen and sys.platform != "linux":  # no renameat2: the fallback ran
        pytest.skip("renameat2(RENAME_EXCHANGE) is Linux's")
    assert not seen, "best/ was renamed aside, not exchanged"
    assert (best / "model.safetensors").read_text() == "two" and best.stat().st_ino != inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]


def test_a_kill_between_the_fallbacks_renames_is_repaired_at_the_next_start(tmp_path, monkeypatch):
    best = tmp_path / "best"
    io.write_dir_atomically(best, write("one"))
    monkeypatch.setattr(io, "_exchange", lambda a, b: False)
    real, calls = os.replace, []

    def killed_after_first(a, b):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies between best → .best.old-PID and tmp → best
        return real(a, b)

    monkeypatch.setattr(os, "replace", killed_after_first)
    with pytest.raises(KeyboardInterrupt):
        io.write_dir_atomically(best, write("two"))
    monkeypatch.setattr(os, "replace", real)
    assert not best.exists() and list(tmp_path.glob(".best.old-*"))
    with ckpt.run_dir_lock(tmp_path):  # a run taking the directory puts the old best/ back
        assert (best / "model.safetensors").read_text() == "one"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "best"]


def test_leftovers_of_interrupted_writes_are_cleaned_when_a_run_takes_the_directory(tmp_path):
    (tmp_path / ".checkpoint-40.tmp-abc123").mkdir()
    (tmp_path / ".checkpoint-40.tmp-abc123" / "model.safetensors").write_text("half")
    (tmp_path / ".log.jsonl.xyz.tmp").write_text("half")
    (tmp_path / "checkpoint-20").mkdir()
    with ckpt.run_dir_lock(tmp_path):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "checkpoint-20"]
    with pytest.raises(CheckpointError):
        with ckpt.run_dir_lock(tmp_path / "x"):
            raise CheckpointError("inner errors pass through")
