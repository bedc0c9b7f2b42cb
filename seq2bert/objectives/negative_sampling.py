"""Negative sampling (Mikolov et al. 2013b, "Distributed Representations of Words and Phrases and their
Compositionality", Sect. 2.2): instead of the softmax over the vocabulary, each observed pair (w_I, w_O) is
told apart from k noise words drawn from P_n(w):

    log σ(v'_{w_O}ᵀ v_{w_I}) + Σ_{i=1}^{k} E_{w_i ∼ P_n(w)} [log σ(−v'_{w_i}ᵀ v_{w_I})]          (Eq. 4)

maximised; the loss here is its negation, *summed* over the pairs of a batch (not averaged): plain SGD on the
sum moves each pair's vectors by α·∇ as word2vec.c's one-pair-at-a-time updates do, so the paper's learning
rate (0.025 for skip-gram, 0.05 for CBOW) means what it says. A noise word equal to the observed one is not
counted (word2vec.c skips it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def negative_sampling_loss(scores: torch.Tensor, noise_mask: torch.Tensor | None = None) -> torch.Tensor:
    """scores (P, 1 + k): v'_{w_O}ᵀ v_{w_I} of each pair in column 0, then v'_{w_i}ᵀ v_{w_I} of its k noise
    words; noise_mask (P, k), False for a noise word to leave out. The summed −Eq. 4."""
    observed = F.logsigmoid(scores[:, 0])  # log σ(v'_{w_O}ᵀ v_{w_I}): (P,)
    noise = F.logsigmoid(-scores[:, 1:])  # log σ(−v'_{w_i}ᵀ v_{w_I}): (P, k)
    if noise_mask is not None:
        noise = noise * noise_mask
    return -(observed.sum() + noise.sum())
