"""Permutation language modelling with partial prediction (Yang et al. 2019, XLNet, Sect. 2.2–2.3).

For a text x of length T and Z_T the set of the permutations of its positions 1 … T,

    max_θ  E_{z∼Z_T} [ Σ_{t=1}^{T} log p_θ(x_{z_t} | x_{z<t}) ]                              Eq. 3

— an autoregressive LM over every factorisation order, so that in expectation each token sees every other
from both sides. Only the last tokens of an order are predicted (partial prediction): with a cut c,

    max_θ  E_{z∼Z_T} [ log p_θ(x_{z>c} | x_{z≤c}) ] = E_z [ Σ_{t=c+1}^{|z|} log p_θ(x_{z_t} | x_{z<t}) ]   Eq. 5
    with K ≈ |z| / (|z| − c)

"so that about 1/K tokens are selected for prediction" (K = 6 in the paper's pretraining, Sect. 3.1). The order
is never applied to the input: every token keeps its position, and attention masks realise z — the
``perm_mask`` (B, T, T) of transformers' XLNet, 1 where query i may NOT read key j:

    the content stream  h_{z_t} reads x_{z≤t} (itself included: the model adds the diagonal back),
    the query stream    g_{z_t} reads x_{z<t} and the position z_t, not the token it predicts (Eq. 4),

and ``target_mapping`` (B, P, T) one-hot picks the P predicted positions for the query stream.

The first c tokens of the order (the "context", never predicted) see each other both ways and none of the
predicted ones: their order among themselves does not change the likelihood of the predicted tokens, which
read them all — the released implementation's choice, which this follows. The predicted tokens come after
them, in a uniformly random order. So drawing z and cutting at c is: choose the predicted tokens (a uniform
subset of ⌈n/K⌉ of the n predictable ones), then their order (uniform). Functional tokens (<sep>, <cls>)
and padding are never predicted (not "predictable"); the first two are context everyone reads.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from seq2bert.objectives.cross_entropy import IGNORE_INDEX

K = 6.0  # the partial prediction constant (Sect. 3.1)


def predicted_tokens(predictable: np.ndarray, k: float, rng: np.random.Generator) -> np.ndarray:
    """The positions predicted in one text, in their factorisation order: the last ⌈n/K⌉ of a uniform
    permutation of the n ``predictable`` positions (one index array; K ≥ 1; none when n = 0)."""
    positions = np.flatnonzero(predictable)
    count = min(len(positions), math.ceil(len(positions) / k))
    return rng.permutation(positions)[:count]


def permutation_inputs(ids: torch.Tensor, orders: list[np.ndarray]) -> dict[str, torch.Tensor]:
    """For the texts ``ids`` (B, T) and each one's predicted positions in order (``predicted_tokens``): the
    perm_mask (B, T, T) (1: query i may not read key j), the target_mapping (B, P, T) and the labels (B, P)
    (−100 past a row's own count), P the most any row predicts."""
    B, T = ids.shape
    P = max(1, max(len(o) for o in orders))
    rank = torch.zeros(B, T, dtype=torch.long)  # 0: context; 1 … n_b: the predicted, in order
    target_mapping = torch.zeros(B, P, T)
    labels = torch.full((B, P), IGNORE_INDEX, dtype=torch.long)
    for b, order in enumerate(orders):
        where = torch.from_numpy(np.asarray(order, dtype=np.int64))
        rank[b, where] = torch.arange(1, len(order) + 1)
        target_mapping[b, torch.arange(len(order)), where] = 1.0
        labels[b, : len(order)] = ids[b, where]
    predicted = rank > 0  # (B, T)
    # key j hidden from query i when j is predicted no earlier than i in the order (context i: rank 0, so
    # every predicted token is hidden from it)
    perm_mask = predicted[:, None, :] & (rank[:, None, :] >= rank[:, :, None])  # (B, T_query, T_key)
    return {"perm_mask": perm_mask.float(), "target_mapping": target_mapping, "labels": labels}
