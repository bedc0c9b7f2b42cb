"""Training throughput of the Seq2Seq (Sutskever et al. 2014) on CPU or CUDA: fp32 against bf16 autocast.

Prints target+source tokens per second for the same batches under fp32 and under bf16 autocast, and their
ratio. The peer here is the same model in fp32: the LSTM Seq2Seq has no transformers counterpart.

    python benchmarks/seq2seq_training.py                  # the Multi30k-sized model (2 x 512, vocab 8000)
    python benchmarks/seq2seq_training.py --layers 4 --hidden 1000 --embedding 1000   # the paper's shape
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from seq2bert.models.seq2seq.config import Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq


def tokens_per_second(model, batches, *, bf16: bool, device: torch.device) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    n_tok, seconds = 0, 0.0
    for i, (src, dec, lab) in enumerate(batches):
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(src, None, dec, labels=lab).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i > 0:  # the first step warms up the kernels
            seconds += time.perf_counter() - start
            n_tok += src.numel() + lab.numel()
    return n_tok / seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--embedding", type=int, default=256)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--batch", type=int, default=128, help="sentences per batch")
    p.add_argument("--length", type=int, default=16, help="tokens per sentence")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    device = torch.device(args.device)
    cfg = Seq2SeqConfig(
        src_vocab_size=args.vocab,
        tgt_vocab_size=args.vocab,
        embedding_dim=args.embedding,
        hidden_size=args.hidden,
        num_layers=args.layers,
        dropout=0.2,
    )
    g = torch.Generator().manual_seed(0)
    batches = [
        tuple(
            torch.randint(7, args.vocab, (args.batch, args.length), generator=g).to(device) for _ in range(3)
        )
        for _ in range(args.steps)
    ]
    results = {}
    for bf16 in (False, True):
        torch.manual_seed(0)
        model = Seq2Seq(cfg).to(device)
        results[bf16] = tokens_per_second(model, batches, bf16=bf16, device=device)
    print(
        f"machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}, device {device}"
    )
    print(
        f"model: {args.layers} x {args.hidden} LSTM, embedding {args.embedding}, vocab {args.vocab}; "
        f"batch {args.batch} x {args.length} tokens"
    )
    print(f"fp32 (peer):  {results[False]:10,.0f} tokens/s")
    print(f"bf16 (ours):  {results[True]:10,.0f} tokens/s")
    print(f"ratio:        {results[True] / results[False]:10.2f}x")


if __name__ == "__main__":
    main()
