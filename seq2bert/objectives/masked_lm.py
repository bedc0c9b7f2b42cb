"""The masked language model loss (Devlin et al. 2018, Sect. 3.1, Task #1: "Masked LM").

Some input tokens are chosen (15 % in BERT, see seq2bert/data/masking.py) and replaced; the model predicts
the original token at each chosen position i from its final state T_i, and the loss is the mean
cross-entropy over the chosen positions only:

    L_MLM = −(1/N) Σ_{i chosen} log p(x_i | x̃)        p = softmax over the vocabulary of the MLM head

Labels carry the original token at the chosen positions and IGNORE_INDEX (−100) everywhere else.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """L_MLM: mean cross-entropy over the positions whose label is not IGNORE_INDEX.

    Either dense — logits (B, T, V) at every position with labels (B, T) — or sparse — logits (N, V)
    already gathered at the N chosen positions with their targets (N,) (the head run only where it is
    read; same loss). Computed in fp32 even under autocast.
    """
    return F.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)),  # (B·T, V) or (N, V)
        labels.reshape(-1),  # (B·T,) or (N,)
        ignore_index=IGNORE_INDEX,
    )
