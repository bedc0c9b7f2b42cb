"""Pretraining objectives at equal compute: the runs, the table and the plot of docs/results.md ("Which
pretraining objective pays on a CPU").

Each row is one objective pretrained for the same wall-clock budget (45 minutes on 2 cores to itself, bf16)
on the same books with the same 16k cased WordPiece vocabulary and BERT-mini's size, then fine-tuned the same
way on SST-2, MRPC and CoNLL-2003 (dev). A row's steps are its 45 minutes at its own quiet step rate.

    python docs/objectives.py run span            # pretrains the row (resuming), then its three fine-tunes
    python docs/objectives.py run mlm-only --at 3000   # fine-tunes from the row's checkpoint at step 3000
    python docs/objectives.py run span --dry      # prints the commands
    python docs/objectives.py collect             # runs/cmp → docs/objectives.json (the measured record)
    python docs/objectives.py                     # the markdown table and docs/img/objectives.png, from the record
    python docs/objectives.py --positions runs/cmp/mlm-only/checkpoint-10000 …

The record, docs/objectives.json, keeps every row's measured figures in the repository: ``collect`` rewrites
the rows whose runs it finds under --runs and keeps the others as they were measured. A fine-tuning run named
``ft-<row>-<task>`` starts from the row's last checkpoint, ``ft-<row>@<step>-<task>`` from its checkpoint at
that step (the plot's earlier points).

``--positions`` prints, for each checkpoint, how alike neighbouring rows of its learned position table are
(the mean cosine of rows t and t+1 over positions 1–126, or 1–``--last``): about 0 for a random table, near 1
for one ordered by position.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DATA = Path("../shared/data")
RECORD = Path(__file__).with_name("objectives.json")


@dataclass(frozen=True)
class Row:
    """One objective: its label in the table, its name in the plot, its run's name (also of its fine-tuning
    runs), its pretraining steps (0: random initialisation, the floor), its settings over BASE, and its quiet
    step rate: steps/s of a short run of it with the cores to itself, which set its steps (45 minutes' worth).
    A floor's architecture and vocabulary are those of ``random_from``'s last checkpoint. A row with
    ``pretrained_from`` pretrains nothing itself: it fine-tunes that row's last checkpoint with its ``tuned``
    settings added to the task's (BERT's Table 5 "+ BiLSTM" on the LTR model)."""

    label: str
    short: str
    name: str
    steps: int
    sets: tuple[str, ...] = ()
    rate: float | None = None
    random_from: str = "mlm-only-seq64"
    pretrained_from: str = ""
    tuned: tuple[str, ...] = ()

    @property
    def pretraining(self) -> str:
        """The row whose pretraining run this row's fine-tunings start from ("" for a floor)."""
        return self.pretrained_from or (self.name if self.steps else "")


