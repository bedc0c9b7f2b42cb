"""Tests for seq2bert.data.synthetic: each task's relation, the invented language, splits, errors."""

import pytest

from seq2bert.data import synthetic
from seq2bert.data.synthetic import TASKS, make_splits, make_task
from seq2bert.errors import UserError

# ---------------------------------------------------------------------------------------------------------
# Symbol tasks


def symbol_index(symbol: str) -> int:
    assert symbol.startswith("s")
    return int(symbol[1:])


@pytest.mark.parametrize("name", ["copy", "reverse", "sort"])
def test_symbol_tasks_lengths_alphabet_and_distinct_sources(name):
    pairs = make_task(name, 500, min_len=2, max_len=9, num_symbols=13, seed=1)
    assert len(pairs) == 500
    assert len({src for src, _ in pairs}) == 500
    for src, tgt in pairs:
        words = src.split()
        assert 2 <= len(words) <= 9 and len(tgt.split()) == len(words)
        assert all(0 <= symbol_index(w) < 13 for w in words)
    assert {len(src.split()) for src, _ in pairs} == set(range(2, 10))  # every length occurs


def test_copy():
    assert all(src == tgt for src, tgt in make_task("copy", 300))


def test_reverse():
    assert all(tgt.split() == src.split()[::-1] for src, tgt in make_task("reverse", 300))


def test_sort_is_by_symbol_index_and_by_string():
    for src, tgt in make_task("sort", 300, num_symbols=120, seed=2):
        assert tgt.split() == sorted(src.split(), key=symbol_index) == sorted(src.split())


def test_reproducible_from_seed():
    for name in TASKS:
        assert make_task(name, 50, seed=4) == make_task(name, 50, seed=4)
        assert make_task(name, 50, seed=4) != make_task(name, 50, seed=5)


def test_all_distinct_sequences_when_n_equals_their_number():
    pairs = make_task("copy", 6, min_len=1, max_len=2, num_symbols=2)
    assert sorted(src for src, _ in pairs) == ["s0", "s0 s0", "s0 s1", "s1", "s1 s0", "s1 s1"]


# ---------------------------------------------------------------------------------------------------------
# The invented language pair


def test_lang_golden_translation():
    c = synthetic
    clause = c._Clause(
        c._NP("dog", plural=True, definite=True, adjectives=["big"]),
        c._VP("see", obj=c._NP("cat", False, False), pp=c._PP("in", c._NP("garden", False, True)), main=True),
    )
    assert " ".join(c._source([clause])) == "the big dogs see a cat in the garden"
    assert " ".join(c._target([clause])) == "lo voskon velkin lo sadi vnu na miru vidut"


def test_lang_relative_clause_precedes_noun_and_agrees():
    c = synthetic
    subject = c._NP("girl", plural=False, definite=False, rel=c._VP("like", obj=c._NP("book", True, True)))
    clause = c._Clause(subject, c._VP("sleep", main=True))
    assert " ".join(c._source([clause])) == "a girl that likes the books sleeps"
    assert " ".join(c._target([clause])) == "lo bukten lubit ke na nesha spavit"


def target_forms() -> set[str]:
    c = synthetic
    nominal = [*c.NOUNS.values(), *c.ADJECTIVES.values()]
    verbs = [*c.INTRANSITIVE_VERBS.values(), *c.TRANSITIVE_VERBS.values()]
    return {
        *nominal,
        *(w + c.PLURAL_SUFFIX for w in nominal),
        *(v + s for v in verbs for s in c.VERB_SUFFIX.values()),
        *c.NOUN_PREPOSITIONS.values(),
        *c.VERB_PREPOSITIONS.values(),
        *c.DETERMINERS.values(),
        c.RELATIVE[1],
        c.CONJUNCTION[1],
    }


def test_lang_target_forms_are_all_distinct():
    c = synthetic
    n_nominal = len(c.NOUNS) + len(c.ADJECTIVES)
    n_verbs = len(c.INTRANSITIVE_VERBS) + len(c.TRANSITIVE_VERBS)
    expected = 2 * n_nominal + 2 * n_verbs + len(c.NOUN_PREPOSITIONS) + len(c.VERB_PREPOSITIONS) + 2 + 2
    assert len(target_forms()) == expected


