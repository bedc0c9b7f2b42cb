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


@pytest.mark.parametrize("mask, random", [(0.8, 0.1), (0.85, 0.0)])  # BERT's; ELECTRA's generator input
def test_80_percent_mask_10_random_10_unchanged(mask, random):
    rng = np.random.default_rng(1)
    vocab = 1000  # a random replacement equals the original 1 time in 1000
    cfg = config(vocab_size=vocab, max_predictions_per_seq=80, mask_fraction=mask, random_fraction=random)
    counts = Counter()
    for _ in range(400):
        tokens, special = random_sequence(rng, vocab)
        inputs, labels = mask_tokens(tokens, special, cfg, rng, is_continuation)
        for i in chosen(labels):
            counts["mask" if inputs[i] == MASK else "same" if inputs[i] == tokens[i] else "random"] += 1
    total = sum(counts.values())
    assert total > 2500
    same = 1 - mask - random + random / vocab  # kept, or replaced by itself
    assert abs(counts["mask"] / total - mask) < 0.025
    assert abs(counts["random"] / total - random * (1 - 1 / vocab)) < 0.02
    assert abs(counts["same"] / total - same) < 0.02


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


# ---- span (SpanBERT), n-gram (ALBERT) and knowledge (ERNIE 1.0) masking ----------------------------------


def units_of(strategy: str, n_sequences: int, length: int = 400, **kw):
    """(tokens, special, units, inputs, labels) of ``n_sequences`` random [CLS] A [SEP] B [SEP] sequences of
    ``length`` tokens (30 % "##" pieces): the units ``choose`` gives and the masks ``mask_tokens`` makes from
    the same generator state (it draws its units first). Random replacements come from a vocabulary of a
    million, so that one equals the original or [MASK] about never."""
    rng = np.random.default_rng(0)
    cfg = config(strategy=strategy, max_predictions_per_seq=10_000, vocab_size=1_000_000, **kw)
    out = []
    for k in range(n_sequences):
        half = length // 2
        body = np.where(rng.random(length) < 0.3, rng.choice(CONTINUATION, size=length),
                        rng.integers(MASK + 1, 1000, size=length)).tolist()  # fmt: skip
        tokens = [CLS, *body[:half], SEP, *body[half:], SEP]
        special = np.isin(tokens, [CLS, SEP])
        groups = masking.choose(tokens, special, cfg, np.random.default_rng(k), is_continuation)
        inputs, labels = mask_tokens(tokens, special, cfg, np.random.default_rng(k), is_continuation)
        out.append((tokens, special, groups, inputs, labels))
    return out


def word_lengths(tokens, special, group) -> int:
    """How many whole words a group covers (its word starts)."""
    return sum(1 for i in group if not is_continuation(tokens[i]) or special[i - 1])


