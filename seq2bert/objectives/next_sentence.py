"""The next sentence prediction loss (Devlin et al. 2018, Sect. 3.1, Task #2: "Next Sentence Prediction").

Each pretraining input is a pair A, B: 50 % of the time B is the sentence that follows A (IsNext), 50 % a
random sentence of the corpus (NotNext). A binary classifier on the pooled [CLS] state C predicts which:

    L_NSP = −(1/B) Σ_b log softmax(W_nsp C_b)_{y_b}        y = 0 IsNext, 1 NotNext

Label convention: IsNext = 0, NotNext = 1 (the released code's and transformers'). The same loss serves
ALBERT's sentence-order prediction (Lan et al. 2019, Sect. 3.1: SOP, where the negative is the same two
segments swapped, 1 = swapped): only the way the pairs are made differs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def next_sentence_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """L_NSP: logits (B, 2), labels (B,) with IsNext = 0, NotNext = 1; fp32 even under autocast."""
    return F.cross_entropy(logits.float(), labels.reshape(-1))
