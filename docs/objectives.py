"""Pretraining objectives at equal compute: the table and the plot of docs/results.md ("Which pretraining
objective pays on a CPU"), read from the runs that runs/cmp/pt.sh and runs/cmp/ft.sh write (the commands
are in docs/results.md).

Each row is one objective pretrained for the same wall-clock budget on the same books with the same
vocabulary and encoder size, then fine-tuned the same way on SST-2, MRPC and CoNLL-2003 (dev). A fine-tuning
run named ``ft-<row>-<task>`` starts from the row's last checkpoint, ``ft-<row>@<step>-<task>`` from its
checkpoint at that step (the plot's earlier points).

    python docs/objectives.py                 # prints the markdown table, writes docs/img/objectives.png
    python docs/objectives.py --runs runs/cmp --plot docs/img/objectives.png
    python docs/objectives.py --positions runs/cmp/mlm-nsp/checkpoint-8500 runs/cmp/ltr/checkpoint-3000

``--positions`` prints, for each checkpoint, how alike neighbouring rows of its learned position table are
(the mean cosine of rows t and t+1 over positions 1–126): about 0 for a random table, near 1 for one
ordered by position.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

# (the row's label, its name in the plot, its pretraining run under --runs (None: random initialisation, the
# floor), the name of its fine-tuning runs, and the name of its quiet step rate in --rates)
ROWS = [
    ("random initialisation", "random init", None, "random", None),
    ("MLM + NSP (BERT)", "MLM + NSP", "mlm-nsp", "mlm-nsp", "mlm-nsp-ref"),
    ("MLM only, no NSP (BERT ablation / RoBERTa's DOC-SENTENCES)", "MLM only", "mlm-only", "mlm-only", "mlm-only-again"),
    ("MLM + SOP, shared layers, E = 128 (ALBERT)", "MLM + SOP (ALBERT)", "sop", "sop", "sop"),
    ("span masking + SBO (SpanBERT)", "span + SBO", "span", "span", "span"),
    ("knowledge masking: phrases and entities (ERNIE 1.0)", "knowledge (ERNIE)", "knowledge", "knowledge", "knowledge-again"),
    ("left to right, no NSP (BERT's LTR ablation)", "LTR", "ltr", "ltr", "ltr"),
    ("replaced-token detection (ELECTRA)", "ELECTRA", "electra", "electra", "electra-sampler2"),
]  # fmt: skip
# the task, its score in the fine-tuning run's results.json, and how the table shows it
TASKS = {
    "sst2": ("dev_accuracy", "SST-2 acc"),
    "mrpc": ("dev_f1", "MRPC F1 / acc"),
    "conll": ("dev_f1", "CoNLL-2003 F1"),
}


def read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def read_rates(path: Path) -> dict[str, float]:
    """{name: steps per second} of the lines "NAME RATE steps/s" that runs/cmp/rate.sh appends (the last of a
    name wins): each objective's step rate with the cores to itself, which sets its number of steps."""
    rates = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            name, rate, *_ = line.split()
            rates[name] = float(rate)
    return rates


