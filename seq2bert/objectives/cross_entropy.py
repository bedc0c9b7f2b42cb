"""Token-level cross-entropy for sequence models, with optional label smoothing (Szegedy et al. 2016).

Label smoothing with ε spreads ε of the target mass uniformly over the vocabulary: the loss becomes
(1 − ε)·CE(y) + ε·mean_v(−log p_v). The Transformer uses ε_ls = 0.1 (Vaswani et al. 2017, Sect. 5.4).

``linear_cross_entropy`` is the output layer and the loss in one, for a language model whose vocabulary is
wide (GPT-2's 50,257): the same loss and gradients without the (N, V) tensors autograd keeps around logits.
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


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    label_smoothing: float = 0.0,
    chunk_elements: int = 1 << 20,
) -> torch.Tensor:
    """``sequence_cross_entropy(F.linear(hidden, weight, bias), labels, label_smoothing=ε)`` — the output layer
    and its loss in one — without the full-precision (N, V) tensors around the logits (N = rows, V = vocabulary).

    hidden (…, d), weight (V, d), bias (V,) or None, labels (…) with IGNORE_INDEX where ignored → the mean over
    the other rows (fp32). The logits z = hidden Wᵀ + b are one matmul (in autocast's dtype when it is on); the
    softmax runs on chunks of rows (about ``chunk_elements`` logits each, small enough to stay in cache), and
    where autograd records, the gradient of the mean with respect to the logits, (softmax(z) − q) / N with q
    the target distribution ((1 − ε)·onehot(y) + ε/V), is written back over each chunk's logits; the gradients
    of hidden, W and b follow from two matmuls and a sum in the forward and are scaled in the backward.
    Autograd's way instead keeps the logits, a full-precision copy of them (the cast, and the shift of a causal
    LM), their log-softmax, and zero-filled (N, V) gradients for each of those — about a dozen passes over
    (N, V) where this makes four or five. Equal to the plain loss and its gradients up to rounding
    (tests/objectives/test_cross_entropy.py)."""
    hidden = hidden.reshape(-1, hidden.size(-1))  # (N, d)
    labels = labels.reshape(-1)  # (N,)
    grads = hidden.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    if torch.is_grad_enabled() and grads:
        return _LinearCrossEntropy.apply(hidden, weight, bias, labels, label_smoothing, chunk_elements)
    return _linear_cross_entropy(
        hidden, weight, bias, labels, label_smoothing, chunk_elements, with_grad=False
    )[0]


def _linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    eps: float,
    chunk_elements: int,
    *,
    with_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """The mean loss and, ``with_grad``, its gradients with respect to hidden (N, d), weight (V, d) and bias.

    With label smoothing ε a row's loss is (1 − ε)·(−log p_y) + ε·mean_v(−log p_v), and
    mean_v(−log p_v) = logsumexp(z) − mean_v(z_v)."""
    N, V = hidden.size(0), weight.size(0)
    valid = labels.ne(IGNORE_INDEX)  # (N,)
    count = valid.sum()
    targets = labels.masked_fill(~valid, 0)[:, None]  # (N, 1) ignored rows point anywhere: their scale is 0
    scale = valid.float() / count.clamp(min=1)  # (N,) 1/N on the rows that count, 0 on the others
    z = F.linear(hidden, weight, bias)  # (N, V) the logits, in autocast's dtype
    total = torch.zeros((), dtype=torch.float32, device=hidden.device)
    rows = max(1, chunk_elements // V)
    for start in range(0, N, rows):
        chunk = slice(start, min(start + rows, N))
        zc, y = z[chunk], targets[chunk]
        p = torch.softmax(zc, dim=-1, dtype=torch.float32)  # (r, V)
        p_y = p.gather(1, y).squeeze(1)  # (r,)
        nll = -p_y.log()
        tiny = p_y < 1e-30  # −log p_y from the logits where p_y underflows (fp32 has no room below)
        if bool(tiny.any()):
            exact = zc[tiny].float().logsumexp(-1) - zc[tiny].float().gather(1, y[tiny]).squeeze(1)
            nll = nll.masked_scatter(tiny, exact)
        if eps:  # the uniform part of the target: logsumexp(z) − mean(z) = −log p_y + z_y − mean(z)
            uniform = nll + zc.gather(1, y).squeeze(1).float() - zc.mean(-1, dtype=torch.float32)
            nll = (1 - eps) * nll + eps * uniform
        total = total + (nll * valid[chunk]).sum()
        if with_grad:  # ∂(mean loss)/∂z = (softmax(z) − q) · scale, over the chunk's logits
            if eps:
                p.sub_(eps / V)
            p.scatter_add_(1, y, torch.full_like(p_y, eps - 1.0)[:, None])
            torch.mul(p, scale[chunk, None], out=zc)
    loss = total / count  # NaN when every label is ignored, as F.cross_entropy
    if not with_grad:
        return loss, None, None, None
    grad_hidden = (z @ weight).to(hidden.dtype)  # (N, d) = ∂L/∂z · W
    grad_weight = (z.t() @ hidden).to(weight.dtype)  # (V, d) = (∂L/∂z)ᵀ · hidden
    grad_bias = None if bias is None else z.sum(0, dtype=torch.float32).to(bias.dtype)  # (V,)
    return loss, grad_hidden, grad_weight, grad_bias


class _LinearCrossEntropy(torch.autograd.Function):
    """linear_cross_entropy under autograd: the gradients come from the forward, scaled by the loss's."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, labels, eps, chunk_elements):
        loss, *grads = _linear_cross_entropy(
            hidden, weight, bias, labels, eps, chunk_elements, with_grad=True
        )
        ctx.grads = grads
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grads = ctx.grads
        del ctx.grads
        if not bool(grad_loss == 1):
            grads = [None if g is None else g * grad_loss for g in grads]
        grad_hidden, grad_weight, grad_bias = grads
        return grad_hidden, grad_weight, grad_bias, None, None, None
