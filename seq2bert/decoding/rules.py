"""What the searches (greedy.py, beam.py, contrastive.py) do to the next-token log-probabilities before they
choose, and how they score what they find. The rules are a list of processors (``RULES``), applied in order.

At step t (t new tokens so far in every live row), in transformers' order of its logits processors:

    repetition_penalty      θ ≠ 1: each token y already in the row — its prompt (padding excluded) and its new
                            tokens — gets s(y)/θ if s(y) > 0, else s(y)·θ (Keskar et al. 2019, CTRL, Sect. 4.1;
                            transformers' RepetitionPenaltyLogitsProcessor): θ > 1 makes a repeat less likely
    min_new_tokens          t < min_new_tokens → log p([EOS]) = −∞
    no_repeat_ngram_size    a token completing an n-gram already in the row → −∞ (Paulus et al. 2018); the row is
                            the decoder prompt ([decoder start], or a decoder-only model's prompt) and the new
                            tokens, as transformers takes it
    bad_words_ids           the last token of a banned sequence whose other tokens end the row → −∞ (a
                            one-token sequence is never generated: Marian bans [PAD])
    forced_eos_token_id     at the row's last step (t + 1 = its maximum length) that token has log-probability 0
                            and every other −∞ (transformers' ForcedEOSTokenLogitsProcessor): it overrides the
                            two rules above

The −∞ are set after the softmax, without renormalising the other tokens, so a hypothesis' ``log_prob`` stays
the model's log-probability of its tokens (a forced token adds 0).

The repetition penalty changes values rather than banning tokens, so where it applies matters; it applies
where transformers applies it. Greedy decoding and sampling (greedy.py) penalise the logits s = z, before
the log-softmax, which then renormalises: the token is chosen (or drawn) from softmax(penalised z).
Beam search (beam.py) penalises the log-probabilities s = log p, after the log-softmax and without
renormalising, as transformers' ``_beam_search`` runs its processors on them: every log p is negative, so a
repeat's log p is multiplied by θ and the beam scores add up the penalised values. Either way a hypothesis'
``log_prob`` is then that of the distribution searched, not the model's own. The −∞ rules commute with it.

A hypothesis Y is ranked by score = log P(Y | x) / lp(|Y|), |Y| its new tokens ([EOS] included):

    "power":  lp(Y) = |Y|^α                  transformers: ``(cur_len + 1 − decoder_prompt_len) ** length_penalty``
    "wu":     lp(Y) = ((5 + |Y|) / 6)^α      Wu et al. (2016), Eq. 14 (GNMT; its coverage penalty is not used)

An empty hypothesis (maximum length 0) gets lp = 1 in the "power" form, where 0^α would divide by zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from seq2bert.decoding.config import GenerationConfig


@dataclass
class Hypothesis:
    """One complete hypothesis of one input."""

    # the new tokens, decoder prompt excluded; they end with [EOS] unless cut at the maximum length
    tokens: list[int]
    score: float  # log_prob / lp(|tokens|): the length-penalised score hypotheses are ranked by
    log_prob: float  # the sum of the tokens' log-probabilities


def length_penalty(length: int, alpha: float, form: str) -> float:
    """lp(Y) for a hypothesis of ``length`` new tokens ([EOS] included)."""
    if form == "wu":
        return ((5 + length) / 6) ** alpha  # Wu et al. (2016), Eq. 14: (5 + |Y|)^α / (5 + 1)^α
    return max(length, 1) ** alpha  # transformers: |Y|^α


def hypothesis(tokens: list[int], log_prob: float, config: GenerationConfig) -> Hypothesis:
    """A finished hypothesis, scored by ``log_prob / lp(|tokens|)``."""
    lp = length_penalty(len(tokens), config.length_penalty, config.length_penalty_form)
    return Hypothesis(tokens, log_prob / lp, log_prob)


# A rule: (log_probs (N, V), t, history (N, P + t), last (N,) bool or None, config) → log_probs (N, V), in the
# terms of ``apply_rules``; one that does not apply returns log_probs as they are.
Rule = Callable[[torch.Tensor, int, torch.Tensor, torch.Tensor | None, GenerationConfig], torch.Tensor]


def min_new_tokens(log_probs, t, history, last, config: GenerationConfig) -> torch.Tensor:
    """t < min_new_tokens → log p([EOS]) = −∞."""
    if t < config.min_new_tokens and config.eos_token_id is not None:
        log_probs[:, config.eos_token_id] = -math.inf
    return log_probs


def no_repeat_ngrams(log_probs, t, history, last, config: GenerationConfig) -> torch.Tensor:
    """A token completing an n-gram already in the row → −∞ (Paulus et al. 2018)."""
    n = config.no_repeat_ngram_size
    if n and history.size(1) >= n:
        log_probs = log_probs.masked_fill(repeated_ngrams(history, n, log_probs.size(-1)), -math.inf)
    return log_probs


def bad_words(log_probs, t, history, last, config: GenerationConfig) -> torch.Tensor:
    """The last token of a banned sequence whose other tokens end the row → −∞."""
    for word in config.bad_words_ids:
        *prefix, banned = word
        if not prefix:
            log_probs[:, banned] = -math.inf
        elif history.size(1) >= len(prefix):  # rows that end with the sequence's first tokens
            ends = history[:, history.size(1) - len(prefix) :].eq(torch.tensor(prefix, device=history.device))
            log_probs[ends.all(dim=1), banned] = -math.inf
    return log_probs


def forced_eos(log_probs, t, history, last, config: GenerationConfig) -> torch.Tensor:
    """At a row's last step the forced token has log-probability 0 and every other −∞."""
    if config.forced_eos_token_id is not None and last is not None and bool(last.any()):
        log_probs[last] = force_token(log_probs[last], config.forced_eos_token_id)
    return log_probs