ROWS = [
    Row("random initialisation, the first vocabulary (that of MLM + NSP, MLM only, SOP, LTR, ELECTRA)",
        "random init (first vocabulary)", "random-first", 0),
    Row("random initialisation, the vocabulary trained again (that of the other rows)", "random init", "random", 0),
    Row("MLM + NSP (BERT)", "MLM + NSP", "mlm-nsp", 8500, rate=3.38),
    Row("MLM only, no NSP (BERT ablation / RoBERTa's DOC-SENTENCES)", "MLM only", "mlm-only", 10000,
        ("data.sentence_task=none",), rate=3.72),
    Row("MLM only, sequences of 64 (tuned)", "MLM only, seq 64", "mlm-only-seq64", 11800,
        ("data.sentence_task=none", "data.max_seq_length=64"), rate=4.40),
    Row("MLM + SOP, shared layers, E = 128 (ALBERT)", "MLM + SOP (ALBERT)", "sop", 9000,
        ("model.model_type=albert",), rate=3.35),
    Row("span masking + SBO (SpanBERT)", "span + SBO", "span", 4450, ("model.model_type=spanbert",)),
    Row("knowledge masking: phrases and entities (ERNIE 1.0)", "knowledge (ERNIE)", "knowledge", 9400,
        ("data.masking_strategy=knowledge", "data.phrase_ngrams=20000", "data.entities={runs}/conll-entities.txt",
         "data.knowledge_schedule=[word,phrase,entity]", "data.masking=dynamic", "data.sentence_task=none"),
        3.02),  # its stages measured on a slower machine, where MLM only ran 2.33/s (3.72 on the rows'): words
    # 2.18/s (1,490 steps), phrases 1.97/s (1,080), entities 1.83/s (6,830): 82.9 min there, 51.9 at the rows' speed
    Row("left to right, no NSP (BERT's LTR ablation)", "LTR", "ltr", 3000, ("model.is_decoder=true",), 1.08),
    Row("replaced-token detection (ELECTRA)", "ELECTRA", "electra", 7000,
        ("model.model_type=electra", "train.lr=2e-4", "train.warmup_steps=1000"), 2.626),
    # two-stage ELECTRA (Sect. 3.2): 4,500 steps of a generator as wide as the discriminator alone (a masked LM:
    # MLM only leaves the plateau by step 3,500), then the discriminator from its weights for 4,000 steps, the
    # generator frozen; the rows' peak rate and warm-up. Measured on the AMX Xeon, where the joint ELECTRA row ran
    # 1.75 steps/s against 2.626 on the rows' machine: 8,500 steps in 82.2 min there (2.17/s, then 1.40/s), so
    # 8,500 / (4,930 s / 1.5) = 2.59/s at the rows' speed (55 minutes: the discriminator's stage is slower than
    # estimated)
    Row("replaced-token detection, two-stage: the discriminator from a generator of its width (ELECTRA, Sect. 3.2)",
        "ELECTRA two-stage", "electra-2stage", 8500,
        ("model.model_type=electra", "electra.generator_size=1.0", "electra.two_stage_steps=4500"), 2.59),
    # the same with L_Disc weighing the replaced and the original tokens alike (electra.balanced) — its first
    # 4,500 steps are the two-stage row's, which the discriminator's loss does not touch (checkpoint-4500 copied)
    Row("replaced-token detection, two-stage, both classes of L_Disc weighed alike", "ELECTRA two-stage, balanced",
        "electra-2stage-bal", 8500,
        ("model.model_type=electra", "electra.generator_size=1.0", "electra.two_stage_steps=4500",
         "electra.balanced=true")),
    # XLNet as itself: its own cased SentencePiece vocabulary of 16,000 trained on the books, permutation LM with
    # K = 6 (about 21 of 128 tokens predicted, as MLM's 15 %). Rate measured on an AVX2 machine without bf16
    # (AMD EPYC, 2 cores): 2.76 s/step there against MLM only's 1.35, so 0.49 × 3.72 = 1.82/s at the rows' speed
    Row("permutation LM, two-stream attention, its own vocabulary (XLNet)", "XLNet", "xlnet", 4900,
        ("model.model_type=xlnet", "data.tokenizer=", "data.vocab_size=16000"), 1.82),
    # RoBERTa as itself (Liu et al. 2019): its own byte-level BPE of 16,000 trained on the books, FULL-SENTENCES
    # packing across documents, dynamic masking, no NSP, and a large batch — 256 sequences, 8 accumulated
    # batches of 32 — at a larger peak rate (Sect. 5: 1e-3 with large batches) and 5 % warm-up. Rate measured
    # on an AVX2 machine without bf16 (AMD EPYC, 2 cores): 8.87 s per step there against MLM only's 1.13, so
    # 0.128 × 3.72 = 0.475/s at the rows' speed: 1,280 steps (327,680 sequences; MLM only saw 320,000)
    Row("MLM, full sentences, dynamic masking, batch 256, its own byte-level BPE (RoBERTa)", "RoBERTa", "roberta",
        1280, ("model.model_type=roberta", "data.tokenizer=", "data.vocab_size=16000", "train.accumulate=8",
               "train.lr=1e-3", "train.warmup_steps=64"), 0.475),
    Row("random initialisation, RoBERTa with its own vocabulary (the floor of the RoBERTa row)", "random init (RoBERTa)",
        "random-roberta", 0, random_from="roberta"),
    Row("random initialisation, XLNet with its own vocabulary (the floor of the XLNet row)", "random init (XLNet)",
        "random-xlnet", 0, random_from="xlnet"),
    # BERT's Table 5: "we added a randomly initialized BiLSTM on top" of the LTR model for fine-tuning. Departure:
    # as the LTR row itself, the model is fine-tuned without its left-only mask (models/pretrained.py), so the
    # BiLSTM adds capacity here, not the right context the paper's LTR model lacked at fine-tuning
    Row("left to right + a BiLSTM on top for fine-tuning (BERT's Table 5)", "LTR + BiLSTM", "ltr-bilstm", 0,
        pretrained_from="ltr", tuned=("bilstm_top.enabled=true",)),
]  # fmt: skip
BY_NAME = {row.name: row for row in ROWS}
# rows kept in the record only: their runs' vocabulary was lost with the machine that made it
RECORD_ONLY = {"random-first"}
# every row's pretraining: the books, a document per book (10 % held out), the shared vocabulary, batch 32,
# peak lr 5e-4 after 300 warm-up steps then linear decay to the row's last step, bf16 where native
BASE = ("data.documents=file", "data.tokenizer={runs}/wp16k-cased/tokenizer.json", "data.valid_fraction=0.1",
        "train.lr=5e-4", "train.warmup_steps=300", "train.eval_every=500", "train.keep_last=40",
        "train.bf16=auto")  # fmt: skip
