"""Replaced token detection (Clark et al. 2020, ELECTRA, Sect. 2, Figure 2).

A small generator G is trained as a masked LM on the masked positions m (L_MLM, objectives/masked_lm.py).
Its samples replace the masked tokens, and the discriminator D learns, at every position, whether the
token it sees is the original:

    x̂_i ~ p_G(x_i | x^masked)                    for i ∈ m   (sampled; no gradient flows through it)
    x^corrupt = REPLACE(x, m, x̂)
    L_Disc = E[ Σ_t −1(x_t^corrupt = x_t) log D(x^corrupt, t) − 1(x_t^corrupt ≠ x_t) log(1 − D(x^corrupt, t)) ]
    min  L_MLM(x, θ_G) + λ L_Disc(x, θ_D)        λ = 50                                        Sect. 2

Here D(x, t) is written as the probability of "replaced" (label 1), as the released code and transformers
do; the paper's D is the probability of "original" — the same loss with the labels flipped. "If the
generator happens to generate the correct token, that token is considered 'real' instead of 'fake'": a
sampled token equal to the original is labelled 0. "We don't back-propagate the discriminator loss through
the generator (indeed, we can't because of the sampling step)": the sample is drawn from detached logits.
L_Disc is the mean binary cross-entropy over every real (not padding) position.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seq2bert.objectives.cross_entropy import IGNORE_INDEX

LAMBDA = 50.0  # the discriminator loss's weight λ (Sect. 2; Appendix A)


@torch.no_grad()
def sample_replacements(
    logits: torch.Tensor, *, generator: torch.Generator | None = None, temperature: float = 1.0
) -> torch.Tensor:
    """x̂ ~ softmax(logits / temperature): logits (N, V) at the N masked positions → token ids (N,). Drawn
    with ``generator`` (seeded: reproducible); no gradient.

    Inverse transform sampling: one uniform u per position, x̂ the first token whose cumulative probability
    exceeds u·(the row's total). One pass over the V probabilities and N random numbers, where
    torch.multinomial draws V exponentials per row (a tenth of ELECTRA's step at V = 30,522)."""
    if logits.shape[0] == 0:
        return torch.empty(0, dtype=torch.long, device=logits.device)
    scores = logits.detach().float()
    if temperature != 1.0:
        scores = scores / temperature
    cdf = torch.softmax(scores, dim=-1).cumsum_(dim=-1)  # (N, V)
    u = torch.rand(cdf.shape[0], 1, generator=generator, device=cdf.device, dtype=cdf.dtype) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp_(max=cdf.shape[-1] - 1)  # (N,)


def corrupt(
    original: torch.Tensor, masked: torch.Tensor, sampled: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """x^corrupt = REPLACE(x, m, x̂) and the discriminator's labels: original (B, T) ids, masked (B, T) bool,
    sampled (N,) the replacements at the N masked positions in row-major order → (corrupted (B, T),
    labels (B, T) long: 1 where the token differs from the original, 0 elsewhere — a sample equal to the
    original included)."""
    corrupted = original.clone()
    corrupted[masked] = sampled.to(original.dtype)
    return corrupted, corrupted.ne(original).long()


def original_tokens(input_ids: torch.Tensor, mlm_labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x and m from the generator's masked input and MLM labels (B, T) (the original token where masked,
    IGNORE_INDEX elsewhere) → (original ids (B, T), masked (B, T) bool)."""
    masked = mlm_labels.ne(IGNORE_INDEX)
    return torch.where(masked, mlm_labels, input_ids), masked


def replaced_token_detection_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    balanced: bool = False,
) -> torch.Tensor:
    """L_Disc: logits (B, T) the scores of "replaced", labels (B, T) 0/1, attention_mask (B, T) 1 on real
    tokens (None: every position) → the mean binary cross-entropy over the real positions. fp32.

    ``balanced``: each class weighted by the inverse of its share of the batch's N positions, N / (2 n_c)
    (replaced and original then count alike; the paper's loss weights every position 1)."""
    if attention_mask is not None:
        real = attention_mask.bool()
        logits, labels = logits[real], labels[real]  # (N,)
    labels = labels.float()
    weight = None
    if balanced:
        replaced = labels.sum().clamp(min=1.0)
        original = (labels.numel() - labels.sum()).clamp(min=1.0)
        weight = torch.where(labels.bool(), labels.numel() / (2 * replaced), labels.numel() / (2 * original))
    return F.binary_cross_entropy_with_logits(logits.float(), labels, weight=weight)


def electra_loss(mlm_loss: torch.Tensor, disc_loss: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """L_MLM + λ L_Disc."""
    return mlm_loss + lam * disc_loss
