"""Greedy decoding for any seq2bert encoder-decoder.

At each step the most probable next token is taken: ŷ_t = argmax_y p(y | x, ŷ_<t). A hypothesis ends at
[EOS]; decoding stops when every hypothesis has ended or after ``max_len`` tokens.

The model must offer ``encode(input_ids, attention_mask) -> state`` and
``decode_step(tokens, state) -> (logits, state)`` (see models/seq2seq/model.py).
"""

from __future__ import annotations

import torch


@torch.no_grad()
def greedy_decode(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    bos_token_id: int,
    eos_token_id: int,
    pad_token_id: int = 0,
    max_len: int = 100,
    force_eos: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode a batch greedily.

    input_ids, attention_mask: (B, S) → (tokens (B, T) without [BOS], padded with pad_token_id after [EOS]
    (which is kept), and the sum of log-probabilities of each hypothesis (B,)). ``force_eos``: a hypothesis
    still open at ``max_len`` takes [EOS] as its last token (transformers' forced_eos_token_id).
    """
    B = input_ids.size(0)
    state = model.encode(input_ids, attention_mask)
    tokens = torch.full((B,), bos_token_id, dtype=torch.long, device=input_ids.device)  # (B,)
    finished = torch.zeros(B, dtype=torch.bool, device=input_ids.device)  # (B,)
    scores = torch.zeros(B, device=input_ids.device)  # (B,)
    out = []
    for t in range(max_len):
        logits, state = model.decode_step(tokens, state)  # (B, V)
        log_probs = logits.float().log_softmax(dim=-1)  # (B, V)
        if force_eos and t == max_len - 1:
            log_probs = force_token(log_probs, eos_token_id)
        best, tokens = log_probs.max(dim=-1)  # (B,), (B,)
        scores = scores + torch.where(finished, torch.zeros_like(best), best)
        tokens = tokens.masked_fill(finished, pad_token_id)
        out.append(tokens)
        finished = finished | tokens.eq(eos_token_id)
        if bool(finished.all()):
            break
    return torch.stack(out, dim=1), scores  # (B, T), (B,)


def force_token(log_probs: torch.Tensor, token: int) -> torch.Tensor:
    """Every row must continue with ``token``: its log-probability becomes 0 (certain), the others −∞, as
    transformers' ForcedEOSTokenLogitsProcessor does. (N, V) → (N, V)."""
    forced = torch.full_like(log_probs, float("-inf"))
    forced[:, token] = 0.0
    return forced


def strip_special(ids: list[int], *, eos_token_id: int, pad_token_id: int) -> list[int]:
    """Cut a decoded row at its first [EOS] and drop padding."""
    cut = []
    for i in ids:
        if i == eos_token_id:
            break
        if i != pad_token_id:
            cut.append(i)
    return cut