# the rules in the order they apply (transformers' order of its logits processors)
RULES: list[Rule] = [min_new_tokens, no_repeat_ngrams, bad_words, forced_eos]


def apply_rules(
    log_probs: torch.Tensor,
    t: int,
    history: torch.Tensor,
    last: torch.Tensor | None,
    config: GenerationConfig,
    rules: list[Rule] = RULES,
) -> torch.Tensor:
    """The rules of the module docstring at step t, one after the other.

    log_probs (N, V) log p(y | x, y_≤t) of each row, changed in place; history (N, P + t) its decoder prompt
    and new tokens; last (N,) bool, the rows whose next token is their last (None: none of them) → (N, V)."""
    for rule in rules:
        log_probs = rule(log_probs, t, history, last, config)
    return log_probs


def penalize_repetitions(
    scores: torch.Tensor, history: torch.Tensor, history_mask: torch.Tensor | None, penalty: float
) -> torch.Tensor:
    """CTRL's repetition penalty (Keskar et al. 2019, Sect. 4.1) on each row's tokens so far, as transformers'
    RepetitionPenaltyLogitsProcessor: s(y)/θ where s(y) > 0, s(y)·θ elsewhere, for every y in the row.

    scores (N, V) logits or log-probabilities; history (N, T) the row's tokens; history_mask (N, T) True on
    the tokens that count (False: left padding of the prompt; None: all) → (N, V), a new tensor."""
    N, V = scores.shape
    ids = history if history_mask is None else history.masked_fill(~history_mask, V)  # V: a dropped column
    seen = torch.zeros(N, V + 1, dtype=torch.bool, device=scores.device)  # (N, V + 1)
    seen.scatter_(1, ids.clamp(max=V), True)
    penalised = torch.where(scores < 0, scores * penalty, scores / penalty)
    return torch.where(seen[:, :V], penalised, scores)


def repeated_ngrams(history: torch.Tensor, n: int, vocab_size: int) -> torch.Tensor:
    """Tokens that would complete an n-gram already present in the row.

    history: (N, T) tokens, T ≥ n → (N, V) bool, True where (last n−1 tokens, y) occurs in the row."""
    N, T = history.shape
    ngrams = history.unfold(1, n, 1)  # (N, T − n + 1, n) every n-gram of each row
    prefix = history[:, T - (n - 1) :]  # (N, n − 1) the n−1 tokens the next token would follow
    seen = ngrams[:, :, :-1].eq(prefix[:, None, :]).all(dim=-1)  # (N, T − n + 1) n-grams starting with prefix
    counts = torch.zeros(N, vocab_size, dtype=torch.long, device=history.device)  # (N, V)
    # count, for each token, the n-grams it would repeat
    counts.scatter_add_(1, ngrams[:, :, -1], seen.long())
    return counts > 0


def force_token(log_probs: torch.Tensor, token: int) -> torch.Tensor:
    """Every row must continue with ``token``: its log-probability becomes 0 (certain), the others −∞, as
    transformers' ForcedEOSTokenLogitsProcessor does. (N, V) → (N, V)."""
    forced = torch.full_like(log_probs, -math.inf)
    forced[:, token] = 0.0
    return forced
