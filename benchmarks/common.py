"""What the benchmark scripts share: timing, the machine's matmul peak, and FLOP counts.

The scripts run from this folder (``python benchmarks/….py``), so they import this module as ``common``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode


def seconds(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls after one warm-up call, and the last result."""
    out = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def matmul_peak(dtype: torch.dtype, n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of an n × n matmul on this machine (the best of ``repeats``)."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    best = min(seconds(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def counted_flops(fn: Callable[[], object]) -> int:
    """The FLOPs torch's counter sees in one call (matmuls, convolutions and attention, forward and
    backward): the work that bounds a step, the elementwise operations left out."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def profile(name: str, fn, rows: int = 15) -> None:
    """torch.profiler's operators of one call of ``fn`` (after a warm-up), by self time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiled

    fn()
    with profiled(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
        fn()
    print(f"\nprofile: {name}, operators by self CPU time (input shapes)")
    print(p.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=rows))
