"""Greedy decoding over the incremental-decoder protocol (seq2bert/decoding/protocol.py).

At each step the most probable next token is taken: ŷ_t = argmax_y p(y | x, ŷ_<t), after the rules of
rules.py (min_new_tokens, no-repeat n-grams, the forced last token). A row ends at [EOS] or at its maximum
length and is then fed [PAD]; decoding stops when every row has ended. Among equal log-probabilities the
lower token id is taken (``torch.max`` returns the first maximal index).

With ``do_sample`` the token is drawn instead (temperature, top-k, nucleus: sampling.py). A repetition
penalty applies to the logits, before the log-softmax (rules.py). A ``stopping`` criterion ends a row as
[EOS] does, and a ``streamer`` sees each step's tokens as they are chosen (stopping.py).

Without sampling, this is beam search with one beam (beam.py gives the same hypotheses with ``num_beams=1``,
tests/decoding/test_generation.py), without the bookkeeping of K beams: the fast path of ``generate``.
"""

from __future__ import annotations

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.protocol import IncrementalDecoder, begin
from seq2bert.decoding.rules import Hypothesis, apply_rules, hypothesis, penalize_repetitions
from seq2bert.decoding.sampling import sample
from seq2bert.decoding.stopping import StoppingCriterion, Streamer


@torch.no_grad()
def greedy_search(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
    *,
    stopping: StoppingCriterion | None = None,
    streamer: Streamer | None = None,
) -> list[list[Hypothesis]]:
    """input_ids, attention_mask (B, S) → one hypothesis per input: its new tokens up to [EOS] (included), the
    token that met ``stopping``, or its maximum length, and their log-probability."""
    start = begin(model, input_ids, attention_mask, config)
    state, tokens = start.state, start.tokens
    device = input_ids.device
    max_lengths = torch.tensor(start.max_lengths, device=device)  # (B,)
    finished = max_lengths.eq(0)  # (B,) rows that have ended
    lengths = torch.zeros_like(max_lengths)  # (B,) tokens taken by each row until it ended
    log_prob = torch.zeros(len(start.max_lengths), device=device)  # (B,)
    limits = set(start.max_lengths)
    generator = None
    if config.do_sample and config.seed is not None:
        generator = torch.Generator(device=device).manual_seed(config.seed)
    history, history_mask = start.prompt, start.prompt_mask  # (B, P + t): the prompt, then the new tokens
    t = 0
    while not bool(finished.all()):
        logits, state = model.step(tokens, state)  # (B, V)
        if config.repetition_penalty != 1.0:  # on the logits, as transformers' greedy search and sampling
            logits = penalize_repetitions(logits.float(), history, history_mask, config.repetition_penalty)
        log_probs = logits.log_softmax(dim=-1, dtype=torch.float32)  # (B, V) log p(y | x, ŷ_≤t)
        # the rows whose next token is their last (only the forced token reads them)
        last = max_lengths.eq(t + 1) if config.forced_eos_token_id is not None and t + 1 in limits else None
        log_probs = apply_rules(log_probs, t, history, last, config)
        if config.do_sample:  # y_t ~ p (tempered, filtered), scored by its log-probability before both
            tokens = sample(log_probs, config.temperature, config.top_k, config.top_p, generator)
            best = log_probs.gather(1, tokens[:, None]).squeeze(1)
        else:
            best, tokens = log_probs.max(dim=-1)  # (B,), (B,)
        log_prob = log_prob + torch.where(finished, torch.zeros_like(best), best)
        lengths = lengths + (~finished).long()
        tokens = tokens.masked_fill(finished, config.pad_token_id)  # ended rows are fed [PAD]
        history = torch.cat([history, tokens[:, None]], dim=1)
        history_mask = torch.cat([history_mask, torch.ones_like(tokens, dtype=torch.bool)[:, None]], dim=1)
        if streamer is not None:
            streamer(tokens)
        t += 1
        ended = max_lengths.eq(t)
        if config.eos_token_id is not None:
            ended = ended | tokens.eq(config.eos_token_id)
        if stopping is not None:
            ended = ended | (stopping(history) & ~finished)
        finished = finished | ended
    new_tokens = history[:, start.prompt.size(1) :].tolist()  # (B, t)
    return [
        [hypothesis(row[:n], s, config)]
        for row, n, s in zip(new_tokens, lengths.tolist(), log_prob.tolist(), strict=True)
    ]
