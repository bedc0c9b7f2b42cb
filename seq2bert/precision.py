"""Where bf16 pays: mixed precision is the main speed lever only on hardware that computes bf16 natively.

A CPU with AVX-512 BF16 or AMX runs bf16 matmuls about 4× faster than fp32; a CPU without them (AVX2, plain
AVX-512) emulates bf16 and runs it far *slower* than fp32 (≈ 1 against ≈ 140 GFLOP/s measured on an AVX2
EPYC), and torch's fused LSTM has no bf16 kernel there at all. ``train.bf16=auto`` asks this module.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import torch

log = logging.getLogger(__name__)

NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where that file does not exist."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


@functools.cache
def onednn_bf16() -> bool:
    """Whether oneDNN (torch's CPU kernels for RNNs, convolutions) has bf16 kernels on this CPU."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch without the probe: trust the flags
        return bool(NATIVE_BF16_CPU_FLAGS & cpu_flags())


def native_bf16(device: torch.device | str) -> bool:
    """Whether bf16 autocast speeds up ``device``: CUDA with bf16 support, or a CPU with AVX-512 BF16 / AMX."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        flags = cpu_flags()
        return bool(NATIVE_BF16_CPU_FLAGS & flags) if flags else onednn_bf16()
    return False


def use_bf16(setting: bool | str, device: torch.device | str) -> bool:
    """Resolve ``train.bf16`` (true / false / auto) for ``device``; warn when true is asked of slow hardware."""
    if setting == "auto":
        return native_bf16(device)
    if setting and not native_bf16(device):
        log.warning(
            "train.bf16=true on %s without native bf16 (no AVX-512 BF16 / AMX): autocast runs emulated and "
            "can be many times slower than fp32; train.bf16=auto uses bf16 only where it is native",
            torch.device(device),
        )
    return bool(setting)