def minutes_at(run: Path, step: int) -> float:
    """Training minutes of the pretraining run ``run`` when it reached ``step`` (its log's train records)."""
    seconds = 0.0
    for line in (run / "log.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("split") == "train" and record["step"] <= step:
            seconds = record["train_seconds"]
    return seconds / 60


def pretraining_summary(results: dict) -> str:
    """The objective's own held-out figures at the end of pretraining (ELECTRA's MLM: its generator's)."""
    keys = [("valid_mlm_accuracy", "MLM acc {:.1f} %"), ("valid_perplexity", "ppl {:.1f}"),
            ("valid_disc_accuracy", "RTD acc {:.1f} %"), ("valid_disc_replaced_accuracy", "replaced found {:.1f} %"),
            ("valid_nsp_accuracy", "NSP {:.1f} %"), ("valid_sop_accuracy", "SOP {:.1f} %")]  # fmt: skip
    return ", ".join(fmt.format(results[k]) for k, fmt in keys if k in results)


def points(
    runs: Path, name: str, pretrain: str | None, task: str, rate: float | None = None
) -> list[tuple[float, float]]:
    """(pretraining minutes, dev score) of every fine-tuning of the row on the task: minutes at the row's
    quiet ``rate`` (steps/s) when known, else as measured."""
    key = TASKS[task][0]
    out = []
    final = read(runs / f"ft-{name}-{task}" / "results.json")
    if final is not None:
        run = read(runs / pretrain / "results.json") if pretrain else None
        minutes = 0.0 if run is None else run["steps"] / rate / 60 if rate else run["train_seconds"] / 60
        out.append((minutes, final[key]))
    for path in runs.glob(f"ft-{name}@*-{task}/results.json"):
        step = int(re.search(r"@(\d+)-", path.parent.name).group(1))
        out.append((step / rate / 60 if rate else minutes_at(runs / pretrain, step), read(path)[key]))
    return sorted(out)


def neighbour_cosine(checkpoint: Path, first: int = 1, last: int = 126) -> float:
    """Mean cosine between rows t and t+1 of the checkpoint's learned position table, t in [first, last)."""
    import torch
    from safetensors.torch import load_file

    weights = load_file(checkpoint / "model.safetensors")
    (table,) = [v for k, v in weights.items() if k.endswith("position_embeddings.weight")]
    rows = torch.nn.functional.cosine_similarity(table[:-1], table[1:], dim=1)
    return float(rows[first:last].mean())


def budget(run: dict, rate: float | None) -> str:
    """The pretraining's minutes: its steps at its quiet rate (the equal budget), and the minutes measured when
    they differ by more than a minute (the run shared the cores for a while)."""
    measured = run["train_seconds"] / 60
    if rate is None:
        return f"{measured:.1f} min, {run['steps']:,} steps"
    quiet = run["steps"] / rate / 60
    shared = f" ({measured:.1f} measured, shared)" if abs(measured - quiet) > 1 else ""
    return f"{quiet:.1f} min{shared}: {run['steps']:,} steps at {rate:.2f}/s"


def table(runs: Path, rates: dict[str, float]) -> str:
    head = ["objective", "pretraining", *[label for _, label in TASKS.values()]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, _, pretrain, name, rate in ROWS:
        run = read(runs / pretrain / "results.json") if pretrain else None
        if pretrain and run is None:
            continue
        cells = [label]
        if run is None:
            cells.append("none")
        else:
            cells.append(f"{budget(run, rates.get(rate))}; {pretraining_summary(run)}")
        for task, (key, _) in TASKS.items():
            res = read(runs / f"ft-{name}-{task}" / "results.json")
            if res is None:
                cells.append("–")
            elif task == "mrpc":
                cells.append(f"{res['dev_f1']:.2f} / {res['dev_accuracy']:.2f}")
            else:
                cells.append(f"{res[key]:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(runs: Path, out: Path, rates: dict[str, float] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(TASKS), figsize=(5 * len(TASKS), 4.2))
    for ax, (task, (_, label)) in zip(axes, TASKS.items(), strict=True):
        for _, short, pretrain, name, rate in ROWS:
            pts = points(runs, name, pretrain, task, (rates or {}).get(rate))
            if not pts:
                continue
            if pretrain is None:  # the floor
                ax.axhline(pts[0][1], color="grey", linestyle="--", label=short)
                continue
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", label=short)
        ax.set_title(label.split(" /")[0] + " (dev)")
        ax.set_xlabel("pretraining minutes (2 cores to itself, bf16)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fine-tuned dev score")
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=Path, default=Path("runs/cmp"))
    p.add_argument("--plot", type=Path, default=Path("docs/img/objectives.png"))
    p.add_argument("--rates", type=Path, default=Path("runs/cmp/rates.txt"), help="quiet steps/s (rate.sh)")
    p.add_argument("--positions", type=Path, nargs="+", help="checkpoints: print their neighbour cosine")
    args = p.parse_args()
    if args.positions:
        for checkpoint in args.positions:
            print(f"{checkpoint}: neighbouring positions' cosine {neighbour_cosine(checkpoint):.3f}")
        return
    rates = read_rates(args.rates)
    print(table(args.runs, rates))
    plot(args.runs, args.plot, rates)
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
