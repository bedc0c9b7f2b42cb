"""Which int8 kernel pays on this CPU: the Linear layers of one GPT-2 small decoding step, streamed from memory.

A greedy step of GPT-2 small multiplies a few rows of activations (the batch) by every weight of the model
once: 12 layers of four Linear layers (768 → 2,304, 768 → 768, 768 → 3,072, 3,072 → 768) and the 50,257-row
output layer. The layers are run in that order, as a step runs them, so each weight comes from memory (the
model is far larger than the caches), and each way is timed over ``--repeats`` whole steps:

- fp32 and bf16 ``nn.Linear`` (oneDNN);
- int8 weights, float activations: ``Int8Linear(int8_activations=False)``, torch's ``_weight_int8pack_mm``;
- int8 weights and int8 activations: ``Int8Linear(int8_activations=True)``, each token quantised with its own
  scale, then ``torch._int_mm`` (int32 sums) — what ``--int8`` runs where the CPU has VNNI / AMX;
- int4 weights in groups of 32: ``Int4Linear``, torch's ``_weight_int4pack_mm_for_cpu``.

For each: milliseconds per step, the weight bytes it reads, and the GB/s that makes, beside a read-only
reduction over as many bytes (the bandwidth a kernel could reach) measured in the same run.

    python benchmarks/int8_kernels.py              # batch 8 (the gpt part of benchmarks/inference.py)
    python benchmarks/int8_kernels.py --rows 1 32
"""

from __future__ import annotations

import argparse
import platform
import time

import torch
from torch import nn

from seq2bert.nn.weight_only import Int4Linear, Int8Linear
from seq2bert.precision import cpu_kind

LAYER = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]  # (inputs, outputs) of one layer's Linears
OUTPUT = (768, 50257)


def per_step(layers: list[nn.Module], inputs: dict[int, torch.Tensor], repeats: int) -> float:
    """Seconds of one pass through ``layers`` (each fed the input of its width), the median of ``repeats``."""
    times = []
    with torch.no_grad():
        for _ in range(repeats + 1):
            start = time.perf_counter()
            for layer in layers:
                layer(inputs[layer.in_features])
            times.append(time.perf_counter() - start)
    return sorted(times[1:])[repeats // 2]


def weight_bytes(layer: nn.Module) -> int:
    return sum(b.numel() * b.element_size() for name, b in layer.named_buffers() if name != "codes") + sum(
        p.numel() * p.element_size() for p in layer.parameters()
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[8], help="activation rows (the batch)")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--layers", type=int, default=12, help="layers (GPT-2 small: 12)")
    args = p.parse_args()
    shapes = LAYER * args.layers + [OUTPUT]
    print(
        f"{platform.machine()} ({cpu_kind()}), {torch.get_num_threads()} threads, torch {torch.__version__}"
    )
    torch.manual_seed(0)
    linears = [nn.Linear(i, o).eval() for i, o in shapes]
    ways = {
        "bf16": lambda: [_bf16(m) for m in linears],  # first: the others are given as a ratio to it
        "fp32": lambda: linears,
        "int8 weights, bf16 activations": lambda: [
            Int8Linear.from_linear(m, torch.bfloat16, int8_activations=False) for m in linears
        ],
        "int8 weights and activations": lambda: [
            Int8Linear.from_linear(m, torch.bfloat16, int8_activations=True) for m in linears
        ],
        "int4 weights, bf16 activations": lambda: [
            Int4Linear.from_linear(m, torch.bfloat16) for m in linears
        ],
    }
    total = sum(o * i for i, o in shapes)
    read = torch.ones(total, dtype=torch.bfloat16)
    start = time.perf_counter()
    for _ in range(5):
        read.sum()
    gbps = 5 * read.numel() * 2 / (time.perf_counter() - start) / 1e9
    print(f"GPT-2 small's Linear layers ({args.layers} layers) and output layer, {total / 1e6:.0f} M weights; a read-only sum over "
          f"{read.numel() * 2 / 1e6:.0f} MB: {gbps:.1f} GB/s")  # fmt: skip
    for rows in args.rows:
        print(f"\n{rows} rows of activations")
        print("| way | ms per step | MB read | GB/s | × bf16 |\n|---|---|---|---|---|")
        found = {}
        for name, make in ways.items():
            layers = make()
            dtype = torch.float32 if name == "fp32" else torch.bfloat16
            inputs = {w: torch.randn(rows, w, dtype=dtype) for w in (768, 3072)}
            seconds = per_step(layers, inputs, args.repeats)
            size = sum(weight_bytes(m) for m in layers)
            found[name] = seconds
            print(f"| {name} | {seconds * 1e3:.1f} | {size / 1e6:.0f} | {size / seconds / 1e9:.1f} | "
                  f"{found['bf16'] / seconds:.2f}× |")  # fmt: skip
            del layers


def _bf16(m: nn.Linear) -> nn.Linear:
    twin = nn.Linear(m.in_features, m.out_features).to(torch.bfloat16).eval()
    twin.load_state_dict(m.state_dict())
    return twin


if __name__ == "__main__":
    main()
