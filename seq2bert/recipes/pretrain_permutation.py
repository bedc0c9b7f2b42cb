"""XLNet's objective for `seq2bert pretrain --set model.model_type=xlnet` (recipes/pretrain.py): the permutation
LM with partial prediction (objectives/permutation_lm.py) on framed blocks of the documents' stream
(data/permutation.py), the ``permutation`` section's K; held out: the loss, accuracy and perplexity of the
predicted tokens of fixed held-out blocks, their orders drawn once."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from seq2bert.data.lm import TokenStream
from seq2bert.data.permutation import PermutationBlocks
from seq2bert.data.pretraining import Corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.permutation_lm import K

METRIC = "plm_accuracy"  # the held-out accuracy on the predicted tokens picks the best checkpoint


@dataclass
class PermutationSettings:
    """The permutation LM's partial prediction constant K: about 1/K of each block's tokens are predicted
    (Yang et al. 2019, Sect. 2.3; K = 6 in Sect. 3.1)."""

    k: float = K

    def validate(self) -> None:
        if not self.k >= 1.0:
            raise ConfigError(f"permutation.k: at least 1 (1: predict every token), got {self.k}")

    def __post_init__(self) -> None:
        self.validate()


def end_of_document(tok: Tokenizer) -> int:
    """The token that ends each document of the stream: XLNet's <eod>, else the separator."""
    eod = tok.token_to_id("<eod>")
    return eod if eod is not None else tok.sep_token_id


def blocks(
    corpus: Corpus, documents, tok: Tokenizer, length: int, batch_size: int, k: float, **options
) -> PermutationBlocks:
    """The framed blocks of ``documents`` (``options``: seed, shuffle, rank, world, source)."""
    return PermutationBlocks(
        TokenStream(corpus, documents, end_of_document(tok)),
        length,
        batch_size,
        sep=tok.sep_token_id,
        cls=tok.cls_token_id,
        pad=tok.pad_token_id,
        k=k,
        **options,
    )


def loss(model, batch: dict) -> torch.Tensor:
    """−(1/N) Σ log p(x_{z_t} | x_{z<t}) over the batch's N predicted tokens (Eq. 5)."""
    return model(**batch).loss


@torch.no_grad()
def evaluate(model, valid: PermutationBlocks, indices: list[int], device) -> dict:
    """The mean NLL (``loss``), accuracy and perplexity of the predicted tokens of the held-out blocks
    ``indices``."""
    nll = correct = 0.0
    n = 0
    for start in range(0, len(indices), valid.batch_size):
        batch = {k: v.to(device) for k, v in valid.collate(indices[start : start + valid.batch_size]).items()}
        labels = batch.pop("labels")
        logits = model(**batch, use_mems=False).logits.float()  # (B, P, V)
        real = labels.ne(IGNORE_INDEX)
        nll += float(F.cross_entropy(logits[real], labels[real], reduction="sum"))
        correct += float((logits[real].argmax(-1) == labels[real]).sum())
        n += int(real.sum())
    mean = nll / max(n, 1)
    return {
        "loss": mean,
        "plm_loss": mean,
        "plm_accuracy": 100.0 * correct / max(n, 1),
        "plm_perplexity": math.exp(min(mean, 50.0)),
        "tokens": n,
    }
