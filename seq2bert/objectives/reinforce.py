"""REINFORCE for a stochastic choice inside the network (Williams 1992), as Xu et al. (2015, Sect. 4.1) train
hard attention: the locations s are sampled, and the objective L_s = Σ_s p(s | a) log p(y | s, a) — a lower
bound of log p(y | a) — has the gradient estimated from the samples s̃ as

    ∂L_s/∂W ≈ ∂log p(y | s̃, a)/∂W + λ_r (log p(y | s̃, a) − b) ∂log p(s̃ | a)/∂W + λ_e ∂H[s̃]/∂W      Eq. 12
    b_k = 0.9 b_{k−1} + 0.1 log p(y | s̃_k, a)                                       the moving-average baseline

The first term is the usual likelihood (the model's cross-entropy); ``reinforce_loss`` is the negative of the
other two, per target token as that cross-entropy is: for a batch with per-token negative log-likelihoods
nll (B, T), the sampled locations' log-probabilities log p(s̃_t) (B, T) and the attention entropies H_t (B, T),

    R_b   = −Σ_t nll_bt                                          log p(y_b | s̃_b, a), no gradient
    loss  = −(λ_r Σ_b (R_b − b) Σ_t log p(s̃_bt) + λ_e Σ_bt H_bt) / (the batch's target tokens)

then b moves towards the batch's mean R (b before the update is the one subtracted). The term's value is 0
(x − x.detach(): the loss a run logs stays the cross-entropy, which the surrogate's value would blur); its
gradient is Eq. 12's. Departure: b starts
at the first batch's mean reward, not 0 (a baseline of 0 against rewards of −50 makes every first sample
look bad).

``per_token`` (not the paper's): each location is credited with its own token's log-likelihood rather than
the whole sequence's, against a baseline of the mean token's,

    r_bt  = −nll_bt                                              log p(y_bt | s̃_bt, …), no gradient
    loss  = −(λ_r Σ_bt (r_bt − b) log p(s̃_bt) + λ_e Σ_bt H_bt) / (the batch's target tokens)

Eq. 12's reward puts one number on all T of a sequence's locations, and a single b cannot follow it: R_b
falls with the sequence's length (a sum of T log-likelihoods) far more than it moves with its alignments, so most of the signal a location gets is
its sequence's length (the explanation docs/results.md's ablation supports; at a λ_r small enough the noise
stops harming but teaches the alignment little). The token's reward ignores what a location does to later tokens through the
decoder's state: a biased estimate of lower variance.
"""

from __future__ import annotations

import torch


def reinforce_loss(
    nll: torch.Tensor,
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    mask: torch.Tensor,
    baseline: torch.Tensor,
    *,
    weight: float = 1.0,
    entropy_weight: float = 0.0,
    decay: float = 0.9,
    per_token: bool = False,
) -> torch.Tensor:
    """The REINFORCE and entropy terms (module docstring). nll, log_prob, entropy, mask (B, T) (mask: 1 on
    target tokens); ``baseline``: a tensor of 2 numbers [b, batches seen so far], updated in place (a
    model's buffer, so that a checkpoint keeps it); ``per_token``: each token's reward, not its sequence's."""
    m = mask.float()
    tokens = m.sum().clamp(min=1)
    if per_token:
        reward = -nll.detach().float()  # r_bt = log p(y_bt | s̃_bt, …): (B, T)
        mean = (reward * m).sum() / tokens
    else:
        reward = -(nll.detach().float() * m).sum(-1, keepdim=True)  # R_b = log p(y_b | s̃_b, a): (B, 1)
        mean = reward.mean()
    with torch.no_grad():
        if baseline[1] == 0:
            baseline[0] = mean
        b = baseline[0].clone()
        baseline[0] = decay * baseline[0] + (1 - decay) * mean
        baseline[1] += 1
    score = ((reward - b) * log_prob.float() * m).sum()  # Σ_b (R_b − b) Σ_t log p(s̃_bt), or Σ_bt (r_bt − b) …
    term = -(weight * score + entropy_weight * (entropy.float() * m).sum()) / tokens
    return term - term.detach()  # the value 0, the gradient of ``term``