def test_span_lengths_follow_the_clipped_geometric_in_whole_words():
    probs = masking.geometric_lengths(0.2, 10)
    assert probs.sum() == pytest.approx(1.0) and (probs * np.arange(1, 11)).sum() == pytest.approx(
        3.8, abs=0.01
    )  # the paper's ℓ̄
    lengths = Counter()
    for tokens, special, groups, _, _ in units_of("span", 1000, length=800):
        for group in groups[: len(groups) // 2]:  # the last ones may be cut to the budget
            lengths[word_lengths(tokens, special, group)] += 1
            assert group == list(range(group[0], group[-1] + 1))  # contiguous
            assert not is_continuation(tokens[group[0]]) or special[group[0] - 1]  # starts at a word
            assert group[-1] + 1 == len(tokens) or not is_continuation(tokens[group[-1] + 1])  # ends at one
    total = sum(lengths.values())
    assert total > 10_000
    observed = np.array([lengths[n] / total for n in range(1, 11)])
    assert set(lengths) <= set(range(1, 11))
    assert np.abs(observed - probs).max() < 0.01, observed.round(3)


def test_ngram_lengths_follow_one_over_n_normalised():
    assert masking.harmonic_lengths(3) == pytest.approx([6 / 11, 3 / 11, 2 / 11])
    lengths = Counter()
    for tokens, special, groups, _, _ in units_of("ngram", 450, length=800):
        for group in groups[: len(groups) // 2]:
            lengths[word_lengths(tokens, special, group)] += 1
    total = sum(lengths.values())
    assert total > 10_000 and set(lengths) == {1, 2, 3}
    for n, p in zip((1, 2, 3), (6 / 11, 3 / 11, 2 / 11), strict=True):
        assert abs(lengths[n] / total - p) < 0.015


@pytest.mark.parametrize("strategy", ["span", "ngram", "knowledge"])
def test_units_spend_the_budget_never_cross_sep_and_are_replaced_whole(strategy):
    counts, chosen_n, candidates = Counter(), 0, 0
    for tokens, special, groups, inputs, labels in units_of(strategy, 300):
        budget = round(0.15 * int((~special).sum()))
        positions = [i for g in groups for i in g]
        assert len(positions) == len(set(positions)) and not special[positions].any()
        assert budget - 3 <= len(positions) <= budget  # whole words: the last one may not fit
        assert sorted(positions) == chosen(labels)
        for group in groups:  # never across [SEP]
            assert not special[group[0] : group[-1] + 1].any()
            kinds = {
                "mask" if inputs[i] == MASK else "same" if inputs[i] == tokens[i] else "random" for i in group
            }
            assert len(kinds) == 1, (group, [inputs[i] for i in group], [tokens[i] for i in group])
            counts[kinds.pop()] += 1
        chosen_n += len(positions)
        candidates += int((~special).sum())
    assert abs(chosen_n / candidates - 0.15) < 0.005
    total = sum(counts.values())
    assert total > 2500
    assert abs(counts["mask"] / total - 0.8) < 0.03
    assert abs(counts["random"] / total - 0.1) < 0.025 and abs(counts["same"] / total - 0.1) < 0.025


def test_lexicon_entries_are_found_as_runs_of_whole_words():
    # 10 11 ##40 ##41 12 13 ##42 14 15 16 [SEP] 17 ##43 18 …
    all_words = masking.words(TOKENS, SPECIAL, is_continuation)
    first = all_words[:7]  # the words of segment A
    assert masking.lexicon_matches(TOKENS, first, [(11, 40, 41, 12), (15, 16), (13,)]) == [
        [2, 3, 4, 5],
        [9, 10],
    ]
    assert masking.lexicon_matches(TOKENS, first, [(11, 40)]) == []  # ends inside a word: no match
    assert masking.lexicon_matches(TOKENS, first, [(12, 13), (12, 13, 42, 14)]) == [
        [5, 6, 7, 8]
    ]  # the longest


ENTITY, PHRASE = (12, 13, 42), (13, 42, 14, 15)  # overlapping: the entity wins


@pytest.mark.parametrize("level", ["word", "phrase", "entity"])
def test_knowledge_units_are_the_lexicon_matches_at_the_level_and_are_masked_whole(level):
    cfg = config(strategy="knowledge", knowledge_level=level, entities=[ENTITY], phrases=[PHRASE, (18, 19)])
    units = STRATEGIES["knowledge"](TOKENS, SPECIAL, cfg, np.random.default_rng(0), is_continuation)
    expected = {"word": [], "phrase": [[6, 7, 8, 9], [14, 15]], "entity": [[5, 6, 7], [14, 15]]}[level]
    assert all(u in units for u in expected)
    covered = sorted(i for u in units for i in u)
    assert covered == np.flatnonzero(~SPECIAL).tolist()  # the rest are whole words
    assert sorted(u for u in units if u not in expected) == sorted(
        w for w in words(TOKENS, SPECIAL, is_continuation) if not set(w) & {i for u in expected for i in u}
    )
    cfg = config(strategy="knowledge", knowledge_level=level, entities=[ENTITY], phrases=[PHRASE, (18, 19)],
                 masked_lm_prob=0.4)  # fmt: skip
    seen = Counter()
    for seed in range(300):
        _, labels = mask_tokens(TOKENS, SPECIAL, cfg, np.random.default_rng(seed), is_continuation)
        picked = set(chosen(labels))
        for unit in expected:
            assert len({i in picked for i in unit}) == 1  # all of it or none
            seen[tuple(unit)] += set(unit) <= picked
    assert all(seen[tuple(u)] > 20 for u in expected)


def test_the_same_seed_gives_the_same_masks_for_every_strategy():
    for strategy in STRATEGIES:
        cfg = config(strategy=strategy, entities=[ENTITY], phrases=[PHRASE])
        a = mask_tokens(TOKENS, SPECIAL, cfg, np.random.default_rng(5), is_continuation)
        b = mask_tokens(TOKENS, SPECIAL, cfg, np.random.default_rng(5), is_continuation)
        assert a == b, strategy


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(span_p=0.0), "span_p: must be in"),
        (dict(span_max_words=0), "span_max_words and ngram_max: must be at least 1"),
        (dict(ngram_max=0), "span_max_words and ngram_max"),
        (dict(knowledge_level="sentence"), "knowledge_level: expected one of word, phrase, entity"),
        (
            dict(mask_fraction=0.95, random_fraction=0.1),
            "mask_fraction, random_fraction: must be >= 0 with a sum",
        ),
        (dict(random_fraction=-0.1), "mask_fraction, random_fraction"),
        (dict(strategy="span", whole_word_masking=True), "whole_word_masking: set, but the masking strategy"),
    ],
)
def test_bad_strategy_parameters_are_one_line_config_errors(bad, message):
    with pytest.raises(ConfigError, match=message):
        config(**bad)


def test_a_knowledge_schedule_gives_each_pass_its_level_and_keeps_the_last():
    cfg = config(strategy="knowledge", knowledge_schedule=["word", "phrase", "entity"], phrases=[PHRASE])
    assert [cfg.for_pass(k).knowledge_level for k in range(5)] == [
        "word",
        "phrase",
        "entity",
        "entity",
        "entity",
    ]
    assert cfg.for_pass(1).phrases == (PHRASE,) and not cfg.for_pass(1).knowledge_schedule
    plain = config(strategy="knowledge")
    assert plain.for_pass(3) is plain
    with pytest.raises(
        ConfigError, match="knowledge_level: expected one of word, phrase, entity, got 'chunk'"
    ):
        config(strategy="knowledge", knowledge_schedule=["word", "chunk"])


@pytest.mark.parametrize("strategy", ["span", "ngram"])
def test_a_sequence_shorter_than_the_span_drawn_masks_what_it_has(strategy):
    """A span of up to 10 words in a segment of two: the length is cut to the words there are."""
    tokens = [CLS, 10, 11, SEP]
    special = np.isin(tokens, [CLS, SEP])
    cfg = config(strategy=strategy, span_max_words=10, span_p=0.01, ngram_max=10, masked_lm_prob=0.5)
    for seed in range(20):
        inputs, labels = mask_tokens(tokens, special, cfg, np.random.default_rng(seed), is_continuation)
        assert 1 <= len(chosen(labels)) <= 2 and set(chosen(labels)) <= {1, 2}
