"""The tour's robustness table in docs/results.md: the lineage tour with seeds 0, 1 and 2, under bf16
autocast (where the CPU computes bf16 natively) and in fp32, one row per model, BLEU overall and on the
shortest and longest sources. Finished tours in OUT are reused (seq2bert tour does not train a model twice).

    python docs/tour_seeds.py --out runs/sweep          # 6 tours, about 3.5 minutes each on 2 cores
    python docs/tour_seeds.py --models bahdanau,bahdanau-hard --precisions auto --out runs/hard
                                                        # some models (--models, --set: as seq2bert tour's)
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/sweep")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--precisions", nargs="+", default=["auto", "false"], choices=["auto", "true", "false"]
    )
    parser.add_argument("--models", help="seq2bert tour's --models (default: the tour's)")
    parser.add_argument("--set", action="append", default=[], help="seq2bert tour's --set, repeatable")
    args = parser.parse_args()
    extra = (["--models", args.models] if args.models else []) + [a for s in args.set for a in ("--set", s)]
    tours = {}
    for precision in args.precisions:
        for seed in args.seeds:
            out = Path(args.out) / f"tour-s{seed}-{precision}"
            cmd = [sys.executable, "-m", "seq2bert.cli", "tour", "--seed", str(seed), "--bf16", precision,
                   "--out", str(out), *extra]  # fmt: skip
            if not (out / "tour.json").is_file():
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            tours[precision, seed] = json.loads((out / "tour.json").read_text())
    first = next(iter(tours.values()))
    buckets = list(first["rows"][0]["test_bleu_by_length"])
    short, long = buckets[0], buckets[-1]
    print(f"test BLEU (BLEU on {short} words / on {long} words); rows: models, columns: precision and seed")
    head = [f"{tours[key]['machine'].split(' · ')[1]}, seed {key[1]}" for key in tours]
    print("| model | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    for i, row in enumerate(first["rows"]):
        cells = []
        for key in tours:
            r = tours[key]["rows"][i]
            by = r["test_bleu_by_length"]
            cells.append(f"{r['test_bleu']:.1f} ({by[short]['bleu']:.0f} / {by[long]['bleu']:.0f})")
        print(f"| {row['model']} | " + " | ".join(cells) + " |")
    for key, tour in tours.items():
        print(f"seed {key[1]}, {tour['machine']}: {tour['seconds'] / 60:.1f} minutes")


if __name__ == "__main__":
    main()
