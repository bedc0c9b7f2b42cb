"""Resource failures and kills (issue 23, item 8 and the fault suite): a full disk, a file-size limit or a
read-only file system while a run writes its checkpoints or log, and memory that cannot be allocated, end in
one line and exit status 1 with nothing half-written; the run resumes and ends bitwise where an uninterrupted
one ends. A kill at every file-system operation of checkpoint writing leaves a directory that resumes."""

import errno
import hashlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from seq2bert import io
from seq2bert.cli import main
from tests.conftest import REPO

COPY = ["--task", "copy", "--set", "data.num_train=200", "--set", "data.num_valid=20", "--set", "data.num_test=20",
        "--set", "model.hidden_size=16", "--set", "model.embedding_dim=8", "--set", "train.max_epochs=3",
        "--set", "train.eval_every=4", "--set", "train.keep_last=100", "--set", "train.bf16=false",
        "--set", "data.max_tokens=200"]  # fmt: skip


def weights(run):
    return hashlib.sha256((run / "best" / "model.safetensors").read_bytes()).hexdigest(), sorted(
        p.name for p in run.iterdir() if p.name.startswith("checkpoint-")
    )


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run = tmp_path_factory.mktemp("whole") / "run"
    assert main(["train", *COPY, "--out", str(run)]) == 0
    return run


def leftovers(run):
    return [p.name for p in run.rglob(".*") if p.name != ".lock"]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_a_full_disk_at_the_third_checkpoint_is_one_line_and_the_run_resumes(code, uninterrupted, tmp_path, capsys,
                                                                            monkeypatch):  # fmt: skip
    run = tmp_path / "run"
    real, calls = io.save_model, []

    def full(model, path, *a, **k):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(code, os.strerror(code), path)
        return real(model, path, *a, **k)

    monkeypatch.setattr(io, "save_model", full)
    assert main(["train", *COPY, "--out", str(run)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    # the file that failed, named as the user sees it: in best/, not in the hidden folder written before it
    target = run / Path(calls[2]).parent.name.split(".tmp-")[0].lstrip(".") / "model.safetensors"
    assert err[-1] == f"seq2bert: failed: {os.strerror(code)}: {target}" and not any(
        "Traceback" in e for e in err
    )
    assert not leftovers(run)  # nothing half-written
    # checkpoint-4 and best/ were written, then the disk was full
    assert [p.name for p in run.glob("checkpoint-*")] == ["checkpoint-4"]
    assert (run / "best" / "model.safetensors").is_file()
    monkeypatch.setattr(io, "save_model", real)
    assert main(["train", "--out", str(run), "--resume"]) == 0
    assert weights(run) == weights(uninterrupted)


def test_a_log_write_that_fails_is_one_line_and_the_run_resumes(uninterrupted, tmp_path, capsys, monkeypatch):
    from seq2bert.training import trainer

    run = tmp_path / "run"
    real, calls = trainer.JsonlLog.write, []

    def failing(self, record):
        calls.append(1)
        if len(calls) == 5:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        return real(self, record)

    monkeypatch.setattr(trainer.JsonlLog, "write", failing)
    assert main(["train", *COPY, "--out", str(run)]) == 1
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith(f"No space left on device: {run / 'log.jsonl'}")
    )
    monkeypatch.setattr(trainer.JsonlLog, "write", real)
    assert main(["train", "--out", str(run), "--resume"]) == 0
    assert weights(run) == weights(uninterrupted)


def test_a_file_size_limit_is_one_line_and_leaves_nothing_half_written(tmp_path):
    """A real limit (RLIMIT_FSIZE): the write fails with EFBIG (Python ignores SIGXFSZ)."""
    limit = 4096

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "seq2bert.cli", "train", *COPY, "--out", str(run),
                           "--set", "model.hidden_size=64"], env=env, cwd=REPO, capture_output=True, text=True,
                          preexec_fn=limited, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("seq2bert: failed: File too large: ") and "Traceback" not in proc.stderr
    assert not leftovers(run) and not list(run.glob("checkpoint-*"))


def test_memory_that_cannot_be_allocated_is_one_line(tmp_path, capsys, monkeypatch):
    from seq2bert.training import run

    # a machine said to have memory enough: the run is not refused beforehand (tests/reliability/
    # test_run_refusals.py), and the allocation fails
    monkeypatch.setattr(run, "machine_memory", lambda: 2**80)
    assert main(["train", *COPY, "--out", str(tmp_path / "r"), "--set", "model.hidden_size=1000000000"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("seq2bert: failed: out of memory (") and "GiB asked" in err[-1]


FS_OPERATIONS = ("replace", "rename", "fsync", "rmtree")


@pytest.mark.slow
def test_a_kill_at_any_file_system_operation_of_checkpoint_writing_resumes_bitwise(uninterrupted, tmp_path,
                                                                                  monkeypatch):  # fmt: skip
    """The k-th os.replace / os.fsync / shutil.rmtree / renameat2 exchange of a run raises (the process
    "dies" there), for every k up to the run's count; each time --resume ends where the whole run ends."""
    import shutil

    counting = {"n": 0, "at": None}
    real = {"replace": os.replace, "fsync": os.fsync, "rmtree": shutil.rmtree, "exchange": io._exchange}

    def killer(name):
        def op(*a, **k):
            counting["n"] += 1
            if counting["n"] == counting["at"]:
                raise KeyboardInterrupt(f"killed at {name} #{counting['n']}")
            return real[name](*a, **k)

        return op

    for name, target in (("replace", os), ("fsync", os), ("rmtree", shutil)):
        monkeypatch.setattr(target, name, killer(name))
    monkeypatch.setattr(io, "_exchange", killer("exchange"))
    probe = tmp_path / "probe"
    assert main(["train", *COPY, "--out", str(probe)]) == 0
    total = counting["n"]
    assert total > 20
    for at in range(1, total, max(1, total // 25)):  # about 25 kill points spread over the run
        counting.update(n=0, at=at)
        run = tmp_path / f"k{at}"
        rc = main(["train", *COPY, "--out", str(run)])
        assert rc == 130, at  # the "kill" ends it as an interrupt
        counting.update(at=None)
        resumed = main(["train", "--out", str(run), "--resume"]) if list(run.glob("checkpoint-*")) else None
        if resumed is None:  # killed before its first checkpoint: a new run starts (its log is cut off)
            for p in list(run.iterdir()):
                real["rmtree"](p) if p.is_dir() else p.unlink()
            resumed = main(["train", *COPY, "--out", str(run)])
        assert resumed == 0, at
        assert weights(run) == weights(uninterrupted), at
        assert not leftovers(run), (at, leftovers(run))
