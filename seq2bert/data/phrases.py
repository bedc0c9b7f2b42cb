"""Phrases from n-gram statistics, for knowledge masking (seq2bert/data/masking.py) when no phrase lexicon is
given: ERNIE 1.0 (Sun et al. 2019, Sect. 3.2.2) takes its phrases from "lexical analysis and chunking tools";
without them, the word n-grams that occur together far more often than their words' frequencies predict are
a corpus's own phrases.

The score is Mikolov et al. 2013 ("Distributed Representations of Words and Phrases and their
Compositionality", Sect. 4):

    score(a, b) = (count(a b) − δ) / (count(a) × count(b))

δ a discount "that prevents too many phrases consisting of very infrequent words". Pairs of units are scored;
the best become phrases, and a further pass (units now the phrases found) makes longer ones, as Mikolov et
al. run "2–4 passes over the training data with decreasing threshold".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

Unit = tuple[int, ...]  # the token ids of a word or a phrase


def word_units(sentence: list[int], is_continuation: Callable[[int], bool]) -> list[Unit]:
    """The words of a sentence of token ids: a continuation piece (data/word_pieces.py: "##x", or a
    SentencePiece / byte-level piece without its "▁" / "Ġ") joins the word before it; the sentence's first
    piece starts a word."""
    out: list[list[int]] = []
    for t in sentence:
        if out and is_continuation(t):
            out[-1].append(t)
        else:
            out.append([t])
    return [tuple(w) for w in out]


def merge(units: list[Unit], phrases: set[tuple[Unit, Unit]]) -> list[Unit]:
    """Units with every phrase pair found left to right joined into one unit."""
    out: list[Unit] = []
    i = 0
    while i < len(units):
        if i + 1 < len(units) and (units[i], units[i + 1]) in phrases:
            out.append(units[i] + units[i + 1])
            i += 2
        else:
            out.append(units[i])
            i += 1
    return out


def collocations(
    sentences: Iterable[list[int]],
    is_continuation: Callable[[int], bool],
    *,
    top: int,
    passes: int = 2,
    min_count: int = 5,
    delta: float = 5.0,
) -> list[Unit]:
    """The ``top`` phrases of ``sentences`` (lists of token ids) by the score above, each the token ids of
    two or more whole words: a pass keeps the ``top`` best-scored pairs seen at least ``min_count`` times,
    the next pass scores pairs of the units merged so far (``passes`` passes: phrases of up to 2^passes
    words). The best ``top`` of all passes, by score."""
    text = [word_units(s, is_continuation) for s in sentences]
    scored: dict[Unit, float] = {}
    for _ in range(passes):
        unigrams, bigrams = Counter(), Counter()
        for units in text:
            unigrams.update(units)
            bigrams.update(zip(units, units[1:], strict=False))
        scores = {
            pair: (n - delta) / (unigrams[pair[0]] * unigrams[pair[1]])
            for pair, n in bigrams.items()
            if n >= min_count
        }
        best = sorted(scores, key=lambda pair: (-scores[pair], pair))[:top]
        if not best:
            break
        for pair in best:
            scored[pair[0] + pair[1]] = max(scored.get(pair[0] + pair[1], 0.0), scores[pair])
        found = set(best)  # once: built per sentence, it cost top × sentences
        text = [merge(units, found) for units in text]
    return sorted(scored, key=lambda phrase: (-scored[phrase], phrase))[:top]