def test_lang_data():
    pairs = make_task("lang", 2000, min_len=4, max_len=15, seed=0)
    assert pairs == make_task("lang", 2000, min_len=4, max_len=15, seed=0)  # deterministic
    assert len({src for src, _ in pairs}) == 2000
    source_vocab = {w for src, _ in pairs for w in src.split()}
    target_vocab = {w for _, tgt in pairs for w in tgt.split()}
    assert not source_vocab & target_vocab
    assert target_vocab <= target_forms()
    verb_forms = {
        v + s
        for v in [*synthetic.INTRANSITIVE_VERBS.values(), *synthetic.TRANSITIVE_VERBS.values()]
        for s in synthetic.VERB_SUFFIX.values()
    }
    lemmas = [*synthetic.INTRANSITIVE_VERBS, *synthetic.TRANSITIVE_VERBS]
    source_verbs = {v + s for v in lemmas for s in ("", "s")}
    lengths = [len(src.split()) for src, _ in pairs]
    assert min(lengths) == 4 and max(lengths) == 15
    for _, tgt in pairs:
        assert tgt.split()[-1] in verb_forms  # SOV: every target sentence ends with its verb
    # …whereas many English-like sources (objects, prepositional phrases) do not.
    assert sum(src.split()[-1] not in source_verbs for src, _ in pairs) > len(pairs) // 4
    # Not a word-by-word translation: the order of word classes differs in (nearly) every pair.
    differs = sum(word_classes(src, source=True) != word_classes(tgt, source=False) for src, tgt in pairs)
    assert differs > 0.9 * len(pairs)


def word_classes(sentence: str, *, source: bool) -> list[str]:
    """The sentence as word classes: Det, Adj, Noun, Verb, Prep/post-position, Rel, Conj (first letters)."""
    c = synthetic
    table: dict[str, str] = {}
    verbs = {**c.INTRANSITIVE_VERBS, **c.TRANSITIVE_VERBS}
    for cls, lexicon, endings in [
        ("N", c.NOUNS, ("", "s") if source else ("", c.PLURAL_SUFFIX)),
        ("A", c.ADJECTIVES, ("",) if source else ("", c.PLURAL_SUFFIX)),
        ("V", verbs, ("", "s") if source else tuple(c.VERB_SUFFIX.values())),
        ("P", {**c.NOUN_PREPOSITIONS, **c.VERB_PREPOSITIONS}, ("",)),
    ]:
        table.update({(k if source else v) + e: cls for k, v in lexicon.items() for e in endings})
    table.update(dict.fromkeys(["the", "a", "some"] if source else c.DETERMINERS.values(), "D"))
    table[c.RELATIVE[0 if source else 1]] = "R"
    table[c.CONJUNCTION[0 if source else 1]] = "C"
    return [table[w] for w in sentence.split()]


def test_lang_min_len_below_three_gives_three_word_sentences():
    pairs = make_task("lang", 100, min_len=1, max_len=3)
    assert all(len(src.split()) == 3 for src, _ in pairs)


# ---------------------------------------------------------------------------------------------------------
# Splits


@pytest.mark.parametrize("name", list(TASKS))
def test_splits_disjoint_and_deterministic(name):
    splits = make_splits(
        name, n_train=400, n_valid=50, n_test=60, min_len=3, max_len=8, num_symbols=6, seed=3
    )
    assert {k: len(v) for k, v in splits.items()} == {"train": 400, "valid": 50, "test": 60}
    sources = {k: {src for src, _ in v} for k, v in splits.items()}
    assert not sources["train"] & sources["valid"]
    assert not sources["train"] & sources["test"]
    assert not sources["valid"] & sources["test"]
    again = make_splits(name, n_train=400, n_valid=50, n_test=60, min_len=3, max_len=8, num_symbols=6, seed=3)
    assert again == splits


# ---------------------------------------------------------------------------------------------------------
# Errors


def test_unknown_task_names_valid_tasks():
    with pytest.raises(
        UserError, match="unknown synthetic task 'copi'; valid tasks: copy, reverse, sort, lang"
    ):
        make_task("copi", 10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_len": 5, "max_len": 4}, "min_len=5 is greater than max_len=4"),
        ({"min_len": 0}, "min_len"),
        ({"num_symbols": 0}, "num_symbols"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(UserError, match=match):
        make_task("copy", 10, **kwargs)


def test_negative_sizes():
    with pytest.raises(UserError, match="n must be"):
        make_task("copy", -1)
    with pytest.raises(UserError, match="n_valid"):
        make_splits("copy", n_train=1, n_valid=-1, n_test=1)


def test_too_many_examples_for_the_distinct_sequences():
    with pytest.raises(UserError, match="cannot make 7 distinct sequences: only 6 exist"):
        make_task("copy", 7, min_len=1, max_len=2, num_symbols=2)
    with pytest.raises(UserError, match="only 6 exist"):
        make_splits("sort", n_train=5, n_valid=1, n_test=1, min_len=1, max_len=2, num_symbols=2, seed=0)


def test_too_many_lang_sentences():
    # 4 determiner/number choices x 20 nouns x 7 intransitive verbs = 560 three-word sentences.
    assert len(make_task("lang", 560, min_len=3, max_len=3)) == 560
    with pytest.raises(UserError, match="cannot make 561 distinct 'lang' sentences"):
        make_task("lang", 561, min_len=3, max_len=3)


def test_lang_needs_three_words():
    with pytest.raises(UserError, match="at least 3 words"):
        make_task("lang", 10, min_len=1, max_len=2)
