"""Operators per decoding step, ours against transformers', in one run: the calls into torch's dispatcher
(every aten operator, a view included) that one more generated token costs.

A step's time on a small model is mostly these calls' fixed cost (a few microseconds each), not arithmetic;
on a large one, mostly reading the weights. Counted, not timed, so the figure is the same on a busy machine:
    per step = (operators of generate(n + k new tokens) − operators of generate(n new tokens)) / k,
the search's own bookkeeping included, for both libraries on the same random weights (outputs checked equal).

    python benchmarks/decoding_ops.py                      # GPT-2 small greedy and beam 4, Marian beam 5
    python benchmarks/decoding_ops.py --gpt tiny --marian-d 64
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpt import make_models as gpt_models  # noqa: E402
from gpt import prompts  # noqa: E402
from transformer_marian import make_models as marian_models  # noqa: E402


class Operators(TorchDispatchMode):
    """Counts the aten operators dispatched inside the ``with`` block, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def operators(fn) -> collections.Counter:
    with torch.no_grad(), Operators() as ops:
        fn()
    return ops.counts


def per_step(generate, n: int, k: int) -> tuple[float, collections.Counter]:
    """Operators per token of ``generate(new_tokens)`` between n and n + k new tokens, and their names."""
    short, long = operators(lambda: generate(n)), operators(lambda: generate(n + k))
    extra = long - short
    return sum(extra.values()) / k, extra


def row(name: str, ours: tuple, theirs: tuple, k: int, top: int) -> None:
    (o, o_ops), (t, _) = ours, theirs
    print(f"| {name} | {o:.0f} | {t:.0f} | {o / t:.2f} |")
    if top:
        mine = ", ".join(f"{op} {c / k:.0f}" for op, c in o_ops.most_common(top))
        print(f"|   ours, most called per step | {mine} | | |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpt", default="small", choices=("small", "mini", "tiny"))
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--marian-d", type=int, default=256)
    p.add_argument("--steps", type=int, default=8, help="k: the tokens the difference counts")
    p.add_argument("--top", type=int, default=8, help="our most called operators to list (0: none)")
    args = p.parse_args()
    torch.manual_seed(0)
    k = args.steps
    print("| decoding step | ours: operators per token | transformers | ours / theirs |")
    print("|---|---|---|---|")
    hf, ours = gpt_models(args.gpt, args.vocab)
    ids, mask = prompts(ours.config, args.batch, 32)
    for beams in (1, 4):
        settings = dict(num_beams=beams, do_sample=False, min_new_tokens=4 + k)

        def theirs(n, s=settings):
            return hf.generate(
                ids, attention_mask=mask, max_new_tokens=n, pad_token_id=hf.config.eos_token_id, **s
            )

        def mine(n, s=settings):
            return ours.generate(ids, mask, max_new_tokens=n, **s)

        if not torch.equal(mine(4 + k), theirs(4 + k)):
            print(f"GPT-2 {args.gpt}, {beams} beams: the outputs differ", file=sys.stderr)
            return 1
        row(f"GPT-2 {args.gpt}, batch {args.batch}, {'greedy' if beams == 1 else f'beam {beams}'}",
            per_step(mine, 4, k), per_step(theirs, 4, k), k, args.top)  # fmt: skip
    margs = argparse.Namespace(vocab=5000, d_model=args.marian_d, layers=3, heads=4)
    hf, ours = marian_models(margs)
    hf.eval(), ours.eval()
    src = torch.randint(1, 4999, (32, 20))
    src_mask = torch.ones_like(src)
    settings = dict(num_beams=5, length_penalty=1.0, min_new_tokens=4 + k)

    def theirs_m(n):
        return hf.generate(
            input_ids=src, attention_mask=src_mask, max_new_tokens=n, do_sample=False, **settings
        )

    def mine_m(n):
        return ours.generate(src, src_mask, max_new_tokens=n, **settings)

    row(
        f"Marian d{args.marian_d} 3+3, batch 32, beam 5",
        per_step(mine_m, 4, k),
        per_step(theirs_m, 4, k),
        k,
        args.top,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
