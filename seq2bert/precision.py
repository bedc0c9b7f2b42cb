"""Where bf16 pays: mixed precision is the main speed lever only on hardware that computes bf16 natively.

A CPU with AVX-512 BF16 or AMX runs bf16 matmuls about 4× faster than fp32; a CPU without them (AVX2, plain
AVX-512) emulates bf16 and runs it far *slower* than fp32 (≈ 1 against ≈ 140 GFLOP/s measured on an AVX2
EPYC), and torch's fused LSTM has no bf16 kernel there at all. ``train.bf16=auto`` asks this module.

Under autocast, what accumulates stays in fp32 (:func:`widen`, :func:`full_precision`): recurrent states,
which are carried through every time step, and attention scores, whose small differences the softmax turns
into large ones. Matmuls of weights and activations run in bf16; the loss is fp32.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import torch

log = logging.getLogger(__name__)

NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
NATIVE_INT8_CPU_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})  # int8 dot products in hardware


def widen(x: torch.Tensor) -> torch.Tensor:
    """x in at least fp32: half-precision results of autocast matmuls are widened; fp32 / fp64 are kept."""
    return x.float() if x.dtype in (torch.bfloat16, torch.float16) else x


def full_precision(x: torch.Tensor):
    """A region that computes in fp32 even under autocast (autocast off on x's device); widen its inputs.

    ``with full_precision(h): scores = keys @ widen(h)`` — used for attention scores and recurrent states."""
    return torch.autocast(x.device.type, enabled=False)


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
def cpu_name() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), or the platform's processor string."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_kind(flags: frozenset[str] | None = None) -> str:
    """The instruction set that decides bf16 speed: AMX, AVX-512 BF16, AVX-512, AVX2 or neither."""
    flags = cpu_flags() if flags is None else flags
    for flag, name in (
        ("amx_bf16", "AMX"),
        ("avx512_bf16", "AVX-512 BF16"),
        ("avx512f", "AVX-512 (no BF16)"),
        ("avx2", "AVX2"),
    ):
        if flag in flags:
            return name
    return "no AVX2"


def describe_device(device: torch.device | str) -> str:
    """The device and what decides its bf16 speed, e.g. ``the CPU (AMX: bf16 native)``."""
    device = torch.device(device)
    native = "bf16 native" if native_bf16(device) else "bf16 not native"
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} ({native})"
    return f"the CPU ({cpu_kind()}: {native})"


def describe_machine(device: torch.device | str, bf16: bool) -> str:
    """One line for a results table: the processor, its cores, the precision a run used and torch's version,
    e.g. ``AMD EPYC (AVX-512 BF16), 2 cores · bf16 autocast · torch 2.13.0+cpu``."""
    device = torch.device(device)
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
    else:
        where = f"{cpu_name()} ({cpu_kind()}), {os.cpu_count()} cores"
    precision = "bf16 autocast" if bf16 else "fp32"
    return f"{where} · {precision} · torch {torch.__version__}"


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


def native_int8(device: torch.device | str) -> bool:
    """Whether int8 × int8 matmuls beat the float ones on ``device``: a CPU with VNNI or AMX-INT8."""
    device = torch.device(device)
    return device.type == "cpu" and bool(NATIVE_INT8_CPU_FLAGS & cpu_flags())


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
