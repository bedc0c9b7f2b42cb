"""Pruning all-MiniLM-L6-v2 fine-tuned on SST-2 and CoNLL-2003: the runs, the record, the table and the plot of
docs/results.md ("Pruning: heads by importance, weights by magnitude").

The teachers are docs/students.py's (all-MiniLM-L6-v2 fine-tuned on the task; fine-tuned here if absent).
From each, `seq2bert prune`:

- heads: 10 %, 20 %, … 90 % of its 72 heads removed, Michel et al.'s way — each point removes the next 10 %
  (of the 72) from the previous point's model, least important first, the importances measured on 2,000
  training examples of the task (a layer keeps one head: past 66 heads removed nothing more goes);
- weights: 10 %, … 90 % of the encoder layers' Linear weights zeroed by magnitude (global), each from the
  teacher.

Every point is scored on the task's dev set (`seq2bert evaluate`). ``speed`` times the head-pruned models'
dev predictions against the teacher's, in one run on a quiet machine (fp32; rounds in turn, the median).

    python docs/pruning.py run sst2           # the teacher if absent, then every point (skips those done)
    python docs/pruning.py speed sst2         # dev sentences/s of the teacher and the head-pruned points
    python docs/pruning.py                    # the table and docs/img/pruning.png, from docs/pruning.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
RECORD = HERE / "pruning.json"
FRACTIONS = [round(0.1 * k, 1) for k in range(1, 10)]
TASKS = {"sst2": ("sst2", "accuracy"), "conll": ("conll2003", "f1")}
EXAMPLES = 2000


def students():
    spec = importlib.util.spec_from_file_location("students", HERE / "students.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seq2bert(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("seq2bert")), *args]


def call(cmd: list[str]) -> None:
    print("$", shlex.join(cmd), flush=True)
    if subprocess.run(cmd).returncode:
        raise SystemExit(f"pruning.py: `{shlex.join(cmd[1:3])} …` failed (above)")


def heads_of(directory: Path) -> int:
    config = json.loads((directory / "config.json").read_text())
    pruned = sum(len(v) for v in config.get("pruned_heads", {}).values())
    return config["num_hidden_layers"] * config["num_attention_heads"] - pruned


def run(task: str, runs: Path, pruned: Path) -> None:
    teacher = runs / f"teacher-{task}"
    if not (teacher / "results.json").is_file():
        cmd = students().commands(task, runs)[0]  # the teacher's fine-tuning, as docs/students.py runs it
        call(cmd + (["--resume"] if teacher.is_dir() else []))
    total, previous = heads_of(teacher / "best"), teacher / "best"
    for fraction in FRACTIONS:
        out = pruned / f"{task}-heads{int(fraction * 100)}"
        if not (out / "prune.json").is_file():
            left = heads_of(previous)
            remove = round(fraction * total) - (total - left)
            call(seq2bert("prune", str(previous), "--heads", f"{remove / left:.6f}", "--step", "1",
                          "--examples", str(EXAMPLES), "--out", str(out)))  # fmt: skip
        previous = out
    for fraction in FRACTIONS:
        out = pruned / f"{task}-sparsity{int(fraction * 100)}"
        if not (out / "prune.json").is_file():
            call(seq2bert("prune", str(teacher / "best"), "--sparsity", str(fraction), "--out", str(out)))
    score(task, runs, pruned)


def score(task: str, runs: Path, pruned: Path) -> None:
    """Each point's dev figure into the record (scored once: kept in its scores.json)."""
    from seq2bert.io import write_json
    from seq2bert.recipes.scoring import evaluate_checkpoint

    metric = TASKS[task][1]
    record = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    row = record.setdefault(task, {"heads": {}, "sparsity": {}})
    teacher = runs / f"teacher-{task}" / "best"
    points = [("heads", 0.0, teacher)] + [
        (kind, f, pruned / f"{task}-{kind}{int(f * 100)}")
        for kind in ("heads", "sparsity")
        for f in FRACTIONS
    ]
    for kind, fraction, directory in points:
        if not (directory / "config.json").is_file():
            continue
        scores = directory / "scores.json"
        if not scores.is_file():
            write_json(scores, evaluate_checkpoint(directory))
        figures = json.loads(scores.read_text())
        row[kind][str(fraction)] = {"dev": figures[f"dev_{metric}"], "heads": heads_of(directory)}
    row["sparsity"]["0.0"] = row["heads"].get("0.0", {})
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def speed(task: str, runs: Path, pruned: Path, repeats: int) -> None:
    """Dev predictions per second of the teacher and every head-pruned point, in turn for ``repeats`` rounds."""
    import torch

    from seq2bert.models import registry
    from seq2bert.recipes.scoring import checkpoint_task, encode, predict
    from seq2bert.recipes.scratch import reads_words
    from seq2bert.tasks.data import labelled_dev

    directories = {"0.0": runs / f"teacher-{task}" / "best"}
    directories |= {str(f): pruned / f"{task}-heads{int(f * 100)}" for f in FRACTIONS}
    directories = {k: d for k, d in directories.items() if (d / "config.json").is_file()}
    _, data = checkpoint_task(directories["0.0"])
    models = {k: registry.load(d) for k, d in directories.items()}
    model, tok = models["0.0"]
    examples = labelled_dev(data)
    features = encode(data, examples, tok, model.config.id2label, words=reads_words(model))
    times: dict[str, list[float]] = {k: [] for k in models}
    with torch.inference_mode():
        for _ in range(repeats):
            for k, (m, t) in models.items():
                start = time.perf_counter()
                predict(
                    m,
                    features,
                    t.pad_token_id or 0,
                    data.batch_size,
                    torch.device("cpu"),
                    None,
                    data.spec.collate,
                )
                times[k].append(time.perf_counter() - start)
    record = json.loads(RECORD.read_text())
    base = statistics.median(times["0.0"])
    for k, ts in times.items():
        rate = len(examples) / statistics.median(ts)
        point = record[task]["heads"].setdefault(k, {})
        point.update(per_s=round(rate, 1), speedup=round(base / statistics.median(ts), 3))
        print(
            f"{task} heads removed {float(k):.0%}: {rate:.1f} dev examples/s, {base / statistics.median(ts):.2f}x the teacher"
        )
    record[task]["speed_machine"] = (
        f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, fp32"
    )
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def table(record: dict) -> str:
    lines = ["| task | removed | heads left | dev (heads removed) | speed vs. the teacher | dev (weights zeroed) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for task, row in record.items():
        metric = TASKS[task][1]
        for fraction in ["0.0", *map(str, FRACTIONS)]:
            h, s = row["heads"].get(fraction, {}), row["sparsity"].get(fraction, {})
            speedup = f"{h['speedup']:.2f}×" if "speedup" in h else "—"
            dev_h = f"{metric} {h['dev']:.2f}" if "dev" in h else "—"
            dev_s = f"{metric} {s['dev']:.2f}" if "dev" in s else "—"
            lines.append(
                f"| {task} | {float(fraction):.0%} | {h.get('heads', '—')} | {dev_h} | {speedup} | {dev_s} |"
            )
    return "\n".join(lines)


def plot(record: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(record), figsize=(5.5 * len(record), 4), squeeze=False)
    for ax, (task, row) in zip(axes[0], record.items(), strict=True):
        for kind, label in (("heads", "attention heads removed"), ("sparsity", "Linear weights zeroed")):
            points = sorted((float(f), p["dev"]) for f, p in row[kind].items() if "dev" in p)
            ax.plot([100 * f for f, _ in points], [d for _, d in points], marker="o", label=label)
        ax.set(
            xlabel="% pruned", ylabel=f"dev {TASKS[task][1]}", title=f"all-MiniLM-L6-v2 on {TASKS[task][0]}"
        )
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=["run", "speed"])
    parser.add_argument("task", nargs="?", choices=list(TASKS))
    parser.add_argument("--runs", type=Path, default=Path("runs/students"), help="docs/students.py's runs")
    parser.add_argument("--pruned", type=Path, default=Path("runs/pruning"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.action and not args.task:
        parser.error(f"{args.action}: name the task ({', '.join(TASKS)})")
    if args.action == "run":
        run(args.task, args.runs, args.pruned)
    elif args.action == "speed":
        speed(args.task, args.runs, args.pruned, args.repeats)
    record = json.loads(RECORD.read_text())
    print(table(record))
    plot(record, HERE / "img" / "pruning.png")


if __name__ == "__main__":
    main()
