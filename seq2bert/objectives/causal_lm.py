"""The causal (left-to-right) language model loss (Radford et al. 2018, "Improving Language Understanding
by Generative Pre-Training", Sect. 3.1, Eq. 1):

    L_1(U) = Σ_i log P(u_i | u_{i−k}, …, u_{i−1}; Θ)

minimised as the mean negative log-likelihood of each token given the ones before it. transformers'
convention: the labels are the input ids themselves and the shift happens here — the logits at position t
predict the label at t + 1, so the last position predicts nothing and the first label is never a target.
Positions labelled IGNORE_INDEX (padding) are left out of the mean. In fine-tuning the same loss on the task's
inputs is an auxiliary objective (``with_auxiliary_lm``, Eq. 5).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seq2bert.objectives.cross_entropy import IGNORE_INDEX, linear_cross_entropy, sequence_cross_entropy


def causal_lm_loss(
    logits: torch.Tensor, labels: torch.Tensor, *, shift: bool = True, label_smoothing: float = 0.0
) -> torch.Tensor:
    """−(1/N) Σ_t log p(x_{t+1} | x_≤t) over the N positions whose next label is not IGNORE_INDEX.

    logits (B, T, V); labels (B, T): the input ids (IGNORE_INDEX on padding). ``shift=False``: the labels
    are already the next tokens (labels[:, t] is the target of logits[:, t]). fp32 even under autocast.
    """
    if shift:  # the labels move, not the logits (a slice of those would be copied whole): position t
        labels = F.pad(
            labels[:, 1:], (0, 1), value=IGNORE_INDEX
        )  # predicts token t + 1, the last one nothing
    return sequence_cross_entropy(logits, labels, label_smoothing=label_smoothing)


def causal_lm_loss_from_hidden(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, *, shift: bool = True
) -> torch.Tensor:
    """``causal_lm_loss(F.linear(hidden, weight), labels)`` without building the logits: the output layer W
    (V, d_model) and the loss fused (objectives/cross_entropy.py, ``linear_cross_entropy``).

    hidden (B, T, d_model), the final states; labels (B, T) as for ``causal_lm_loss``."""
    if shift:
        hidden, labels = hidden[:, :-1], labels[:, 1:]  # (B, T − 1, d_model), (B, T − 1)
    return linear_cross_entropy(hidden, weight, labels)


def with_auxiliary_lm(task_loss: torch.Tensor, lm_loss: torch.Tensor | None, lm_coef: float) -> torch.Tensor:
    """GPT-1's fine-tuning objective (Sect. 3.2, Eq. 5): L_3(C) = L_2(C) + λ · L_1(C), the task's loss plus λ times
    the language-model loss on the task's own inputs ("improving generalization of the supervised model, and
    accelerating convergence"; λ = 0.5). λ = 0, or no LM loss: the task's loss alone."""
    if lm_coef == 0 or lm_loss is None:
        return task_loss
    return task_loss + lm_coef * lm_loss
