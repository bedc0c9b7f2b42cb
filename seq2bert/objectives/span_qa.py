"""The span question-answering loss (Devlin et al. 2018, Sect. 4.2, SQuAD v1.1; Figure 4 (c)).

A start vector S and an end vector E score every token: P_i = softmax_i(S · T_i) for the start, likewise
with E for the end. "The training objective is the sum of the log-likelihoods of the correct start and end
positions" — halved here, as the released code and transformers do:

    L_QA = −½ (log P^start_{s} + log P^end_{e})        averaged over the batch

SQuAD 2.0 (Sect. 4.3) points unanswerable questions at [CLS], position 0. As transformers does, target
positions outside the sequence (e.g. an answer cut away by truncation) are clamped to T and ignored.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def span_qa_loss(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    start_positions: torch.Tensor,
    end_positions: torch.Tensor,
) -> torch.Tensor:
    """L_QA: start_logits, end_logits (B, T); start_positions, end_positions (B,) token indices (beyond T:
    ignored). fp32 even under autocast."""
    T = start_logits.size(1)
    start = start_positions.reshape(-1).clamp(0, T)  # (B,); T = "outside the sequence"
    end = end_positions.reshape(-1).clamp(0, T)
    return (
        F.cross_entropy(start_logits.float(), start, ignore_index=T)
        + F.cross_entropy(end_logits.float(), end, ignore_index=T)
    ) / 2
