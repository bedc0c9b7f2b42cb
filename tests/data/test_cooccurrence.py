"""GloVe's co-occurrence counts against a matrix computed by hand."""

import numpy as np
import torch

from seq2bert.data.cooccurrence import CooccurrenceBatches, count_cooccurrences
from seq2bert.data.word_corpus import Vocabulary, WordCorpus


def test_counts_are_symmetric_weighted_one_over_distance_and_stay_in_a_paragraph():
    # paragraph 0: a b a; paragraph 1: b c
    vocab = Vocabulary(["a", "b", "c"], np.array([2, 2, 1]))
    corpus = WordCorpus(
        vocab, np.array([0, 1, 0, 1, 2], dtype=np.int32), np.array([0, 0, 0, 1, 1], dtype=np.int32), 5
    )
    x = count_cooccurrences(corpus, window=2, chunk=2)  # chunks of 2 positions: the pass streams
    dense = torch.zeros(3, 3)
    dense[x.rows, x.cols] = x.counts
    # a-b at distance 1 twice (a b, b a); a-a at distance 2 once; b-c at distance 1 in paragraph 1
    expected = torch.tensor([[0.5 + 0.5, 2.0, 0.0], [2.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    assert torch.allclose(dense, expected)
    assert len(x) == 5  # a-a, a-b, b-a, b-c, c-b


def test_batches_visit_every_entry_once_an_epoch_in_a_new_order():
    vocab = Vocabulary(["a", "b", "c", "d"], np.array([5, 4, 3, 2]))
    rng = np.random.default_rng(0)
    corpus = WordCorpus(vocab, rng.integers(0, 4, 400).astype(np.int32), np.zeros(400, dtype=np.int32), 400)
    x = count_cooccurrences(corpus, window=3)
    plan = CooccurrenceBatches(x, batch_size=5, seed=0)
    seen = torch.cat([plan.collate(b)["rows"] * 4 + plan.collate(b)["cols"] for b in plan.batches(0)])
    assert sorted(seen.tolist()) == sorted((x.rows * 4 + x.cols).tolist())
    assert not torch.equal(plan.collate([0, 0])["rows"], plan.collate([1, 0])["rows"]) or len(x) < 3
