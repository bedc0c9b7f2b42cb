"""GPT-2 speed against transformers' GPT2LMHeadModel, in one run, on the same random-weight model.

The model is built by transformers (GPT-2's initialisation, random weights, dropout 0) and loaded into ours,
for each shape asked for: GPT-2 small (12 layers, d_model 768, 12 heads, vocabulary 50,257: 124 M
parameters) and mini (4 layers, d_model 256, 4 heads, the same vocabulary).

- generation: a batch of left-padded prompts (8 × 32 tokens; two rows shorter), ``--new-tokens`` new tokens
  (random weights rarely emit [EOS], so every row runs to the limit), greedy and beam 4; new tokens/s of our
  ``generate`` (seq2bert/models/decoder_only.py) and of transformers' ``generate``. In fp32 the outputs must
  be identical, or the script says so and exits 1; under bf16 autocast the two libraries round differently
  and a near tie can go either way, after which a row diverges, so the script prints how many rows are
  identical and the share of new tokens that agree. GFLOP/s: the FLOPs torch counts in our call (matmuls
  and attention), per second — how far decoding is from the compute bound.
- training: one optimizer step (forward, backward, AdamW — torch's fused kernel, the default of our engine
  and of transformers' Trainer) on a batch of 16 × 256 random tokens, the labels the inputs; tokens/s of both,
  and the GFLOP/s ours achieves against the matmul peak of this machine measured in the same run. Ours trains
  as seq2bert pretrain does, with ``loss_only``: the LM head and the loss fused, no (B, T, V) logits built
  (objectives/cross_entropy.py) — the same FLOPs, far less memory traffic around the 50,257-wide softmax.
  The losses are checked equal (fp32) before anything is timed.

Both precisions: fp32 and, where the CPU computes bf16 natively (AVX-512 BF16 / AMX), bf16 autocast on both
sides. transformers runs its default attention (torch's scaled_dot_product_attention).

    python benchmarks/gpt.py                              # small and mini, generation and training
    python benchmarks/gpt.py --models mini --repeats 5
    python benchmarks/gpt.py --parts generation --precision fp32
    python benchmarks/gpt.py --quick                      # a tiny model and batch: a smoke run of seconds
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys

import torch
import transformers
from common import counted_flops, matmul_peak, seconds, timed

from seq2bert.models.gpt.config import GPT2Config, gpt2_mini, gpt2_small, gpt2_tiny
from seq2bert.models.gpt.convert import config_to_hf, from_hf_state_dict
from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.precision import native_bf16

MODELS = {"small": gpt2_small, "mini": gpt2_mini, "tiny": gpt2_tiny}
SEARCHES = {"greedy": 1, "beam 4": 4}
QUICK = dict(
    models=["tiny"], batch=2, prompt=8, new_tokens=6, train_batch=2, train_seq=32, repeats=1, peak_n=256
)


def make_models(name: str, vocab: int) -> tuple[transformers.GPT2LMHeadModel, GPT2LMHeadModel]:
    """transformers' model with random weights, and ours loaded from its state dict; dropout 0."""
    dropout = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    special = dict(bos_token_id=vocab - 1, eos_token_id=vocab - 1)  # <|endoftext|>, the last token
    cfg = MODELS[name](vocab_size=vocab, **special, **dropout)
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(**config_to_hf(cfg, "GPT2LMHeadModel")))
    ours = GPT2LMHeadModel(cfg)
    ours.load_state_dict(from_hf_state_dict(hf.state_dict(), cfg, "GPT2LMHeadModel"))
    return hf.eval(), ours.eval()