# the task (its short name in run names): its name for `seq2bert finetune --task` and its data folder, its
# fine-tuning settings, its score in results.json and how the table shows it
TASKS = {
    "sst2": ("sst2", ("train.lr=1e-4", "train.max_epochs=2", "train.eval_every=700"), "dev_accuracy", "SST-2 acc"),
    "mrpc": ("mrpc", ("train.lr=1e-4", "train.max_epochs=5"), "dev_f1", "MRPC F1 / acc"),
    "conll": ("conll2003", ("train.lr=1e-4", "train.max_epochs=4"), "dev_f1", "CoNLL-2003 F1"),
}  # fmt: skip
KEPT = ("dev_accuracy", "dev_f1")  # the fine-tuning figures the record keeps


# --- the runs ---------------------------------------------------------------------------------------------
def seq2bert(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("seq2bert")), *args]


def sets(*settings: str, runs: Path) -> list[str]:
    return [a for s in settings for a in ("--set", s.format(runs=runs))]


def shared_files(runs: Path) -> None:
    """The vocabulary every row shares (a cased WordPiece of 16,000 trained on the books, as ``seq2bert
    pretrain`` trains one) and the knowledge row's entity dictionary (the entity names of CoNLL-2003's train
    set)."""
    from seqeval.metrics.sequence_labeling import get_entities

    from seq2bert.data.conll import read_conll
    from seq2bert.data.pretraining import text_files
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.io import atomic_write_text

    if not (runs / "wp16k-cased" / "tokenizer.json").is_file():
        files = text_files([str(DATA / "corpus")], "corpus")
        Tokenizer.train(files, kind="wordpiece", vocab_size=16000, lowercase=False).save(runs / "wp16k-cased")
    if not (runs / "conll-entities.txt").is_file():
        names = {}
        for sentence in read_conll(DATA / "conll2003" / "train.txt"):
            for _, start, end in get_entities(sentence.tags):
                names[" ".join(sentence.words[start : end + 1])] = None
        atomic_write_text(runs / "conll-entities.txt", "\n".join(names) + "\n")


