"""Transformer speed against transformers, in one run, on the same random-weight MarianMT model.

- decoding: beam 5 and greedy over a batch of source sentences, ``max_new_tokens`` target tokens each
  (random weights rarely emit [EOS], so every hypothesis runs to the limit); target tokens/s of our
  ``Transformer.generate`` (incremental decoding with a key/value cache, seq2bert/decoding/beam.py) and of
  ``MarianMTModel.generate``; the outputs must be identical, or the script says so and exits 1; with the
  matmul GFLOP/s of ours, which shows how far decoding is from the compute bound (the rest is overhead);
- training: one optimizer step (forward, backward, AdamW — torch's fused kernel, the default of our engine
  and of transformers' Trainer) on the same batch, ours as ``seq2bert train`` runs it (the loss-only
  forward: the output layer fused with the cross-entropy); source + target tokens/s of
  ours and of ``MarianMTModel``, in fp32 and — where the device computes bf16 natively — under bf16 autocast,
  with the GFLOP/s each achieves against the machine's fp32 matmul peak (a step at the peak cannot go faster
  without doing less work).

    python benchmarks/transformer_marian.py                 # d_model 256, 3+3 layers, batch 32, 24 tokens
    python benchmarks/transformer_marian.py --repeats 5 --threads 2
    python benchmarks/transformer_marian.py --training-only --profile   # the training steps' operator tables
"""

from __future__ import annotations

import argparse
import platform
import sys

import torch
import transformers
from common import counted_flops, matmul_peak, profile, timed

from seq2bert.models.transformer.convert import config_from_marian, from_marian_state_dict
from seq2bert.models.transformer.model import Transformer
from seq2bert.precision import native_bf16


def make_models(args):
    cfg = transformers.MarianConfig(
        vocab_size=args.vocab,
        d_model=args.d_model,
        encoder_layers=args.layers,
        decoder_layers=args.layers,
        encoder_attention_heads=args.heads,
        decoder_attention_heads=args.heads,
        encoder_ffn_dim=4 * args.d_model,
        decoder_ffn_dim=4 * args.d_model,
        max_position_embeddings=512,
        pad_token_id=args.vocab - 1,
        decoder_start_token_id=args.vocab - 1,
        eos_token_id=0,
        forced_eos_token_id=0,
        scale_embedding=True,
        activation_function="swish",
        dropout=0.1,
    )
    torch.manual_seed(0)
    hf = transformers.MarianMTModel(cfg)
    ours_cfg = config_from_marian(hf.config.to_dict())
    ours = Transformer(ours_cfg)
    ours.load_state_dict(from_marian_state_dict(hf.state_dict(), ours_cfg))
    return hf, ours


def decoding(hf, ours, src, mask, args, num_beams: int):
    settings = dict(num_beams=num_beams, max_new_tokens=args.new_tokens, length_penalty=1.0)
    hf.eval()
    ours.eval()
    with torch.no_grad():
        t_hf, out_hf = timed(
            lambda: hf.generate(input_ids=src, attention_mask=mask, do_sample=False, **settings), args.repeats
        )
        t_ours, out_ours = timed(lambda: ours.generate(src, mask, **settings), args.repeats)
        flops = counted_flops(lambda: ours.generate(src, mask, **settings))
    same = out_hf.tolist() == out_ours.tolist()
    n_tokens = (out_ours[:, 1:] != ours.config.pad_token_id).sum().item()
    return n_tokens / t_ours, n_tokens / t_hf, same, flops / t_ours / 1e9


def training(hf, ours, src, mask, tgt, args, bf16: bool):
    pad = ours.config.pad_token_id
    dec = torch.cat([torch.full_like(tgt[:, :1], ours.config.bos_token_id), tgt[:, :-1]], 1)

    def step_fn(model, opt, call):
        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = call()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        return step

    rates, gflops = [], []
    for model, call in (
        (ours, lambda: ours(src, mask, dec, labels=tgt, return_logits=False).loss),  # as `seq2bert train`
        (hf, lambda: hf(input_ids=src, attention_mask=mask, decoder_input_ids=dec, labels=tgt).loss),
    ):
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)  # both engines' default AdamW
        step = step_fn(model, opt, call)
        seconds, _ = timed(step, args.repeats)
        if args.profile:
            profile(f"training step ({'bf16' if bf16 else 'fp32'}), {type(model).__name__}", step, rows=20)
        rates.append((src.ne(pad).sum() + tgt.numel()).item() / seconds)
        gflops.append(counted_flops(step) / seconds / 1e9)
    return rates, gflops


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--src-len", type=int, default=20)
    p.add_argument("--new-tokens", type=int, default=24)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument(
        "--profile", action="store_true", help="print torch.profiler's table of each training step"
    )
    p.add_argument("--training-only", action="store_true", help="skip the decoding rows")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(1, args.vocab - 1, (args.batch, args.src_len), generator=g)
    lengths = torch.randint(args.src_len // 2, args.src_len + 1, (args.batch,), generator=g)
    mask = (torch.arange(args.src_len)[None, :] < lengths[:, None]).long()
    src = src.masked_fill(mask == 0, args.vocab - 1)
    tgt = torch.randint(1, args.vocab - 1, (args.batch, args.new_tokens), generator=g)
    hf, ours = make_models(args)
    print(
        f"machine: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, native bf16: {native_bf16('cpu')}"
    )
    print(
        f"random-weight MarianMT: d_model {args.d_model}, {args.layers}+{args.layers} layers, {args.heads} heads, "
        f"vocab {args.vocab}, {sum(t.numel() for t in ours.parameters()) / 1e6:.1f} M parameters; batch "
        f"{args.batch}, source {args.src_len} tokens, {args.new_tokens} new target tokens; median of {args.repeats}"
    )
    print(f"{'measure':<34}{'seq2bert':>12}{'transformers':>14}{'ratio':>8}{'GFLOP/s':>18}  outputs")
    ok = True
    for beams in () if args.training_only else (5, 1):
        r_ours, r_hf, same, gf = decoding(hf, ours, src, mask, args, beams)
        ok &= same
        label = f"{'beam 5' if beams == 5 else 'greedy'} decoding, target tokens/s"
        print(
            f"{label:<34}{r_ours:>12,.0f}{r_hf:>14,.0f}{r_ours / r_hf:>7.2f}x{gf:>18.0f}  "
            f"{'identical' if same else 'DIFFER'}"
        )
    for bf16 in (False, True) if native_bf16("cpu") else (False,):
        (r_ours, r_hf), (gf_ours, gf_hf) = training(hf, ours, src, mask, tgt, args, bf16)
        label = f"training step ({'bf16' if bf16 else 'fp32'}), tokens/s"
        print(
            f"{label:<34}{r_ours:>12,.0f}{r_hf:>14,.0f}{r_ours / r_hf:>7.2f}x{gf_ours:>8.0f} (them {gf_hf:.0f})"
        )
    peak = matmul_peak(torch.float32)
    print(
        f"GFLOP/s: the matmul FLOPs torch counts in our call, per second (decoding: ours only); "
        f"this machine's fp32 matmul peak (2048²): {peak:.0f} GFLOP/s"
    )
    if not ok:
        print("the decoded outputs differ: the comparison is void", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
