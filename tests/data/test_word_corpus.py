"""The corpus of static word vectors: words and counts, subsampling, the dynamic window and the negative-sampling
table — statistics checked on large samples against the formulas they implement."""

import math

import numpy as np
import pytest
import torch

from seq2bert.data.word_corpus import (
    UnigramTable,
    Vocabulary,
    WindowBatches,
    WordCorpus,
    generator_for,
    keep_probability,
    read_corpus,
    subsample,
    windows,
    words_of,
)
from seq2bert.errors import DataError


def test_words_are_runs_of_letters_lower_cased_without_punctuation():
    assert words_of("The cat's hat -- isn't it? Yes, 1999.") == [
        "the",
        "cat's",
        "hat",
        "isn't",
        "it",
        "yes",
        "1999",
    ]
    assert words_of("Paris", lowercase=False) == ["Paris"]


def test_read_corpus_counts_keeps_frequent_words_and_breaks_at_paragraphs(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("a b a c\nb a\n\nc a b d\n", encoding="utf-8")
    c = read_corpus([f], min_count=2)
    assert c.vocab.words == ["a", "b", "c"]  # a 4, b 3, c 2; d once: dropped
    assert c.vocab.counts.tolist() == [4, 3, 2]
    assert c.ids.tolist() == [0, 1, 0, 2, 1, 0, 2, 0, 1]
    assert c.sentence.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1]  # a blank line ends the paragraph
    assert c.total_words == 10
    c.vocab.save(tmp_path)
    again = Vocabulary.load(tmp_path)
    assert again.words == c.vocab.words and again.counts.tolist() == [4, 3, 2]
    c.save(tmp_path / "c.npz")
    assert WordCorpus.load(tmp_path / "c.npz", again).ids.tolist() == c.ids.tolist()


def test_an_empty_corpus_or_one_without_frequent_words_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("-- ... !\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"empty\.txt: no words in the text"):
        read_corpus([empty])
    rare = tmp_path / "rare.txt"
    rare.write_text("one two three\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"rare\.txt: no word occurs 5 times \(3 distinct words"):
        read_corpus([rare])


def test_subsampling_keeps_each_word_with_word2vec_c_probability():
    counts = np.array([50_000, 5_000, 500, 50], dtype=np.int64)
    t = 1e-3
    keep = keep_probability(counts, t)
    f = counts / counts.sum()
    expected = (np.sqrt(f / t) + 1) * t / f  # word2vec.c: (sqrt(cn / (t·N)) + 1) · t·N / cn
    assert np.allclose(keep.numpy(), expected)
    assert keep[-1] > 1  # a rare word is always kept
    ids = np.repeat(np.arange(4), counts).astype(np.int32)
    vocab = Vocabulary(["w0", "w1", "w2", "w3"], counts)
    corpus = WordCorpus(vocab, ids, np.zeros_like(ids), int(counts.sum()))
    kept = subsample(corpus, keep, generator_for(0, 0))
    observed = np.bincount(ids[kept.numpy()], minlength=4) / counts
    for w in range(3):  # binomial: within 5 standard deviations of the expected share
        p = min(1.0, float(keep[w]))
        assert abs(observed[w] - p) < 5 * math.sqrt(p * (1 - p) / counts[w]) + 1e-9
    assert observed[3] == 1.0
    assert keep_probability(counts, 0).tolist() == [1.0] * 4  # sample=0: off


def test_the_unigram_table_draws_count_to_the_three_quarters():
    counts = np.array([1000, 300, 100, 10, 1], dtype=np.int64)
    table = UnigramTable(counts, size=1_000_000)
    p = counts**0.75 / (counts**0.75).sum()
    shares = np.bincount(table.table.numpy(), minlength=5) / len(table.table)
    assert np.abs(shares - p).max() < 2e-6  # the slots hold P_n up to the table's resolution
    n = 2_000_000
    draws = table.sample((n,), generator_for(1, 2)).numpy()
    freq = np.bincount(draws, minlength=5) / n
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_the_dynamic_window_reads_one_to_window_words_each_side_inside_the_sentence():
    sentence = torch.tensor([0] * 50 + [1] * 50)
    g = generator_for(0, 1)
    context, valid = windows(sentence, 0, 100, 4, g)
    assert context.shape == valid.shape == (100, 8)
    offsets = torch.tensor([-4, -3, -2, -1, 1, 2, 3, 4])
    t = torch.arange(100)[:, None]
    assert torch.equal(context[valid], (t + offsets)[valid])
    assert bool((sentence[context][valid] == sentence[t.expand_as(context)][valid]).all())
    reach = valid.sum(1)[10:40] / 2  # positions far from the edges: R words each side
    assert set(reach.tolist()) <= {1.0, 2.0, 3.0, 4.0}
    big = windows(torch.zeros(200_000, dtype=torch.long), 10, 199_990, 5, generator_for(0, 2))[1]
    r = big.sum(1).float() / 2
    assert abs(r.mean().item() - 3.0) < 0.02  # R uniform in 1 … 5: mean 3
    assert torch.equal(big[:, :5].sum(1), big[:, 5:].sum(1))  # as many on each side


def test_window_batches_are_the_same_when_made_again_and_cover_every_kept_position():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30, 5000).astype(np.int32)
    counts = np.bincount(ids, minlength=30).astype(np.int64)
    corpus = WordCorpus(
        Vocabulary([f"w{i}" for i in range(30)], counts), ids, (np.arange(5000) // 20).astype(np.int32), 5000
    )
    for arch in ("skipgram", "cbow"):
        plan = WindowBatches(
            corpus,
            architecture=arch,
            window=3,
            negative=4,
            sample=1e-2,
            ns_exponent=0.75,
            batch_words=300,
            seed=7,
        )
        batches = plan.batches(1)
        one = plan.collate(batches[2])
        plan._stream = None
        two = plan.collate(batches[2])
        assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)
        if arch == "skipgram":
            n = sum(len(plan.collate(b)["centers"]) for b in batches)
            assert n == len(plan.stream(1)[0])  # every position of the epoch's stream is a centre once
            assert one["negatives"].shape == (len(one["contexts"]), 4)
        else:
            assert one["contexts"].shape == one["context_mask"].shape and one["negatives"].shape == (
                len(one["targets"]),
                4,
            )
