"""Masking for masked-LM pretraining: which positions to predict, and what the model sees there.

Devlin et al. 2018, Sect. 3.1, Task #1 (and the released create_pretraining_data.py): 15 % of the positions
that are not [CLS] / [SEP] are chosen — ``round(masked_lm_prob × candidates)``, at least 1, at most
``max_predictions_per_seq`` — and of the chosen positions

    80 % become [MASK],  10 % a random token,  10 % stay unchanged        (Sect. 3.1; ablated in Appendix C.2)

"since the [MASK] token does not appear during fine-tuning". The labels are the original tokens at the
chosen positions and IGNORE_INDEX elsewhere (seq2bert/objectives/masked_lm.py reads them).

What differs between the variants of the literature is only *which groups of positions* are chosen
together, so that is the one thing a strategy decides (``STRATEGIES``, name → function):

    token        every position on its own                                   BERT (Devlin et al. 2018)
    whole_word   all the WordPieces of a word together                       BERT's released code, 2019

A strategy returns disjoint groups of positions in the order they are tried; ``mask_tokens`` takes groups
while they fit the budget (a group that would overshoot it is skipped, as the original does for whole
words) and applies 80/10/10 to each chosen position. The variants still to add are each one function here:

    span         spans of whole words with lengths ℓ ~ Geo(p = 0.2) clipped at 10, starting at random words
                 (SpanBERT, Joshi et al. 2020, Sect. 3.1; SpanBERT applies 80/10/10 per span)
    n-gram       n-grams of whole words, n ≤ 3 with p(n) ∝ 1/n (ALBERT, Lan et al. 2019, Sect. 4.1)
    entity       phrases and named entities as units (ERNIE, Sun et al. 2019, Sect. 3.2; needs an entity
                 lexicon, which would be a field of MaskingConfig)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from seq2bert.errors import ConfigError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

# (tokens, special (T,) bool, cfg, rng, is_continuation) → groups of positions, in the order they are tried
Strategy = Callable[..., list[list[int]]]


@dataclass
class MaskingConfig:
    """The budget, the special ids and the vocabulary the masking needs, and the strategy (a key of
    STRATEGIES). ``whole_word_masking=True``, the released code's flag, sets ``strategy="whole_word"``."""

    max_seq_length: int = 128
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    whole_word_masking: bool = False  # the released code's flag: the same as strategy="whole_word"
    cls_token_id: int = 101
    sep_token_id: int = 102
    mask_token_id: int = 103
    pad_token_id: int = 0
    vocab_size: int = 30522
    continuation: tuple[int, ...] = ()  # ids of "##" WordPieces (whole-word masking)
    strategy: str = "token"  # a key of STRATEGIES

    def __post_init__(self) -> None:
        if self.whole_word_masking:
            if self.strategy not in ("token", "whole_word"):
                raise ConfigError(f"whole_word_masking: set, but the masking strategy is {self.strategy!r}")
            self.strategy = "whole_word"
        self.whole_word_masking = self.strategy == "whole_word"
        if self.strategy not in STRATEGIES:
            raise ConfigError(
                f"masking strategy: expected one of {', '.join(STRATEGIES)}, got {self.strategy!r}"
            )


def words(tokens: list[int], special, is_continuation: Callable[[int], bool] | None) -> list[list[int]]:
    """The non-special positions grouped into words: a "##" piece joins the word before it, never across a
    special token (truncation may have cut a word's head off after [SEP])."""
    groups: list[list[int]] = []
    after_special = True
    for i, special_i in enumerate(special):
        if special_i:
            after_special = True
            continue
        if not after_special and is_continuation and is_continuation(tokens[i]):
            groups[-1].append(i)
        else:
            groups.append([i])
        after_special = False
    return groups


def token_groups(tokens, special, cfg: MaskingConfig, rng: np.random.Generator, is_continuation=None):
    """BERT: every non-special position is its own group, in random order."""
    groups = [[i] for i, special_i in enumerate(special) if not special_i]
    rng.shuffle(groups)
    return groups


def whole_word_groups(tokens, special, cfg: MaskingConfig, rng: np.random.Generator, is_continuation=None):
    """Whole-word masking: the WordPieces of a word are chosen together, words in random order."""
    groups = words(tokens, special, is_continuation)
    rng.shuffle(groups)
    return groups


STRATEGIES: dict[str, Strategy] = {
    "token": token_groups,
    "whole_word": whole_word_groups,
}


def mask_tokens(tokens: list[int], special, cfg: MaskingConfig, rng: np.random.Generator,
                is_continuation: Callable[[int], bool] | None = None) -> tuple[list[int], list[int]]:  # fmt: skip
    """Task #1 on one sequence: tokens (T,) ids, special (T,) bool ([CLS], [SEP]: never chosen). Returns
    (inputs, labels): inputs with 80 % of the chosen positions [MASK], 10 % a random token, 10 % unchanged;
    labels the original token at the chosen positions, IGNORE_INDEX elsewhere."""
    groups = STRATEGIES[cfg.strategy](tokens, special, cfg, rng, is_continuation)
    candidates = len(special) - int(np.count_nonzero(special))
    n_predict = min(cfg.max_predictions_per_seq, max(1, round(candidates * cfg.masked_lm_prob)))
    inputs, labels = list(tokens), [IGNORE_INDEX] * len(tokens)
    chosen = 0
    for group in groups:
        if chosen >= n_predict:
            break
        if chosen + len(group) > n_predict:  # a whole word that would overshoot is skipped, as the original
            continue
        for i in group:
            r = rng.random()
            if r < 0.8:
                inputs[i] = cfg.mask_token_id
            elif r < 0.9:
                inputs[i] = int(rng.integers(cfg.vocab_size))
            labels[i] = tokens[i]
        chosen += len(group)
    return inputs, labels
