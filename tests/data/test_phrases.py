"""Phrases from n-gram statistics (seq2bert/data/phrases.py): word pairs that occur together far more often
than their frequencies predict, merged over passes into longer phrases."""

import numpy as np

from seq2bert.data.phrases import collocations, merge, word_units

CONTINUATION = {40, 41}


def test_words_and_merging():
    assert word_units([10, 40, 11, 12, 41, 40], CONTINUATION.__contains__) == [(10, 40), (11,), (12, 41, 40)]
    units = [(1,), (2,), (3,), (2,), (3,)]
    assert merge(units, {((2,), (3,))}) == [(1,), (2, 3), (2, 3)]


def test_a_fixed_expression_in_random_text_is_found_and_grows_over_passes():
    rng = np.random.default_rng(0)
    sentences = []
    for _ in range(2000):
        words = rng.integers(100, 300, size=12).tolist()
        if rng.random() < 0.3:  # "new york city", with "york" spelled "yo ##rk"
            at = int(rng.integers(0, 9))
            words[at : at + 3] = [50, 51, 40, 52]
        sentences.append(words)
    one = collocations(sentences, CONTINUATION.__contains__, top=3, passes=1)
    assert one[0] in {(50, 51, 40), (51, 40, 52)}
    two = collocations(sentences, CONTINUATION.__contains__, top=3, passes=2)
    assert (50, 51, 40, 52) in two
    assert collocations(sentences, CONTINUATION.__contains__, top=3) == two  # deterministic
