"""Masking strategies for masked-LM pretraining (seq2bert/data/masking.py): which groups of positions are
chosen (single tokens, whole words, or a strategy added to the registry), how many, and the 80/10/10 rule."""

from collections import Counter

import numpy as np
import pytest

from seq2bert.data import masking
from seq2bert.data.masking import STRATEGIES, MaskingConfig, mask_tokens, words
from seq2bert.errors import ConfigError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

CLS, SEP, MASK = 101, 102, 103
CONTINUATION = (40, 41, 42, 43)  # "##" pieces
# [CLS] 10 11 ##40 ##41 12 13 ##42 14 15 16 [SEP] 17 ##43 18 … 24 [SEP]: words of one, two and three pieces
TOKENS = [CLS, 10, 11, 40, 41, 12, 13, 42, 14, 15, 16, SEP, 17, 43, 18, 19, 20, 21, 22, 23, 24, SEP]
SPECIAL = np.isin(TOKENS, [CLS, SEP])


def config(**kw) -> MaskingConfig:
    return MaskingConfig(vocab_size=kw.pop("vocab_size", 50), continuation=CONTINUATION, **kw)


def is_continuation(token: int) -> bool:
    return token in CONTINUATION


def chosen(labels: list[int]) -> list[int]:
    return [i for i, y in enumerate(labels) if y != IGNORE_INDEX]


def random_sequence(rng: np.random.Generator, vocab: int) -> tuple[list[int], np.ndarray]:
    """[CLS] A [SEP] B [SEP] with random tokens above the special ones, 30 % of them "##" pieces."""

    def segment() -> list[int]:
        n = int(rng.integers(1, 60))
        pieces = rng.choice(CONTINUATION, size=n)
        return np.where(rng.random(n) < 0.3, pieces, rng.integers(MASK + 1, vocab, size=n)).tolist()

    a, b = segment(), segment()
    tokens = [CLS, *a, SEP, *b, SEP]
    special = np.zeros(len(tokens), bool)
    special[[0, len(a) + 1, len(tokens) - 1]] = True
    return tokens, special


def test_words_join_continuation_pieces_but_never_across_a_special_token():
    assert words(TOKENS, SPECIAL, is_continuation) == [
        [1], [2, 3, 4], [5], [6, 7], [8], [9], [10], [12, 13], *([i] for i in range(14, 21))
    ]  # fmt: skip
    # a "##" piece right after [SEP] (its word's head truncated away) starts a word of its own
    assert words([CLS, 40, 10, 41, SEP, 42, 43, SEP], [1, 0, 0, 0, 1, 0, 0, 1], is_continuation) == [
        [1], [2, 3], [5, 6]
    ]  # fmt: skip
    assert words(TOKENS, SPECIAL, None) == [[i] for i in np.flatnonzero(~SPECIAL)]


def test_the_token_strategy_shuffles_single_positions_and_whole_word_shuffles_words():
    groups = STRATEGIES["token"](TOKENS, SPECIAL, config(), np.random.default_rng(0), is_continuation)
    assert all(len(g) == 1 for g in groups)
    assert sorted(g[0] for g in groups) == np.flatnonzero(~SPECIAL).tolist()
    wwm = STRATEGIES["whole_word"](TOKENS, SPECIAL, config(), np.random.default_rng(0), is_continuation)
    in_order = words(TOKENS, SPECIAL, is_continuation)
    assert sorted(wwm) == in_order and wwm != in_order


def test_the_old_flag_and_the_strategy_name_are_the_same_config():
    assert config(whole_word_masking=True).strategy == "whole_word"
    assert config(strategy="whole_word").whole_word_masking is True
    assert config().strategy == "token" and config().whole_word_masking is False
    with pytest.raises(ConfigError, match="masking strategy"):
        config(strategy="spans of nothing")


def changed(inputs: list[int]) -> dict[int, int]:
    return {i: x for i, x in enumerate(inputs) if x != TOKENS[i]}


