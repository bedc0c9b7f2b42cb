"""BERT pretraining step throughput: ours against transformers' BertForPreTraining, in one run.

Same config, same weights, same batch (random tokens, 15 % of positions labelled for the masked LM, random
NSP labels), same loss — the script checks that both losses agree before it times anything. One training
step = forward, backward, AdamW update. We compute the masked-LM head only at the labelled positions
(``sparse_prediction``), and the last encoder layer's queries, W^O and feed-forward only there and at [CLS]:
the same loss; transformers computes both at every position.

For each precision (fp32, and bf16 autocast where the CPU computes bf16 natively) it prints tokens/s of
both and their ratio, and the achieved GFLOP/s of ours against the machine's matmul peak measured here.

    python benchmarks/bert_pretraining.py                         # bert-mini (4/256), seq 128, batch 32
    python benchmarks/bert_pretraining.py --size base --batch 8   # bert-base (12/768)
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys

import torch
import transformers
from common import matmul_peak, seconds

from seq2bert.models.bert.config import bert_base, bert_mini, bert_small, bert_tiny
from seq2bert.models.bert.convert import from_hf_state_dict
from seq2bert.models.bert.model import BertForPreTraining, prediction_rows
from seq2bert.precision import native_bf16

SIZES = {"tiny": bert_tiny, "mini": bert_mini, "small": bert_small, "base": bert_base}


def step_flops(cfg, batch: int, seq: int, predicted: int, last_rows: int) -> float:
    """Training FLOPs (forward + backward ≈ 3 × forward) that ours performs in one step: the encoder's
    matmuls, attention scores and weighted sums — its last layer's queries, W^O and feed-forward only at
    ``last_rows`` rows ([CLS] and the masked positions, ``prediction_rows``) — the pooler / NSP head, and
    the MLM head at ``predicted`` positions."""
    H, L, I, V = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size, cfg.vocab_size
    tokens = batch * seq

    def layer(rows: int) -> int:  # keys and values at every position, the rest at ``rows``
        return 2 * tokens * 2 * H * H + 2 * rows * (2 * H * H + 2 * H * I) + 2 * 2 * rows * seq * H

    encoder = (L - 1) * layer(tokens) + layer(last_rows)
    heads = 2 * predicted * (H * H + H * V) + 2 * batch * (H * H + 2 * H)
    return 3 * (encoder + heads)


def make_batch(cfg, batch: int, seq: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    ids = torch.randint(1000, cfg.vocab_size, (batch, seq), generator=g)
    labels = torch.full_like(ids, -100)
    chosen = torch.rand(batch, seq, generator=g) < 0.15
    labels[chosen] = ids[chosen]
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "token_type_ids": (torch.arange(seq) >= seq // 2).long().expand(batch, seq).contiguous(),
        "labels": labels,
        "next_sentence_label": torch.randint(0, 2, (batch,), generator=g),
    }


def timed_steps(model, loss_fn, bf16: bool, repeats: int) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)  # both engines' default AdamW
    model.train()

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # warm-up
    return statistics.median(seconds(step) for _ in range(repeats))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=list(SIZES), default="mini")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--precision", choices=["fp32", "bf16", "both"], default="both")
    args = p.parse_args()
    cfg = SIZES[args.size](hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # equal losses
    hf_cfg = transformers.BertConfig(**{k: v for k, v in vars(cfg).items() if k != "model_type"})
    torch.manual_seed(0)
    theirs = transformers.BertForPreTraining(hf_cfg)
    ours = BertForPreTraining(cfg)
    ours.load_state_dict(from_hf_state_dict(theirs.state_dict(), cfg, "BertForPreTraining"))
    batch = make_batch(cfg, args.batch, args.seq, torch.Generator().manual_seed(1))
    predicted = int(batch["labels"].ne(-100).sum())
    last_rows = prediction_rows(batch["labels"])[0].numel()

    def our_loss():
        return ours(**batch, sparse_prediction=True).loss

    def their_loss():
        return theirs(**batch).loss

    ours.eval()
    theirs.eval()
    with torch.no_grad():
        a, b = float(our_loss()), float(their_loss())
    if abs(a - b) > 1e-4 * max(1.0, abs(b)):
        print(f"the losses differ: ours {a:.6f}, transformers {b:.6f}", file=sys.stderr)
        return 1
    bf16_ok = native_bf16("cpu")
    print(
        f"machine: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, native bf16: {bf16_ok}"
    )
    params = sum(t.numel() for t in ours.parameters()) / 1e6
    print(
        f"bert-{args.size} ({cfg.num_hidden_layers}/{cfg.hidden_size}, {params:.1f} M parameters), batch "
        f"{args.batch} × {args.seq} tokens, {predicted} masked positions; loss {a:.4f} (ours) = {b:.4f} "
        f"(transformers); median of {args.repeats} steps"
    )
    print(
        f"{'precision':<10}{'seq2bert tok/s':>16}{'transformers tok/s':>20}{'ratio':>8}{'GFLOP/s':>10}{'peak':>8}{'of peak':>9}"
    )
    precisions = {"fp32": [False], "bf16": [True], "both": [False, True]}[args.precision]
    for bf16 in precisions:
        name = "bf16" if bf16 else "fp32"
        if bf16 and not bf16_ok:
            print(
                f"{name:<10}skipped: this CPU has no native bf16 (it would be emulated, far slower than fp32)"
            )
            continue
        t_ours = timed_steps(ours, our_loss, bf16, args.repeats)
        t_hf = timed_steps(theirs, their_loss, bf16, args.repeats)
        tokens = args.batch * args.seq
        gflops = step_flops(cfg, args.batch, args.seq, predicted, last_rows) / t_ours / 1e9
        peak = matmul_peak(torch.bfloat16 if bf16 else torch.float32)
        print(
            f"{name:<10}{tokens / t_ours:>16,.0f}{tokens / t_hf:>20,.0f}{t_hf / t_ours:>7.2f}x"
            f"{gflops:>10.0f}{peak:>8.0f}{100 * gflops / peak:>8.0f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
