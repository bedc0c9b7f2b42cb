"""fastText's subwords: the paper's n-grams of <where> and FNV-1a hashing by its definition."""

import pytest

from seq2bert.data.char_ngrams import char_ngrams, fnv1a, subword_table, word_units


def fnv1a_by_definition(data: bytes) -> int:
    """FNV-1a, 32 bits (Fowler, Noll & Vo): offset basis 2166136261, prime 16777619."""
    h = 2166136261
    for b in data:
        h ^= b
        h = (h * 16777619) % 2**32
    return h


def test_the_papers_example_where():
    grams = char_ngrams("where", 3, 3)
    assert grams == ["<wh", "whe", "her", "ere", "re>"]  # Bojanowski et al., Sect. 3.2
    all_grams = char_ngrams("where", 3, 6)
    assert len(all_grams) == 5 + 4 + 3 + 2 and "<where" in all_grams and "where>" in all_grams
    assert "<where>" not in all_grams  # 7 characters: the word's own vector stands for it


def test_fnv1a_is_the_published_hash_on_ascii_and_fasttexts_above_it():
    for text in ["", "a", "<wh", "where>", "foobar"]:
        assert fnv1a(text) == fnv1a_by_definition(text.encode())
    assert fnv1a("a") == 0xE40C292C  # the FNV test vector for "a"
    assert fnv1a("foobar") == 0xBF9CF968  # … and for "foobar"
    gensim_ft = pytest.importorskip("gensim.models.fasttext")
    for text in ["café", "<naï", "日本語"]:
        assert fnv1a(text) == gensim_ft.ft_hash_bytes(text.encode("utf-8"))


def test_each_word_row_holds_its_own_id_then_its_buckets():
    table = subword_table(["ab", "where"], 3, 4, buckets=1000)
    V, pad = 2, 2 + 1000
    assert table[0, 0] == 0 and table[1, 0] == 1
    ab = [V + fnv1a(g) % 1000 for g in ["<ab", "ab>", "<ab>"]]
    assert table[0].tolist() == [0, *ab] + [pad] * (table.shape[1] - 4)
    assert word_units("ab", V, 3, 4, 1000) == ab
