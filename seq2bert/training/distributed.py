"""Multi-process data parallelism with torch.distributed (DDP): gloo on CPU, nccl on CUDA.

Launch any seq2bert training command under torchrun; the engine reads RANK / WORLD_SIZE / LOCAL_RANK
from the environment that torchrun sets::

    torchrun --nproc_per_node 2 -m seq2bert.cli train ...                       # one machine
    torchrun --nnodes 2 --node_rank 0 --master_addr HOST --master_port 29500 \\
             --nproc_per_node 2 -m seq2bert.cli train ...                       # two machines (node_rank 1 on the other)

Each process takes every world_size-th batch of the same deterministic epoch order; DDP averages the
gradients, so one step sees the union of the processes' batches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def resolve_device(preference: str = "auto", local_rank: int = 0) -> torch.device:
    if preference == "auto":
        preference = "cuda" if torch.cuda.is_available() else "cpu"
    if preference.startswith("cuda") and not torch.cuda.is_available():
        from seq2bert.errors import ConfigError

        raise ConfigError(
            f"train.device: {preference} asked for, but CUDA is not available here (use auto or cpu)"
        )
    if preference == "cuda":
        return torch.device("cuda", local_rank)  # one GPU per process under torchrun
    return torch.device(preference)


def setup(preference: str = "auto") -> tuple[DistInfo, torch.device]:
    """Join the process group if launched by torchrun (WORLD_SIZE > 1); return who we are and our device."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(preference, local_rank)
    if world_size > 1 and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        global _LEAVING
        _LEAVING = dist.new_group(backend="gloo", timeout=LEAVING_TIMEOUT)
    return DistInfo(rank, world_size, local_rank), device


# the barrier every rank leaves at (cleanup): a gloo group of its own, whose timeout outlasts rank 0's scoring of
# the best checkpoint after training (a test set's beam search, MNLI's two dev sets), which the default group's
# might not (gloo 30 minutes, NCCL 10)
LEAVING_TIMEOUT = timedelta(hours=12)
_LEAVING = None


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def broadcast_object(obj, info: DistInfo):
    """Send a picklable object from rank 0 to every rank (e.g. evaluation results, a stop decision)."""
    if not info.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather_objects(obj, info: DistInfo) -> list:
    """Every rank's ``obj``, in rank order, on every rank (e.g. RNG states for a checkpoint)."""
    if not info.enabled:
        return [obj]
    out = [None] * info.world_size
    dist.all_gather_object(out, obj)
    return out


def cleanup() -> None:
    """Leave the process group together: every rank waits at a barrier (the others idle while rank 0 scores
    and writes the results, for up to ``LEAVING_TIMEOUT``), then tears it down. A rank that destroyed its
    group and exited while rank 0 still held connections to it could abort at exit (gloo: "terminate called
    without an active exception")."""
    if dist.is_initialized():
        dist.barrier(group=_LEAVING)
        dist.destroy_process_group()
