"""Training and decoding speed of the recurrent encoder-decoders: Seq2Seq, Cho, Bahdanau (RNNsearch), Luong.

For each model, in one run on the same batches:
- training tokens/s (source + target) in fp32 and under bf16 autocast (what `train.bf16=true` does), and
  their ratio — bf16 only where the device computes it natively (seq2bert/precision.py); elsewhere it is
  emulated and many times slower than fp32, and is skipped;
- beam-search sentences/s with beam 5: our batched search over a whole batch (ours) against the same search
  run one sentence at a time (the peer — how tutorial decoders translate), and their ratio; greedy
  sentences/s beside them.

There is no transformers counterpart of these models, so the peers are the same models run the slow way.

    python benchmarks/attention_family.py                       # Multi30k-sized models, vocab 8000
    python benchmarks/attention_family.py --models bahdanau luong-local-p --hidden 256
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import generate
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.registry import build_model
from seq2bert.models.seq2seq.config import ChoConfig, Seq2SeqConfig
from seq2bert.precision import native_bf16

BOS, EOS, PAD = 5, 6, 0


def make_config(name: str, vocab: int, embedding: int, hidden: int):
    common = dict(src_vocab_size=vocab, tgt_vocab_size=vocab, embedding_dim=embedding, hidden_size=hidden)
    if name == "seq2seq":
        return Seq2SeqConfig(**common, num_layers=2)
    if name == "cho":
        return ChoConfig(**common, maxout_size=hidden // 2)
    if name == "bahdanau":
        return BahdanauConfig(**common, attention_size=hidden, maxout_size=hidden // 2)
    attention = {"luong-global": "global", "luong-local-p": "local-p"}[name]
    return LuongConfig(**common, num_layers=2, score="general", attention=attention)


MODEL_NAMES = ("seq2seq", "cho", "bahdanau", "luong-global", "luong-local-p")


def training_tokens_per_second(model, batches, *, bf16: bool) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)  # the engine's AdamW
    model.train()
    n_tok, seconds = 0, 0.0
    for i, (src, dec, lab) in enumerate(batches):
        start = time.perf_counter()
        with torch.autocast(src.device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(src, None, dec, labels=lab).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if src.device.type == "cuda":
            torch.cuda.synchronize()
        if i > 0:  # the first step warms up
            seconds += time.perf_counter() - start
            n_tok += src.numel() + lab.numel()
    return n_tok / seconds


@torch.no_grad()
def sentences_per_second(model, src: torch.Tensor, *, beams: int, batched: bool, bf16: bool) -> float:
    model.eval()
    rows = [src] if batched else list(src.split(1))
    # at most |x| + 10 tokens; beam search ranks with the recipes' GNMT length penalty
    config = GenerationConfig(
        decoder_start_token_id=BOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
        num_beams=beams,
        max_len_a=1.0,
        max_len_b=10,
        length_penalty_form="wu",
    )
    start = time.perf_counter()
    with torch.autocast(src.device.type, dtype=torch.bfloat16, enabled=bf16):
        for x in rows:
            generate(model, x, torch.ones_like(x), config)
    if src.device.type == "cuda":
        torch.cuda.synchronize()
    return src.size(0) / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(MODEL_NAMES), choices=MODEL_NAMES)
    p.add_argument("--hidden", type=int, default=384)
    p.add_argument("--embedding", type=int, default=256)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--batch", type=int, default=100, help="sentences per training batch")
    p.add_argument("--length", type=int, default=15, help="tokens per sentence")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--decode-sentences", type=int, default=64)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    device = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    batches = [
        tuple(
            torch.randint(7, args.vocab, (args.batch, args.length), generator=g).to(device) for _ in range(3)
        )
        for _ in range(args.steps)
    ]
    sources = torch.randint(7, args.vocab, (args.decode_sentences, args.length), generator=g).to(device)
    bf16_native = native_bf16(device)
    print(
        f"machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}, device {device}, native bf16: {bf16_native}"
    )
    print(
        f"hidden {args.hidden}, embedding {args.embedding}, vocab {args.vocab}; training batches "
        f"{args.batch} x {args.length} tokens; decoding {args.decode_sentences} sentences of {args.length} "
        "tokens (untrained weights: every hypothesis runs to the maximum length a·|x| + b = |x| + 10)"
    )
    header = (
        f"{'model':<15}{'params':>9} | {'train fp32':>11}{'train bf16':>11}{'ratio':>7} | "
        f"{'greedy':>8}{'beam5 1-by-1':>13}{'beam5 batch':>12}{'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for name in args.models:
        torch.manual_seed(0)
        cfg = make_config(name, args.vocab, args.embedding, args.hidden)
        train = {}
        for bf16 in (False, True) if bf16_native else (False,):
            torch.manual_seed(0)
            train[bf16] = training_tokens_per_second(build_model(cfg).to(device), batches, bf16=bf16)
        model = build_model(cfg).to(device)
        params = sum(t.numel() for t in model.parameters())
        greedy = sentences_per_second(model, sources, beams=1, batched=True, bf16=bf16_native)
        one = sentences_per_second(model, sources[:16], beams=5, batched=False, bf16=bf16_native)
        batch = sentences_per_second(model, sources, beams=5, batched=True, bf16=bf16_native)
        bf16_cols = (
            f"{train[True]:>11,.0f}{train[True] / train[False]:>6.2f}x"
            if bf16_native
            else f"{'-':>11}{'-':>7}"
        )
        print(
            f"{name:<15}{params / 1e6:>8.1f}M | {train[False]:>11,.0f}{bf16_cols} | "
            f"{greedy:>8.1f}{one:>13.1f}{batch:>12.1f}{batch / one:>6.2f}x"
        )
    precision = "bf16 autocast" if bf16_native else "fp32: this device has no native bf16"
    print(f"train: source + target tokens/s; decoding: sentences/s ({precision})")


if __name__ == "__main__":
    main()