def test_masks_are_those_of_the_released_recipe_for_a_fixed_generator():
    """Golden values (unchanged since the masking lived in data/pretraining.py)."""
    cfg = config(masked_lm_prob=0.3)
    inputs, labels = mask_tokens(TOKENS, SPECIAL, cfg, np.random.default_rng(3), is_continuation)
    assert chosen(labels) == [4, 9, 14, 15, 18, 20]  # round(0.3 × 19 candidates) = 6
    assert changed(inputs) == {4: MASK, 9: MASK, 14: MASK, 15: MASK, 18: MASK}  # 20 kept as it was
    cfg = config(masked_lm_prob=0.3, whole_word_masking=True)
    inputs, labels = mask_tokens(TOKENS, SPECIAL, cfg, np.random.default_rng(1), is_continuation)
    assert chosen(labels) == [2, 3, 4, 12, 13, 18]  # the words 11 ##40 ##41 and 17 ##43, and 22
    assert changed(inputs) == {2: MASK, 3: MASK, 4: MASK, 12: MASK, 13: MASK, 18: MASK}
    assert all(labels[i] == TOKENS[i] for i in chosen(labels))


@pytest.mark.parametrize("strategy", ["token", "whole_word"])
def test_specials_are_never_chosen_and_the_count_rule_holds(strategy):
    rng = np.random.default_rng(0)
    cfg = config(strategy=strategy, max_predictions_per_seq=12, vocab_size=200)
    for _ in range(300):
        tokens, special = random_sequence(rng, 200)
        inputs, labels = mask_tokens(tokens, special, cfg, rng, is_continuation)
        assert all(labels[i] == IGNORE_INDEX and inputs[i] == tokens[i] for i in np.flatnonzero(special))
        assert all(inputs[i] == tokens[i] for i in range(len(tokens)) if labels[i] == IGNORE_INDEX)
        n_predict = min(12, max(1, round(0.15 * int((~special).sum()))))
        if strategy == "token":
            assert len(chosen(labels)) == n_predict
        else:  # whole words that would overshoot the budget are skipped
            assert len(chosen(labels)) <= n_predict
            for word in words(tokens, special, is_continuation):  # a word is chosen whole or not at all
                assert len({labels[i] == IGNORE_INDEX for i in word}) == 1


def test_at_least_one_and_at_most_max_predictions_per_seq():
    short = [CLS, 10, 11, SEP]  # round(0.15 × 2) = 0 → 1
    _, labels = mask_tokens(short, np.isin(short, [CLS, SEP]), config(), np.random.default_rng(0))
    assert len(chosen(labels)) == 1
    long = [CLS, *range(10, 210), SEP]  # round(0.15 × 200) = 30 → 20
    _, labels = mask_tokens(long, np.isin(long, [CLS, SEP]), config(vocab_size=300), np.random.default_rng(0))
    assert len(chosen(labels)) == 20


def test_80_percent_mask_10_random_10_unchanged():
    rng = np.random.default_rng(1)
    vocab = 1000  # a random replacement equals the original 1 time in 1000
    cfg = config(vocab_size=vocab, max_predictions_per_seq=80)
    counts = Counter()
    for _ in range(400):
        tokens, special = random_sequence(rng, vocab)
        inputs, labels = mask_tokens(tokens, special, cfg, rng, is_continuation)
        for i in chosen(labels):
            counts["mask" if inputs[i] == MASK else "same" if inputs[i] == tokens[i] else "random"] += 1
    total = sum(counts.values())
    assert total > 2500
    assert abs(counts["mask"] / total - 0.8) < 0.025
    assert abs(counts["random"] / total - 0.1) < 0.02 and abs(counts["same"] / total - 0.1) < 0.02


def test_a_strategy_added_to_the_registry_chooses_the_groups(monkeypatch):
    def every_other(tokens, special, cfg, rng, is_continuation):  # even positions, in order
        return [[i] for i in range(0, len(tokens), 2) if not special[i]]

    monkeypatch.setitem(masking.STRATEGIES, "every_other", every_other)
    tokens = [CLS, *range(10, 30), SEP]  # 20 candidates: round(0.15 × 20) = 3 positions
    special = np.isin(tokens, [CLS, SEP])
    inputs, labels = mask_tokens(tokens, special, config(strategy="every_other"), np.random.default_rng(0))
    assert chosen(labels) == [2, 4, 6]

    def pairs_then_single(tokens, special, cfg, rng, is_continuation):
        return [[1, 2], [3, 4], [5], [6]]

    monkeypatch.setitem(masking.STRATEGIES, "pairs", pairs_then_single)
    _, labels = mask_tokens(tokens, special, config(strategy="pairs"), np.random.default_rng(0))
    assert chosen(labels) == [1, 2, 5]  # the second pair would overshoot the 3 predictions: skipped
