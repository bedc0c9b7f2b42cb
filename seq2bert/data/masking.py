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
    span         spans of ℓ whole words, ℓ ~ Geo(p = 0.2) clipped at 10      SpanBERT (Joshi et al. 2019, Sect. 3.1)
    ngram        n-grams of whole words, n ≤ 3 with p(n) ∝ 1/n               ALBERT (Lan et al. 2019, Sect. 4.1)
    knowledge    phrases and entities of a lexicon as units, else words      ERNIE 1.0 (Sun et al. 2019, Sect. 3.2)

A strategy returns disjoint groups of positions in the order they are tried; ``mask_tokens`` takes groups
while they fit the budget (a group that would overshoot it is skipped, as the original does for whole
words) and applies 80/10/10: to each chosen position on its own for ``token`` and ``whole_word`` (BERT), to
each group as one unit for the others (``WHOLE_UNIT``: "we perform this replacement at the span level and
not for each token individually", SpanBERT Sect. 3.1) — a unit becomes all [MASK], all random tokens, or
stays as it is. (ALBERT and ERNIE do not say how they replace an n-gram or an entity; we treat them as
SpanBERT treats its spans, so that no unit is half visible.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from seq2bert.errors import ConfigError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

# (tokens, special (T,) bool, cfg, rng, is_continuation) → groups of positions, in the order they are tried
Strategy = Callable[..., list[list[int]]]
KNOWLEDGE_LEVELS = ("word", "phrase", "entity")  # ERNIE's basic-level, phrase-level and entity-level masking


@dataclass
class MaskingConfig:
    """The budget, the special ids and the vocabulary the masking needs, and the strategy (a key of
    STRATEGIES) with its parameters. ``whole_word_masking=True``, the released code's flag, sets
    ``strategy="whole_word"``."""

    max_seq_length: int = 128
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    # of the chosen positions (units): the share given [MASK] and the share given a random token, the rest
    # kept — BERT's 80/10/10; ELECTRA's released generator input 85/0/15 (its paper: all [MASK])
    mask_fraction: float = 0.8
    random_fraction: float = 0.1
    whole_word_masking: bool = False  # the released code's flag: the same as strategy="whole_word"
    cls_token_id: int = 101
    sep_token_id: int = 102
    mask_token_id: int = 103
    pad_token_id: int = 0
    vocab_size: int = 30522
    # ids of the pieces that continue the word before them: "##" WordPieces, SentencePiece and byte-level pieces
    # without their word-start mark (data/word_pieces.py); the words of every strategy but token
    continuation: tuple[int, ...] = ()
    strategy: str = "token"  # a key of STRATEGIES
    span_p: float = 0.2  # span: ℓ ~ Geo(span_p), in words …
    span_max_words: int = 10  # … clipped at span_max_words
    ngram_max: int = 3  # ngram: n ∈ 1 … ngram_max with p(n) ∝ 1/n
    knowledge_level: str = "entity"  # knowledge: the units' level, word < phrase < entity (KNOWLEDGE_LEVELS)
    phrases: tuple[tuple[int, ...], ...] = ()  # knowledge: the token ids of each phrase of the lexicon
    entities: tuple[tuple[int, ...], ...] = ()  # knowledge: the token ids of each named entity
    # knowledge: ERNIE's stages, the level of each pass in turn, the last one kept (``for_pass``)
    knowledge_schedule: tuple[str, ...] = ()

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
        if not (
            0.0 <= self.mask_fraction
            and 0.0 <= self.random_fraction
            and self.mask_fraction + self.random_fraction <= 1.0
        ):
            raise ConfigError(
                f"mask_fraction, random_fraction: must be >= 0 with a sum <= 1, got "
                f"{self.mask_fraction}, {self.random_fraction}"
            )
        check_units(
            self.span_p, self.span_max_words, self.ngram_max, (self.knowledge_level, *self.knowledge_schedule)
        )
        self.knowledge_schedule = tuple(self.knowledge_schedule)
        self.phrases = tuple(tuple(int(t) for t in p) for p in self.phrases if len(p))
        self.entities = tuple(tuple(int(t) for t in e) for e in self.entities if len(e))

    def for_pass(self, k: int) -> MaskingConfig:
        """The masking of pass k over the corpus: ERNIE 1.0's staged knowledge masking (Sect. 3.2: "basic-level
        masking … phrase-level masking … entity-level masking", learnt one after the other) takes the level
        ``knowledge_schedule[k]`` (the last one after the schedule ends); without a schedule, this config."""
        if not self.knowledge_schedule:
            return self
        level = self.knowledge_schedule[min(k, len(self.knowledge_schedule) - 1)]
        return replace(self, knowledge_level=level, knowledge_schedule=())


def check_units(span_p: float, span_max_words: int, ngram_max: int, levels: Iterable[str]) -> None:
    """The parameters of the span, n-gram and knowledge strategies, each a one-line ConfigError when wrong."""
    if not 0.0 < span_p <= 1.0:
        raise ConfigError(f"span_p: must be in (0, 1], got {span_p}")
    if span_max_words < 1 or ngram_max < 1:
        raise ConfigError(
            f"span_max_words and ngram_max: must be at least 1, got {span_max_words}, {ngram_max}"
        )
    for level in levels:
        if level not in KNOWLEDGE_LEVELS:
            raise ConfigError(
                f"knowledge_level: expected one of {', '.join(KNOWLEDGE_LEVELS)}, got {level!r}"
            )


def budget(special, cfg: MaskingConfig) -> int:
    """How many positions are predicted: 15 % of the candidates (not [CLS] / [SEP]), at least 1, at most
    max_predictions_per_seq."""
    candidates = len(special) - int(np.count_nonzero(special))
    return min(cfg.max_predictions_per_seq, max(1, round(candidates * cfg.masked_lm_prob)))


def words(tokens: list[int], special, is_continuation: Callable[[int], bool] | None) -> list[list[int]]:
    """The non-special positions grouped into words: a continuation piece (a "##" WordPiece, a SentencePiece
    or byte-level piece without its "▁" / "Ġ": data/word_pieces.py) joins the word before it, never across a
    special token — the first piece of a segment starts a word whatever it is (a byte-level text's first
    word has no "Ġ"; truncation may have cut a word's head off after [SEP])."""
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


# ---- spans and n-grams of whole words: SpanBERT and ALBERT ------------------------------------------------


def geometric_lengths(p: float, max_words: int) -> np.ndarray:
    """SpanBERT's span-length distribution (Sect. 3.1): ℓ ~ Geo(p), P(ℓ) ∝ p (1 − p)^(ℓ−1), "clipping ℓ at
    ℓ_max = 10" — the lengths above ℓ_max dropped and the rest renormalised, which gives the paper's mean of
    3.8 words at p = 0.2 (moving their mass onto ℓ_max instead would give 4.5). Index ℓ − 1 holds P(ℓ)."""
    lengths = np.arange(1, max_words + 1)
    probs = p * (1 - p) ** (lengths - 1)
    return probs / probs.sum()


def harmonic_lengths(max_n: int) -> np.ndarray:
    """ALBERT's n-gram length distribution (Sect. 4.1): p(n) = (1/n) / Σ_{k=1}^{N} 1/k. Index n − 1 holds p(n)."""
    inverse = 1.0 / np.arange(1, max_n + 1)
    return inverse / inverse.sum()


def word_spans(
    tokens, special, cfg: MaskingConfig, rng: np.random.Generator, is_continuation, length_probs: np.ndarray
) -> list[list[int]]:
    """Spans of whole words until the budget is spent: sample a length ℓ (in words) from ``length_probs``,
    then a start uniformly among the words where ℓ consecutive words of one segment are still free (a span
    never crosses [SEP], nor another span); if no start fits, the longest length that fits. A span that
    would overshoot the budget keeps its first words that fit (whole words); when not even its first word
    fits, another is drawn (ten misses end the spans). Choosing among the free starts, rather than
    rejecting a start that collides, keeps the lengths those of ``length_probs``: only the spans cut to the
    budget at the end, and those of a sequence too crowded to hold ℓ, are shorter."""
    special = np.asarray(special, bool)
    segments: list[list[list[int]]] = [[]]  # words of each segment
    for word in words(tokens, special, is_continuation):
        if segments[-1] and special[segments[-1][-1][-1] + 1 : word[0]].any():
            segments.append([])
        segments[-1].append(word)
    # one line of words with a blocked slot after each segment: a span never runs from one into the next
    line: list[list[int] | None] = [w for segment in segments for w in (*segment, None)]
    blocked = np.array([w is None for w in line])
    left, units, misses = budget(special, cfg), [], 0
    while left > 0:
        # at most the slots of the line: a short sequence (a few words) cannot hold a long span
        length = min(int(rng.choice(len(length_probs), p=length_probs)) + 1, len(line))
        # ends[s + ℓ] − ends[s]: the blocked slots among s … s + ℓ − 1; a start fits when there are none
        ends = np.concatenate([[0], np.cumsum(blocked)])
        starts = np.array([], dtype=int)
        while length > 0:
            starts = np.flatnonzero(ends[length:] - ends[: len(ends) - length] == 0)
            if len(starts):
                break
            length -= 1
        if not len(starts):
            break  # every word is taken
        s = int(starts[rng.integers(len(starts))])
        unit: list[int] = []
        for w in range(s, s + length):
            if len(unit) + len(line[w]) > left:
                break
            unit += line[w]
            blocked[w] = True
        if not unit:  # the budget ends inside the word drawn: try another start, up to 10 times
            misses += 1
            if misses == 10:
                break
            continue
        units.append(unit)
        left -= len(unit)
    return units


def span_groups(tokens, special, cfg: MaskingConfig, rng: np.random.Generator, is_continuation=None):
    """SpanBERT (Joshi et al. 2019, Sect. 3.1): "we iteratively sample spans of text until the masking budget
    (e.g. 15 % of X) has been spent" — ℓ ~ Geo(span_p) whole words, clipped at span_max_words, starting at
    the beginning of a word chosen uniformly."""
    return word_spans(
        tokens, special, cfg, rng, is_continuation, geometric_lengths(cfg.span_p, cfg.span_max_words)
    )


def ngram_groups(tokens, special, cfg: MaskingConfig, rng: np.random.Generator, is_continuation=None):
    """ALBERT (Lan et al. 2019, Sect. 4.1): n-gram masking, "the MLM target can consist of up to a 3-gram of
    complete words", n drawn with p(n) ∝ 1/n up to ngram_max."""
    return word_spans(tokens, special, cfg, rng, is_continuation, harmonic_lengths(cfg.ngram_max))


# ---- knowledge masking: ERNIE 1.0 --------------------------------------------------------------------------


_INDEXES: dict[int, tuple[tuple, tuple]] = {}  # id of a lexicon (a tuple) → (the lexicon, its index)


def lexicon_index(lexicon: Iterable[tuple[int, ...]]) -> tuple[frozenset[tuple[int, ...]], int]:
    """The lexicon's entries as a set, and the longest entry's length in tokens. A tuple lexicon
    (MaskingConfig's) is indexed once and the index kept: ERNIE's phrase lexicon holds 20,000 entries and is
    matched against every segment (indexing it each time, and scanning the entries of a frequent first word,
    took 2.5× the training step)."""
    kept = _INDEXES.get(id(lexicon))
    if kept is not None and kept[0] is lexicon:
        return kept[1]
    entries = frozenset(tuple(e) for e in lexicon)
    index = (entries, max(map(len, entries), default=0))
    if isinstance(lexicon, tuple):  # immutable: its index stays right
        if len(_INDEXES) >= 8:
            del _INDEXES[next(iter(_INDEXES))]
        _INDEXES[id(lexicon)] = (lexicon, index)
    return index


def lexicon_matches(
    tokens, word_list: list[list[int]], lexicon: Iterable[tuple[int, ...]]
) -> list[list[int]]:
    """The occurrences of the lexicon's entries in ``word_list`` (consecutive words of one segment), as runs of
    whole words: left to right, the longest entry that starts at a word and ends at the end of a word; matches
    never overlap."""
    entries, longest = lexicon_index(lexicon)
    ids = tokens.tolist() if hasattr(tokens, "tolist") else list(tokens)
    out, w = [], 0
    while w < len(word_list):
        first = word_list[w][0]
        found, seq = 0, []  # words of the longest match; the tokens of words w … w + covered − 1
        for covered, word in enumerate(word_list[w:], start=1):
            if word[0] != first + len(seq):  # not the next word of the text
                break
            seq += [ids[i] for i in word]
            if len(seq) > longest:
                break
            if tuple(seq) in entries:
                found = covered
        if found:
            out.append([i for word in word_list[w : w + found] for i in word])
            w += found
        else:
            w += 1
    return out


def knowledge_groups(tokens, special, cfg: MaskingConfig, rng: np.random.Generator, is_continuation=None):
    """ERNIE 1.0 (Sun et al. 2019, Sect. 3.2): the masking units are the entities (entity level) and phrases
    (phrase level and above) of the lexicon found in the text, and the other words (basic level); units in
    random order, each masked whole, as whole words are. An entity found takes precedence over a phrase
    overlapping it."""
    all_words = words(tokens, special, is_continuation)
    levels = KNOWLEDGE_LEVELS.index(cfg.knowledge_level)
    lexicons = [cfg.entities] if levels >= 2 else []
    lexicons += [cfg.phrases] if levels >= 1 else []
    units: list[list[int]] = []
    free = all_words
    for lexicon in lexicons:
        if not lexicon:
            continue
        taken: set[int] = set()
        runs: list[list[list[int]]] = [[]]  # free words in runs of consecutive ones of one segment
        for word in free:
            prev = runs[-1][-1][-1] if runs[-1] else None
            if prev is not None and (word[0] != prev + 1):
                runs.append([])
            runs[-1].append(word)
        for run in runs:
            for unit in lexicon_matches(tokens, run, lexicon):
                units.append(unit)
                taken.update(unit)
        free = [w for w in free if w[0] not in taken]
    units += free
    units.sort()  # a fixed order before the shuffle: the same draw whatever order the levels were matched in
    rng.shuffle(units)
    return units


STRATEGIES: dict[str, Strategy] = {
    "token": token_groups,
    "whole_word": whole_word_groups,
    "span": span_groups,
    "ngram": ngram_groups,
    "knowledge": knowledge_groups,
}
WHOLE_UNIT = frozenset({"span", "ngram", "knowledge"})  # 80/10/10 decided once per group


def mask_tokens(
    tokens: list[int],
    special,
    cfg: MaskingConfig,
    rng: np.random.Generator,
    is_continuation: Callable[[int], bool] | None = None,
    spans: list[tuple[int, int]] | None = None,
) -> tuple[list[int], list[int]]:
    """Task #1 on one sequence: tokens (T,) ids, special (T,) bool ([CLS], [SEP]: never chosen). Returns
    (inputs, labels): inputs with 80 % of the chosen positions (or units) [MASK], 10 % random tokens, 10 %
    unchanged (``mask_fraction``, ``random_fraction``); labels the original token at the chosen positions, IGNORE_INDEX elsewhere. ``spans``: a list
    that receives the chosen positions as maximal runs (s, e) of consecutive positions, inclusive — two
    spans drawn side by side are one run, as SpanBERT's released code merges them, so that the boundaries
    x_{s−1}, x_{e+1} its objective reads are never masked; recording them draws nothing, so the masks are
    the same either way."""
    inputs, labels = list(tokens), [IGNORE_INDEX] * len(tokens)
    per_unit = cfg.strategy in WHOLE_UNIT
    groups = choose(tokens, special, cfg, rng, is_continuation)
    if spans is not None:
        spans += runs([i for group in groups for i in group])
    for group in groups:
        r = rng.random() if per_unit else 0.0
        for i in group:
            if not per_unit:
                r = rng.random()
            if r < cfg.mask_fraction:
                inputs[i] = cfg.mask_token_id
            elif r < cfg.mask_fraction + cfg.random_fraction:
                inputs[i] = int(rng.integers(cfg.vocab_size))
            labels[i] = tokens[i]
    return inputs, labels


def runs(group: list[int]) -> list[tuple[int, int]]:
    """The positions of a group as runs (s, e) of consecutive positions, inclusive: [4, 5, 6, 9] → (4, 6), (9, 9)."""
    out: list[tuple[int, int]] = []
    for i in sorted(group):
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def choose(
    tokens: list[int],
    special,
    cfg: MaskingConfig,
    rng: np.random.Generator,
    is_continuation: Callable[[int], bool] | None = None,
) -> list[list[int]]:
    """The groups of positions to predict: the strategy's groups, in its order, while they fit the budget."""
    groups = STRATEGIES[cfg.strategy](tokens, special, cfg, rng, is_continuation)
    n_predict, chosen, out = budget(special, cfg), 0, []
    for group in groups:
        if chosen >= n_predict:
            break
        if chosen + len(group) > n_predict:  # a whole word that would overshoot is skipped, as the original
            continue
        out.append(group)
        chosen += len(group)
    return out
