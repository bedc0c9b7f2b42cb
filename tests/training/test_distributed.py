"""DDP with torchrun on 2 CPU processes (gloo): averaged gradients equal single-process gradients."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = r"""
import sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from seq2bert.models.seq2seq.config import Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq
from seq2bert.training import distributed
from seq2bert.training.distributed import cleanup, setup

info, device = setup("cpu")
assert info.world_size == 2 and dist.get_backend() == "gloo"
assert distributed._LEAVING is not None  # the group every rank leaves at, with its own long timeout
cfg = Seq2SeqConfig(src_vocab_size=17, tgt_vocab_size=19, embedding_dim=8, hidden_size=16, num_layers=2, dropout=0.0)
torch.manual_seed(0)
model = Seq2Seq(cfg)
g = torch.Generator().manual_seed(1)
# the combined batch: 8 rows of equal length, so the mean over the union is the mean of the two halves' means
src = torch.randint(7, 17, (8, 6), generator=g)
dec = torch.randint(7, 19, (8, 5), generator=g)
labels = torch.randint(7, 19, (8, 5), generator=g)
half = slice(4 * info.rank, 4 * info.rank + 4)
ddp = DDP(model)
ddp(src[half], None, dec[half], labels=labels[half]).loss.backward()
if info.rank == 0:
    torch.manual_seed(0)
    single = Seq2Seq(cfg)
    single(src, None, dec, labels=labels).loss.backward()
    worst = max((p.grad - q.grad).abs().max().item() for p, q in zip(model.parameters(), single.parameters()))
    print(f"max gradient difference {worst:.3g}")
    assert worst < 1e-6, worst
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in single.parameters() if p.dim() > 1)
    import time; time.sleep(2)  # rank 1 waits at cleanup's barrier meanwhile
cleanup()
assert not dist.is_initialized()
"""


def torchrun(*args: str, cwd: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_ddp_gradients_equal_single_process_on_combined_batch(tmp_path):
    script = tmp_path / "ddp_grads.py"
    script.write_text(SCRIPT)
    proc = torchrun(str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "max gradient difference" in proc.stdout


@pytest.mark.slow
def test_train_command_runs_under_torchrun(tmp_path):
    """The engine under DDP with gradient accumulation (no_sync) and a time limit decided by rank 0."""
    out = tmp_path / "run"
    sets = [
        "data.num_train=200",
        "data.num_valid=20",
        "data.num_test=20",
        "model.embedding_dim=8",
        "model.hidden_size=16",
        "model.num_layers=1",
        "train.max_steps=6",
        "train.eval_every=3",
        "train.accumulate=2",
        "train.max_minutes=10",
        "train.metric=exact_match",
    ]
    args = ["-m", "seq2bert.cli", "train", "--task", "copy", "--out", str(out)]
    for item in sets:
        args += ["--set", item]
    proc = torchrun(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "checkpoint-6" / "model.safetensors").is_file()
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 6 and "test_exact_match" in results
    state = torch.load(out / "checkpoint-6" / "trainer_state.pt", weights_only=True)
    assert len(state["rng"]) == 2  # each process's RNG state is kept for an exact resume
    assert not state["rng"][0]["torch"].equal(state["rng"][1]["torch"])  # one dropout stream per process
