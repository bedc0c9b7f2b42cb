"""One mask convention for every attention in seq2bert, built here and nowhere else.

A mask is a boolean tensor that is True where a query may attend to a key (False: the weight is exactly 0),
broadcastable to the attention scores (B, h, T_q, T_k). This is the convention of torch's
``scaled_dot_product_attention`` and of the (B, S) ``attention_mask`` that tokenizers return (True / 1 on
real tokens), so a padding mask is that attention mask with two axes added. ``None`` means "attend
everywhere".

Vaswani et al. (2017), Sect. 3.2.3: the decoder's self-attention must not see later positions ("we mask
out (setting to −∞) all values in the input of the softmax which correspond to illegal connections");
padding is masked the same way.
"""

from __future__ import annotations

import torch


def padding_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(B, S) with 1 / True on real tokens → (B, 1, 1, S) bool: every query may attend to the real keys."""
    if attention_mask is None:
        return None
    return attention_mask.bool()[:, None, None, :]


def causal_mask(length: int, past: int = 0, device: torch.device | str | None = None) -> torch.Tensor:
    """(length, past + length) bool: query i (at position past + i) may attend to keys 0 … past + i.

    ``past`` keys come from a cache of earlier steps (incremental decoding), all of them visible."""
    q = torch.arange(past, past + length, device=device)[:, None]  # (T_q, 1)
    k = torch.arange(past + length, device=device)[None, :]  # (1, T_k)
    return k <= q


def is_causal(mask: torch.Tensor | None, length: int) -> bool:
    """Whether ``mask`` is exactly ``causal_mask(length)`` (no cached keys, no padding): torch's fused attention
    takes that one as ``is_causal`` and skips the blocks above the diagonal instead of masking them."""
    return (
        mask is not None
        and mask.shape == (length, length)
        and mask.dtype == torch.bool
        and torch.equal(mask, causal_mask(length, device=mask.device))
    )


def combine(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """The logical AND of broadcastable masks, skipping ``None``; ``None`` when every mask is ``None``."""
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    return out