def prompts(cfg: GPT2Config, batch: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded prompts (batch, length) of random tokens and their mask: rows 1 and 2 are shorter."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size - 1, (batch, length), generator=g)  # never [EOS]
    mask = torch.ones_like(ids)
    for row, pads in ((1, length // 4), (2, length // 2)):
        if row < batch:
            mask[row, :pads] = 0
    return ids.masked_fill(mask == 0, cfg.eos_token_id), mask


def generation(hf, ours, ids, mask, args, num_beams: int, bf16: bool):
    """New tokens/s of ours and of transformers, whether the outputs agree (rows identical, the share of
    equal new tokens) and our GFLOP/s."""
    settings = dict(num_beams=num_beams, max_new_tokens=args.new_tokens, length_penalty=1.0)
    eos = ours.config.eos_token_id

    def theirs():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return hf.generate(
                input_ids=ids, attention_mask=mask, do_sample=False, pad_token_id=eos, **settings
            )

    def our():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return ours.generate(ids, mask, **settings)

    with torch.no_grad():
        t_hf, out_hf = timed(theirs, args.repeats)
        t_ours, out_ours = timed(our, args.repeats)
        flops = counted_flops(our)
    P = ids.size(1)
    new_ours, new_hf = out_ours[:, P:], out_hf[:, P:]
    if new_ours.shape == new_hf.shape:
        rows = int(new_ours.eq(new_hf).all(dim=1).sum())
        tokens = float(new_ours.eq(new_hf).float().mean())
    else:
        rows, tokens = 0, 0.0
    n_new = int(new_ours.ne(eos).sum())
    return (
        n_new / t_ours,
        int(new_hf.ne(eos).sum()) / t_hf,
        (rows, out_ours.size(0), tokens),
        flops / t_ours / 1e9,
    )


def step_flops(cfg: GPT2Config, batch: int, seq: int) -> float:
    """Training FLOPs of one step (forward + backward = 3 × forward): the projections of every layer (W^Q, W^K,
    W^V, W^O: 4 d², the feed-forward: 2 d·d_ff), the attention scores and weighted sums (the whole T × T
    square, as torch's counter counts the fused kernel) and the LM head (d·V) at every position."""
    d, L, V = cfg.n_embd, cfg.n_layer, cfg.vocab_size
    tokens = batch * seq
    forward = 2 * tokens * (L * (4 * d * d + 2 * d * cfg.d_ff) + d * V) + L * 4 * batch * seq * seq * d
    return 3 * forward


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


def training(name, hf, ours, args, precisions) -> bool:
    cfg = ours.config
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, cfg.vocab_size, (args.train_batch, args.train_seq), generator=g)

    def our_loss():  # as seq2bert pretrain trains: the LM head fused with its loss
        return ours(ids, labels=ids, loss_only=True).loss

    def their_loss():
        return hf(input_ids=ids, labels=ids).loss

    with torch.no_grad():
        a, b = float(our_loss()), float(their_loss())
    if abs(a - b) > 1e-4 * max(1.0, abs(b)):
        print(
            f"the losses differ: ours {a:.6f}, transformers {b:.6f}: the comparison is void", file=sys.stderr
        )
        return False
    tokens = args.train_batch * args.train_seq
    print(
        f"training step, batch {args.train_batch} × {args.train_seq} tokens; loss {a:.4f} (ours) = {b:.4f} "
        f"(transformers); median of {args.repeats} steps"
    )
    print(
        f"  {'precision':<10}{'seq2bert tok/s':>16}{'transformers tok/s':>20}{'ratio':>8}{'GFLOP/s':>10}"
        f"{'peak':>8}{'of peak':>9}"
    )
    for bf16 in precisions:
        t_ours = timed_steps(ours, our_loss, bf16, args.repeats)
        t_hf = timed_steps(hf, their_loss, bf16, args.repeats)
        gflops = step_flops(cfg, args.train_batch, args.train_seq) / t_ours / 1e9
        peak = matmul_peak(torch.bfloat16 if bf16 else torch.float32, n=args.peak_n)
        print(
            f"  {'bf16' if bf16 else 'fp32':<10}{tokens / t_ours:>16,.0f}{tokens / t_hf:>20,.0f}"
            f"{t_hf / t_ours:>7.2f}x{gflops:>10.0f}{peak:>8.0f}{100 * gflops / peak:>8.0f}%"
        )
    hf.eval()
    ours.eval()
    return True


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=["small", "mini"])
    p.add_argument(
        "--parts", nargs="+", choices=["generation", "training"], default=["generation", "training"]
    )
    p.add_argument("--precision", choices=["fp32", "bf16", "both"], default="both")
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--batch", type=int, default=8, help="prompts per generation batch")
    p.add_argument("--prompt", type=int, default=32, help="prompt length (rows 1 and 2 left-padded)")
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--train-batch", type=int, default=16)
    p.add_argument("--train-seq", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--quick", action="store_true", help="a tiny model and batch, one repeat: a smoke run")
    p.set_defaults(peak_n=2048)  # the size of the matmul that measures the peak
    args = p.parse_args()
    transformers.logging.set_verbosity_error()  # its notes on the loss type and the pad token
    if args.quick:
        vars(args).update(QUICK, vocab=min(args.vocab, 1000))
    if args.threads:
        torch.set_num_threads(args.threads)
    bf16_ok = native_bf16("cpu")
    precisions = {"fp32": [False], "bf16": [True], "both": [False, True]}[args.precision]
    if True in precisions and not bf16_ok:
        print("bf16 skipped: this CPU has no native bf16 (it would be emulated, far slower than fp32)")
        precisions = [b for b in precisions if not b] or []
    print(
        f"machine: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, native bf16: {bf16_ok}"
    )
    ok = True
    for name in args.models:
        hf, ours = make_models(name, args.vocab)
        c = ours.config
        params = sum(t.numel() for t in ours.parameters()) / 1e6
        print(f"\n{name}: {c.n_layer} layers, d_model {c.n_embd}, {c.n_head} heads, vocab {c.vocab_size}, "
              f"{params:.1f} M parameters")  # fmt: skip
        if "generation" in args.parts:
            ids, mask = prompts(c, args.batch, args.prompt)
            print(
                f"generation, {args.batch} prompts × {args.prompt} tokens (left-padded), {args.new_tokens} new "
                f"tokens; median of {args.repeats}"
            )
            print(
                f"  {'search':<16}{'seq2bert tok/s':>16}{'transformers tok/s':>20}{'ratio':>8}{'GFLOP/s':>9}  outputs"
            )
            for bf16 in precisions:
                for search, beams in SEARCHES.items():
                    r_ours, r_hf, (rows, n_rows, agree), gf = generation(
                        hf, ours, ids, mask, args, beams, bf16
                    )
                    label = f"{search}, {'bf16' if bf16 else 'fp32'}"
                    if rows == n_rows:
                        outputs = "identical"
                    else:
                        outputs = f"{rows}/{n_rows} rows identical, {100 * agree:.1f} % of new tokens equal"
                        ok &= bf16  # fp32 outputs must be identical
                    print(
                        f"  {label:<16}{r_ours:>16,.0f}{r_hf:>20,.0f}{r_ours / r_hf:>7.2f}x{gf:>9.0f}  {outputs}"
                    )
        if "training" in args.parts:
            ok &= training(name, hf, ours, args, precisions)
    if "generation" in args.parts:
        peak = matmul_peak(torch.float32, n=args.peak_n)
        print(f"\nthis machine's fp32 matmul peak ({args.peak_n}²): {peak:.0f} GFLOP/s")
    if not ok:
        print("the fp32 outputs differ: the comparison is void", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
