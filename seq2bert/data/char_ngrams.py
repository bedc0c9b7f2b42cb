"""fastText's subword units (Bojanowski et al. 2017, "Enriching Word Vectors with Subword Information", Sect. 3.2):

    "Each word w is represented as a bag of character n-gram. We add special boundary symbols < and > at the
    beginning and end of words [...]. Taking the word where and n = 3 as an example, it will be represented
    by the character n-grams: <wh, whe, her, ere, re> and the special sequence <where>."

All n-grams for 3 ≤ n ≤ 6 (counted in characters), plus the word itself, which keeps a vector of its own.
"In order to bound the memory requirements of our model, we use a hashing function that maps n-grams to
integers in 1 to K", K = 2·10^6, with "the Fowler-Noll-Vo hashing function (specifically the FNV-1a
variant)": h ← 2166136261; for each byte b: h ← (h xor b) · 16777619 mod 2^32. fastText's code (and gensim,
to load its models) xors each UTF-8 byte as a *signed* char, sign-extended to 32 bits — the same as FNV-1a on
ASCII and different above 127; that variant is the one here, so published .bin n-gram tables line up.
"""

from __future__ import annotations

import torch

FNV_OFFSET, FNV_PRIME = 2166136261, 16777619


def char_ngrams(word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
    """The character n-grams of ``<word>``, shortest first, in order of position."""
    w = f"<{word}>"
    return [w[i : i + n] for n in range(min_n, max_n + 1) for i in range(len(w) - n + 1)]


def fnv1a(text: str) -> int:
    """32-bit FNV-1a of the UTF-8 bytes (each byte sign-extended, as fastText's code does)."""
    h = FNV_OFFSET
    for b in text.encode("utf-8"):
        h = ((h ^ (b if b < 128 else b | 0xFFFFFF00)) * FNV_PRIME) & 0xFFFFFFFF
    return h


def subword_table(words: list[str], min_n: int, max_n: int, buckets: int) -> torch.Tensor:
    """(V, G) the rows of each word's units in fastText's input matrix: the word's own row i, then
    V + hash(g) mod K for its n-grams g; padded with V + K (a row kept at zero)."""
    V = len(words)
    rows = [[i] + [V + fnv1a(g) % buckets for g in char_ngrams(w, min_n, max_n)] for i, w in enumerate(words)]
    return padded(rows, V + buckets)


def word_units(word: str, V: int, min_n: int, max_n: int, buckets: int) -> list[int]:
    """The rows of a word outside the vocabulary: its n-grams alone (fastText's vectors for unseen words)."""
    return [V + fnv1a(g) % buckets for g in char_ngrams(word, min_n, max_n)]


def padded(rows: list[list[int]], pad: int) -> torch.Tensor:
    width = max((len(r) for r in rows), default=1) or 1
    out = torch.full((len(rows), width), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out