def last_checkpoint(run: Path) -> Path:
    found = sorted(run.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    if not found:
        raise SystemExit(f"{run}: no checkpoint-* (pretrain the row first)")
    return found[-1]


def commands(row: Row, runs: Path, at: int | None = None) -> list[list[str]]:
    """The row's pretraining (none for the floor) and its three fine-tunings, as argument lists."""
    out = []
    pretrain = runs / row.name
    if row.steps:
        out.append(seq2bert("pretrain", str(DATA / "corpus"), "--out", str(pretrain),
                            *sets(*BASE, f"train.max_steps={row.steps}", *row.sets, runs=runs)))  # fmt: skip
    suffix = f"@{at}" if at else ""
    for task, (folder, settings, _, _) in TASKS.items():
        if row.pretraining:
            init = runs / row.pretraining / f"checkpoint-{at}" if at else "LAST"
            extra = []
        else:  # the floor: a row's architecture and vocabulary (BERT-mini's by default), fresh weights
            source = BY_NAME[row.random_from]
            init, extra = runs / source.name / f"checkpoint-{source.steps}", ["--random-init"]
        out.append(seq2bert("finetune", "--task", folder, "--init", str(init), *extra, "--data", str(DATA / folder),
                            "--out", str(runs / f"ft-{row.name}{suffix}-{task}"),
                            *sets(*settings, *row.tuned, runs=runs)))  # fmt: skip
    return out


def run(row: Row, runs: Path, at: int | None, dry: bool) -> None:
    if not dry:
        shared_files(runs)
    for cmd in commands(row, runs, at):
        if "LAST" in cmd:
            pretrained = any((runs / row.pretraining).glob("checkpoint-*"))
            cmd[cmd.index("LAST")] = (
                str(last_checkpoint(runs / row.pretraining)) if pretrained or not dry else "LAST"
            )
        print("$", shlex.join(cmd), flush=True)
        if dry:
            continue
        if cmd[1] == "pretrain" and (runs / row.name / "results.json").is_file():
            continue  # pretrained
        if cmd[1] == "pretrain" and (runs / row.name).is_dir():
            cmd.append("--resume")
        if cmd[1] == "finetune" and (Path(cmd[cmd.index("--out") + 1]) / "results.json").is_file():
            continue  # fine-tuned
        if subprocess.run(cmd).returncode:
            raise SystemExit(
                f"objectives.py run {row.name}: stopped, `{shlex.join(cmd[1:3])} …` failed (above)"
            )


# --- the record -------------------------------------------------------------------------------------------
def read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def minutes_at(run: Path, step: int) -> float:
    """Training minutes of the pretraining run ``run`` when it reached ``step`` (its log's train records)."""
    seconds = 0.0
    for line in (run / "log.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("split") == "train" and record["step"] <= step:
            seconds = record["train_seconds"]
    return seconds / 60


def measured(runs: Path, row: Row) -> dict | None:
    """The row's figures as its runs under ``runs`` hold them: its pretraining's results.json (steps, seconds,
    held-out figures), each task's final dev scores, and (pretraining minutes, dev score) points of every
    fine-tuning, the earlier checkpoints' included (minutes at the row's quiet rate, else as its log has them);
    None when nothing of the row is there."""
    run = read(runs / row.pretraining / "results.json") if row.pretraining else None
    finals = {task: read(runs / f"ft-{row.name}-{task}" / "results.json") for task in TASKS}
    if (row.pretraining and run is None) or not any(finals.values()):
        return None
    rate = pretraining_rate(row)
    keys = ("steps", "train_seconds", "valid_mlm_accuracy", "valid_perplexity", "valid_disc_accuracy",
            "valid_disc_replaced_accuracy", "valid_disc_original_accuracy", "valid_disc_auc", "valid_nsp_accuracy",
            "valid_sop_accuracy")  # fmt: skip
    out = {
        "pretraining": {k: run[k] for k in keys if k in run} if run else None,
        "finetune": {},
        "points": {},
    }

    def minutes(step: int) -> float:  # of pretraining at that step: at the quiet rate when known
        return step / rate / 60 if rate else minutes_at(runs / row.pretraining, step)

    for task, final in finals.items():
        if final is None:
            continue
        key = TASKS[task][2]
        out["finetune"][task] = {k: final[k] for k in KEPT if k in final}
        end = 0.0 if run is None else run["steps"] / rate / 60 if rate else run["train_seconds"] / 60
        pts = [(end, final[key])]
        for path in runs.glob(f"ft-{row.name}@*-{task}/results.json"):
            step = int(re.search(r"@(\d+)-", path.parent.name).group(1))
            pts.append((minutes(step), read(path)[key]))
        out["points"][task] = [[round(m, 2), s] for m, s in sorted(pts)]
    return out


def pretraining_rate(row: Row) -> float | None:
    """The quiet step rate of the pretraining the row's fine-tunings start from."""
    return BY_NAME[row.pretrained_from].rate if row.pretrained_from else row.rate


def collect(runs: Path, record: Path) -> dict:
    """The record with every row found under ``runs`` measured anew; rows not found keep their figures."""
    from seq2bert.io import write_json

    rows = read(record) or {}
    for row in ROWS:
        found = measured(runs, row)
        if found is not None:
            rows[row.name] = found
    write_json(record, rows)
    return rows


# --- the table and the plot -------------------------------------------------------------------------------
def pretraining_summary(run: dict, rate: float | None = None) -> str:
    """The objective's steps, minutes and own held-out figures at the end of pretraining (ELECTRA's MLM: its
    generator's). With its quiet ``rate`` the minutes are its steps at that rate (its budget), and those
    measured are said beside when they differ by more than a minute (the run shared the cores a while)."""
    keys = [("valid_mlm_accuracy", "MLM acc {:.1f} %"), ("valid_perplexity", "ppl {:.1f}"),
            ("valid_disc_accuracy", "RTD acc {:.1f} %"), ("valid_disc_replaced_accuracy", "replaced found {:.1f} %"),
            ("valid_disc_original_accuracy", "originals kept {:.1f} %"), ("valid_disc_auc", "ROC AUC {:.1f} %"),
            ("valid_nsp_accuracy", "NSP {:.1f} %"), ("valid_sop_accuracy", "SOP {:.1f} %")]  # fmt: skip
    minutes = run["train_seconds"] / 60
    head = f"{run['steps']:,} steps, {minutes:.1f} min ({run['steps'] / run['train_seconds']:.2f}/s)"
    if rate is not None:
        quiet = run["steps"] / rate / 60
        shared = f", {minutes:.1f} measured" if abs(quiet - minutes) > 1 else ""
        head = f"{run['steps']:,} steps, {quiet:.1f} min ({rate:.2f}/s{shared})"
    return "; ".join([head, ", ".join(fmt.format(run[k]) for k, fmt in keys if k in run)])


def table(rows: dict) -> str:
    head = ["objective", "pretraining", *[t[3] for t in TASKS.values()]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in ROWS:
        if row.name not in rows:
            continue
        figures = rows[row.name]
        run = figures["pretraining"]
        rate = pretraining_rate(row)
        cells = [row.label, "none" if run is None else pretraining_summary(run, rate)]
        for task in TASKS:
            res = figures["finetune"].get(task)
            if res is None:
                cells.append("–")
            elif task == "mrpc":
                cells.append(f"{res['dev_f1']:.2f} / {res['dev_accuracy']:.2f}")
            else:
                cells.append(f"{res[TASKS[task][2]]:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(TASKS), figsize=(5 * len(TASKS), 4.2))
    for ax, (task, (*_, label)) in zip(axes, TASKS.items(), strict=True):
        for row in ROWS:
            pts = rows.get(row.name, {}).get("points", {}).get(task)
            if not pts:
                continue
            if not row.pretraining:  # a floor
                style = ":" if row.name in RECORD_ONLY else "--"
                ax.axhline(pts[0][1], color="grey", linestyle=style, label=row.short)
                continue
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", label=row.short)
        ax.set_title(label.split(" /")[0] + " (dev)")
        ax.set_xlabel("pretraining minutes (2 cores to itself, bf16)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fine-tuned dev score")
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")


def neighbour_cosine(checkpoint: Path, first: int = 1, last: int = 126) -> float:
    """Mean cosine between rows t and t+1 of the checkpoint's learned position table, t in [first, last)."""
    import torch
    from safetensors.torch import load_file

    weights = load_file(checkpoint / "model.safetensors")
    (table,) = [v for k, v in weights.items() if k.endswith("position_embeddings.weight")]
    rows = torch.nn.functional.cosine_similarity(table[:-1], table[1:], dim=1)
    return float(rows[first:last].mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", nargs="?", choices=("table", "run", "collect"), default="table")
    p.add_argument(
        "row", nargs="?", choices=[n for n in BY_NAME if n not in RECORD_ONLY], help="run: the row"
    )
    p.add_argument("--at", type=int, help="run: fine-tune from the row's checkpoint at this step")
    p.add_argument("--dry", action="store_true", help="run: print the commands only")
    p.add_argument("--runs", type=Path, default=Path("runs/cmp"))
    p.add_argument("--record", type=Path, default=RECORD)
    p.add_argument("--plot", type=Path, default=Path("docs/img/objectives.png"))
    p.add_argument("--positions", type=Path, nargs="+", help="checkpoints: print their neighbour cosine")
    p.add_argument("--last", type=int, default=126, help="--positions: over positions 1 to this one")
    args = p.parse_args()
    if args.positions:
        for checkpoint in args.positions:
            print(
                f"{checkpoint}: neighbouring positions' cosine {neighbour_cosine(checkpoint, last=args.last):.3f}"
            )
    elif args.action == "run":
        if args.row is None:
            p.error("run: which row? one of " + ", ".join(BY_NAME))
        run(BY_NAME[args.row], args.runs, args.at, args.dry)
    else:
        rows = collect(args.runs, args.record) if args.action == "collect" else read(args.record) or {}
        print(table(rows))
        plot(rows, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
