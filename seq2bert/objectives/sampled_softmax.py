"""The sampled softmax (Jean, Cho, Memisevic & Bengio 2015), how the big language models of Jozefowicz et
al. (2016) and ELMo's biLM (bilm-tf: 8,192 samples a batch) train a softmax over hundreds of thousands of
words: the cross-entropy of each target against itself and S words sampled for the whole batch, instead of
against all V words.

Words are drawn from a log-uniform (Zipfian) proposal over ids sorted by frequency, as TensorFlow's
``sampled_softmax_loss`` does::

    Q(k) = (log(k + 2) − log(k + 1)) / log(V + 1),     k = 0 … V − 1

and every logit is corrected by the log of its expected count under S draws with replacement,
z_k − log(S·Q(k)), so that the sampled loss estimates the full one; a sampled word that is the target
itself (an "accidental hit") is left out. The same value as the full cross-entropy when S covers the
vocabulary it is not: evaluation uses the full softmax.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def log_uniform_log_q(ids: torch.Tensor, vocab_size: int, num_samples: int) -> torch.Tensor:
    """log(S·Q(k)) of ids k: the log expected count of k in S draws."""
    k = ids.double()
    q = (torch.log(k + 2) - torch.log(k + 1)) / math.log(vocab_size + 1)
    return torch.log(num_samples * q).float()


def sample_log_uniform(vocab_size: int, num_samples: int, device=None) -> torch.Tensor:
    """S ids drawn with replacement from Q (the global torch generator: a resumed run draws the same)."""
    u = torch.rand(num_samples, dtype=torch.float64, device=device)
    ids = torch.exp(u * math.log(vocab_size + 1)).long() - 1  # the inverse of Q's distribution function
    return ids.clamp_(0, vocab_size - 1)


def sampled_softmax_loss(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, labels: torch.Tensor, num_samples: int
) -> torch.Tensor:
    """Mean sampled cross-entropy over the positions whose label is not IGNORE_INDEX.

    hidden (…, P), weight (V, P), bias (V,), labels (…) in 0 … V − 1."""
    V = weight.size(0)
    h = hidden.reshape(-1, hidden.size(-1))  # (N, P)
    y = labels.reshape(-1)  # (N,)
    keep = y.ne(IGNORE_INDEX)
    h, y = h[keep], y[keep]
    sampled = sample_log_uniform(V, num_samples, h.device)  # (S,)
    true_logits = (h * weight[y]).sum(-1).float() + bias[y].float() - log_uniform_log_q(y, V, num_samples)
    sampled_logits = (h @ weight[sampled].T).float() + bias[sampled].float()  # (N, S)
    sampled_logits = sampled_logits - log_uniform_log_q(sampled, V, num_samples)
    sampled_logits = sampled_logits.masked_fill(
        sampled[None, :] == y[:, None], float("-inf")
    )  # accidental hits
    logits = torch.cat([true_logits[:, None], sampled_logits], dim=1)  # (N, 1 + S): the target first
    return F.cross_entropy(logits, torch.zeros_like(y))
