"""One entry point for decoding a batch: greedy (one beam) or beam search, returning clean token ids."""

from __future__ import annotations

import math

import torch

from seq2bert.decoding.beam import beam_search
from seq2bert.decoding.greedy import greedy_decode, strip_special


@torch.no_grad()
def generate(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    bos_token_id: int,
    eos_token_id: int,
    pad_token_id: int,
    num_beams: int = 1,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    length_penalty: float = 1.0,
    no_repeat_ngram_size: int = 0,
) -> list[list[int]]:
    """The best hypothesis of each input, without [BOS] / [EOS] / padding.

    input_ids, attention_mask: (B, S). Each input gets at most ⌊max_len_a · |x| + max_len_b⌋ tokens ([EOS]
    included), |x| its number of real source tokens.
    """
    lengths = attention_mask.sum(1).tolist()
    max_lens = [math.floor(max_len_a * n + max_len_b) for n in lengths]
    if num_beams == 1 and no_repeat_ngram_size == 0:
        max_len = max(max_lens)
        tokens, _ = greedy_decode(
            model,
            input_ids,
            attention_mask,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
            max_len=max_len,
        )
        # greedy rows are independent: cutting each at its own maximum equals decoding it alone
        rows = [row[:m] for row, m in zip(tokens.tolist(), max_lens, strict=True)]
    else:
        out = beam_search(
            model,
            input_ids,
            attention_mask,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
            num_beams=num_beams,
            max_len_a=max_len_a,
            max_len_b=max_len_b,
            length_penalty=length_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size,
        )
        rows = [hyps[0].tokens if hyps else [] for hyps in out.hypotheses]
    return [strip_special(r, eos_token_id=eos_token_id, pad_token_id=pad_token_id) for r in rows]


@torch.no_grad()
def generate_sequences(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    decoder_start_token_id: int,
    eos_token_id: int,
    pad_token_id: int,
    num_beams: int = 1,
    max_new_tokens: int = 64,
    length_penalty: float = 1.0,
    early_stopping: bool = False,
    num_return_sequences: int = 1,
    force_eos: bool = True,
) -> torch.Tensor:
    """Token ids the way transformers' ``generate`` returns them for an encoder-decoder: (B · R, 1 + L), each
    row [decoder start] y_1 … [EOS] then padding, L the longest hypothesis, R = ``num_return_sequences``.

    Greedy for one beam, else beam search with transformers' length penalty (score / |Y|^length_penalty);
    at most ``max_new_tokens`` tokens, the last of them [EOS] when ``force_eos`` (transformers'
    forced_eos_token_id, which Marian configs set)."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    special = dict(bos_token_id=decoder_start_token_id, eos_token_id=eos_token_id, pad_token_id=pad_token_id)
    if num_beams == 1 and num_return_sequences == 1:
        tokens, _ = greedy_decode(
            model, input_ids, attention_mask, max_len=max_new_tokens, force_eos=force_eos, **special
        )
        rows = tokens.tolist()
    else:
        out = beam_search(
            model,
            input_ids,
            attention_mask,
            num_beams=num_beams,
            max_len_a=0.0,
            max_len_b=max_new_tokens,
            length_penalty=length_penalty,
            length_penalty_form="power",
            early_stopping=early_stopping,
            num_return_sequences=num_return_sequences,
            force_eos=force_eos,
            **special,
        )
        rows = [h.tokens for hyps in out.hypotheses for h in hyps]
    width = max(len(r) for r in rows)
    padded = [[decoder_start_token_id, *r, *[pad_token_id] * (width - len(r))] for r in rows]
    return torch.tensor(padded, dtype=torch.long, device=input_ids.device)
