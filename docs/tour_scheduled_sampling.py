"""The table "Teacher forcing vs scheduled sampling" of docs/results.md: the recurrent models of the tour trained
with teacher forcing and with scheduled sampling (Bengio et al. 2015; inverse-sigmoid decay, ε = 1/2 halfway,
tokens sampled from the model), with the same budget and seeds; test BLEU greedy and with beam 5, BLEU on the
longest sources, and training time. Each tour is one line:

    seq2bert tour --models seq2seq,cho,bahdanau,luong --seed S --budget B --out OUT/tf-bB-sS
    seq2bert tour --models seq2seq,cho,bahdanau,luong --seed S --budget B --out OUT/ss-bB-sS \\
                  --set train.scheduled_sampling.schedule=inverse_sigmoid

    python docs/tour_scheduled_sampling.py --out runs/ss --seeds 0 1 --budget 1
    python docs/tour_scheduled_sampling.py --out runs/ss --seeds 0 1 --budget 1 --name slow \
        --set train.scheduled_sampling.schedule=inverse_sigmoid --set train.scheduled_sampling.k=342

(the second: another schedule, in OUT/slow-bB-sS). Finished tours in OUT are reused (seq2bert tour does not train a model twice); one tour runs at a time.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

MODELS = "seq2seq,cho,bahdanau,luong"
SCHEDULED = ["train.scheduled_sampling.schedule=inverse_sigmoid"]


def tour(out: Path, seed: int, budget: float, settings: list[str]) -> dict:
    cmd = [sys.executable, "-m", "seq2bert.cli", "tour", "--models", MODELS, "--seed", str(seed),
           "--budget", str(budget), "--out", str(out)]  # fmt: skip
    for setting in settings:
        cmd += ["--set", setting]
    if not (out / "tour.json").is_file():
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "tour.json").read_text())


def seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 60 else f"{int(s // 60)} min {s % 60:02.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/ss")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--name", default="ss", help="folder prefix of the scheduled-sampling tours")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help=f"the scheduled-sampling settings (default: {' '.join(SCHEDULED)})")  # fmt: skip
    args = parser.parse_args()
    tours = {}
    for seed in args.seeds:
        for scheduled in (False, True):
            name = f"{args.name if scheduled else 'tf'}-b{args.budget:g}-s{seed}"
            settings = (args.settings or SCHEDULED) if scheduled else []
            tours[seed, scheduled] = tour(Path(args.out) / name, seed, args.budget, settings)
    first = tours[args.seeds[0], False]
    longest = list(first["rows"][0]["test_bleu_by_length"])[-1]
    print(
        f"budget {args.budget:g}; {first['machine']}; scheduled sampling: {' '.join(args.settings or SCHEDULED)}"
    )
    print(f"test BLEU greedy / beam 5 (BLEU on {longest} words, greedy); training time")
    print("| model | seed | teacher forcing | scheduled sampling | Δ greedy | time, teacher forcing | "
          "time, scheduled sampling |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for i, row in enumerate(first["rows"]):
        for seed in args.seeds:
            tf, ss = (tours[seed, s]["rows"][i] for s in (False, True))
            cells = [f"{r['test_bleu']:.2f} / {r['test_bleu_beam5']:.2f} "
                     f"({r['test_bleu_by_length'][longest]['bleu']:.1f})" for r in (tf, ss)]  # fmt: skip
            delta = ss["test_bleu"] - tf["test_bleu"]
            print(f"| {row['model']} | {seed} | {cells[0]} | {cells[1]} | {delta:+.2f} | "
                  f"{seconds(tf['train_seconds'])} | {seconds(ss['train_seconds'])} |")  # fmt: skip
    for key, t in tours.items():
        kind = "scheduled sampling" if key[1] else "teacher forcing"
        print(f"seed {key[0]}, {kind}: {t['seconds'] / 60:.1f} minutes")


if __name__ == "__main__":
    main()
