"""The discriminator alone on a language where a replaced token can be told only from its neighbours: the
control experiment of the ELECTRA diagnosis in docs/results.md (issue 44, point 3).

Every sequence counts up from a random token in a random stride, x_{t+1} = x_t + s (mod 36), so each token is
uniform on its own and fixed by its left neighbour. A fraction of the positions (``--mask``) is replaced by
tokens drawn uniformly — a generator that has learned the words' frequencies and nothing of their contexts —
and ElectraForPreTraining (2 layers, width 64) learns to find them, with the paper's loss or with the classes
weighed alike (``--balanced``, electra.balanced).

    python docs/electra_synthetic.py --mask 0.15               # the paper's rate: stays at the prior
    python docs/electra_synthetic.py --mask 0.15 --balanced    # the classes weighed alike: learns
    python docs/electra_synthetic.py --mask 0.5
"""

from __future__ import annotations

import argparse

import torch

from seq2bert.models.electra.config import ElectraConfig
from seq2bert.models.electra.model import ElectraForPreTraining
from seq2bert.objectives.replaced_token_detection import replaced_token_detection_loss

SPECIAL, WORDS, LENGTH, BATCH = 4, 36, 32, 32  # ids 0–3 are [PAD] [CLS] [SEP] [MASK]


def batch(rate: float) -> tuple[torch.Tensor, torch.Tensor]:
    start, stride = torch.randint(0, WORDS, (BATCH, 1)), torch.randint(1, 4, (BATCH, 1))
    x = (start + stride * torch.arange(LENGTH)) % WORDS + SPECIAL
    replaced = torch.rand(BATCH, LENGTH) < rate
    corrupted = torch.where(replaced, torch.randint(SPECIAL, SPECIAL + WORDS, x.shape), x)
    return corrupted, corrupted.ne(x).long()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mask", type=float, default=0.15, help="the fraction of positions replaced")
    p.add_argument("--balanced", action="store_true", help="weigh the replaced and the original tokens alike")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    torch.manual_seed(0)
    cfg = ElectraConfig(vocab_size=SPECIAL + WORDS, hidden_size=64, embedding_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128, max_position_embeddings=64)  # fmt: skip
    model = ElectraForPreTraining(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for step in range(1, args.steps + 1):
        ids, labels = batch(args.mask)
        logits = model(ids, torch.ones_like(ids)).logits
        loss = replaced_token_detection_loss(logits, labels, balanced=args.balanced)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 300 == 0:
            found, kept = (logits > 0)[labels.bool()], (logits <= 0)[~labels.bool()]
            print(f"step {step}: loss {loss.item():.3f}, replaced found {100 * found.float().mean():.1f} %, "
                  f"originals kept {100 * kept.float().mean():.1f} %", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
