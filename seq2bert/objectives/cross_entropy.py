"""Token-level cross-entropy for sequence models, with optional label smoothing (Szegedy et al. 2016).

Label smoothing with ε spreads ε of the target mass uniformly over the vocabulary: the loss becomes
(1 − ε)·CE(y) + ε·mean_v(−log p_v). The Transformer uses ε_ls = 0.1 (Vaswani et al. 2017, Sect. 5.4).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100


def sequence_cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, *, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not ``IGNORE_INDEX``.

    logits: (B, T, V); labels: (B, T) with IGNORE_INDEX on padding. Computed in fp32 even under autocast.
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),  # (B·T, V)
        labels.reshape(-1),  # (B·T,)
        ignore_index=IGNORE_INDEX,
        label_smoothing=label_smoothing,
    )
