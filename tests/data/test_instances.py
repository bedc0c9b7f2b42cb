"""Sentence tasks of the pretraining instances (seq2bert/data/instances.py): ALBERT's sentence-order
prediction on hand-made documents, its 50/50 ratio, and the single-segment instances without a sentence task
(RoBERTa, SpanBERT), through PretrainingData's collate."""

import numpy as np
import pytest

from seq2bert.data.instances import instance_table
from seq2bert.data.masking import MaskingConfig
from seq2bert.data.pretraining import PretrainingData
from seq2bert.errors import DataError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

CLS, SEP, MASK = 101, 102, 103


class HandMade:
    """A corpus in memory with Corpus's reading interface: documents of sentences of token ids. Sentence s of
    document d holds the tokens 1000·d + 10·s + k (k < its length), so a token says where it came from."""

    def __init__(self, sentence_lengths: list[list[int]]):
        self.sentences = [
            [1000 * d + 10 * s + k for k in range(n)]
            for d, doc in enumerate(sentence_lengths)
            for s, n in enumerate(doc)
        ]
        self.lengths = np.array([len(x) for x in self.sentences], np.int32)
        self.doc_sentences = np.cumsum([0] + [len(doc) for doc in sentence_lengths])

    @property
    def num_documents(self) -> int:
        return len(self.doc_sentences) - 1

    def span(self, start: int, end: int) -> list[int]:
        return [t for s in self.sentences[start:end] for t in s]


def sop_table(corpus, seed=0, max_seq_length=32):
    docs = np.arange(corpus.num_documents)
    return instance_table(corpus, docs, max_seq_length=max_seq_length, short_seq_prob=0.0, seed=seed,
                          sentence_task="sop")  # fmt: skip


def test_sop_labels_swapped_pairs_1_and_pairs_in_order_0():
    # two documents of three sentences of 4 tokens: 12 tokens each, one chunk each at max_seq_length 32
    corpus = HandMade([[4, 4, 4], [4, 4, 4]])
    labels = set()
    for seed in range(40):
        for first_start, first_end, second_start, second_end, label in sop_table(corpus, seed):
            doc = np.searchsorted(corpus.doc_sentences, first_start, side="right") - 1
            lo, hi = corpus.doc_sentences[doc], corpus.doc_sentences[doc + 1]
            assert lo <= min(first_start, second_start) and max(first_end, second_end) <= hi  # one document
            if label == 1:  # swapped: the second segment is the one that comes first in the document
                assert second_end == first_start and second_start == lo and first_end == hi
            else:
                assert first_end == second_start and first_start == lo and second_end == hi
            labels.add(int(label))
    assert labels == {0, 1}


def test_sop_is_50_50_within_a_document_and_a_one_sentence_chunk_takes_a_random_b():
    rng = np.random.default_rng(0)
    corpus = HandMade([rng.integers(2, 9, size=rng.integers(1, 30)).tolist() for _ in range(1000)])
    table = sop_table(corpus)
    assert len(table) > 2000
    doc_of = np.searchsorted(corpus.doc_sentences, np.arange(len(corpus.lengths)), side="right") - 1
    within = doc_of[table[:, 0]] == doc_of[table[:, 2]]
    pairs, random_b = table[within], table[~within]
    assert abs(pairs[:, 4].mean() - 0.5) < 0.03
    swapped, kept = pairs[pairs[:, 4] == 1], pairs[pairs[:, 4] == 0]
    assert (swapped[:, 3] == swapped[:, 0]).all() and (kept[:, 1] == kept[:, 2]).all()  # consecutive
    # ALBERT's released code: a chunk of one sentence is A, B a span of another document, labelled 1
    assert len(random_b) and (random_b[:, 1] - random_b[:, 0] == 1).all() and (random_b[:, 4] == 1).all()
    assert (doc_of[random_b[:, 2]] == doc_of[random_b[:, 3] - 1]).all()  # B within its own document
    assert np.array_equal(table, sop_table(corpus))  # the same seed, the same instances
    assert not np.array_equal(table, sop_table(corpus, seed=1))


def test_documents_of_one_sentence_still_make_sop_instances():
    corpus = HandMade([[5]] * 20)  # before: no chunk had two sentences, so no instance at all
    table = sop_table(corpus)
    assert len(table) == 20 and (table[:, 4] == 1).all()
    assert (table[:, 0] != table[:, 2]).all()  # B from another document
    data = PretrainingData(corpus, np.arange(20), masking_config(), batch_size=20, short_seq_prob=0.0,
                           sentence_task="sop", shuffle=False)  # fmt: skip
    b = data.collate(data.batches(0)[0])
    assert b["next_sentence_label"].tolist() == [1] * 20 and b["input_ids"].shape == (20, 13)


def test_nsp_is_the_default_and_an_unknown_task_is_an_error():
    corpus = HandMade([[4, 4, 4], [4, 4, 4], [5, 5]])
    docs = np.arange(3)
    default = instance_table(corpus, docs, max_seq_length=32, short_seq_prob=0.1, seed=3)
    nsp = instance_table(corpus, docs, max_seq_length=32, short_seq_prob=0.1, seed=3, sentence_task="nsp")
    assert np.array_equal(default, nsp)
    with pytest.raises(DataError, match="sentence_task: expected one of nsp, sop, none"):
        instance_table(corpus, docs, max_seq_length=32, short_seq_prob=0.1, seed=3, sentence_task="order")


def masking_config(max_seq_length=32) -> MaskingConfig:
    return MaskingConfig(max_seq_length=max_seq_length, cls_token_id=CLS, sep_token_id=SEP, mask_token_id=MASK,
                         vocab_size=50_000)  # fmt: skip


def test_without_a_sentence_task_instances_are_one_segment_of_full_sentences_packed_to_the_length():
    rng = np.random.default_rng(1)
    corpus = HandMade([rng.integers(3, 9, size=rng.integers(1, 20)).tolist() for _ in range(50)])
    data = PretrainingData(corpus, np.arange(50), masking_config(), batch_size=8, short_seq_prob=0.0,
                           sentence_task="none")  # fmt: skip
    table = data.table(0)
    assert (table[:, 1] == table[:, 2]).all() and (table[:, 2] == table[:, 3]).all()  # no second segment
    ends = set(corpus.doc_sentences[1:].tolist())
    for start, end, *_ in table:
        n = int(corpus.lengths[start:end].sum())
        # full sentences up to 30 tokens: one more would reach the target (or the document ends)
        assert n >= 30 or end in ends
        assert n - int(corpus.lengths[end - 1]) < 30  # the last sentence was needed
    for batch in data.batches(0):
        b = data.collate(batch)
        assert "next_sentence_label" not in b
        assert b["input_ids"].shape[1] <= 32 and (b["token_type_ids"] == 0).all()
        for row in range(len(batch)):
            n = int(b["attention_mask"][row].sum())
            ids, labels = b["input_ids"][row, :n], b["labels"][row, :n]
            original = ids.where(labels.eq(IGNORE_INDEX), labels)
            assert original[0] == CLS and original[-1] == SEP and (original[1:-1] != SEP).all()
            docs = {int(t) // 1000 for t in original[1:-1]}
            assert len(docs) == 1  # one document


def test_sop_batches_carry_the_order_label_in_the_next_sentence_label():
    corpus = HandMade([[4, 4, 4]] * 40)
    data = PretrainingData(corpus, np.arange(40), masking_config(), batch_size=40, short_seq_prob=0.0,
                           sentence_task="sop", shuffle=False)  # fmt: skip
    b = data.collate(data.batches(0)[0])
    for row, label in enumerate(b["next_sentence_label"].tolist()):
        labels, ids = b["labels"][row], b["input_ids"][row]
        original = ids.where(labels.eq(IGNORE_INDEX), labels)[: int(b["attention_mask"][row].sum())].tolist()
        sep = original.index(SEP)
        first, second = original[1:sep], original[sep + 1 : -1]
        assert (first[0] > second[0]) == bool(label)  # swapped: the later sentences come first
        assert b["token_type_ids"][row, sep + 1 :].sum() == len(second) + 1
    with pytest.raises(DataError, match="sentence_task"):
        PretrainingData(corpus, np.arange(40), masking_config(), batch_size=8, sentence_task="order")


def test_span_boundaries_in_the_batches_bound_each_masked_run_and_give_its_positions():
    rng = np.random.default_rng(2)
    corpus = HandMade([rng.integers(3, 9, size=rng.integers(1, 20)).tolist() for _ in range(30)])
    cfg = MaskingConfig(max_seq_length=32, cls_token_id=CLS, sep_token_id=SEP, mask_token_id=MASK,
                        vocab_size=50_000, strategy="span")  # fmt: skip
    data = PretrainingData(corpus, np.arange(30), cfg, batch_size=8, short_seq_prob=0.0, sentence_task="none",
                           span_boundaries=True)  # fmt: skip
    assert "span_left" not in PretrainingData(corpus, np.arange(30), cfg, batch_size=8).collate([0])
    longest = 0
    for batch in data.batches(0):
        b = data.collate(batch)
        for row in range(len(batch)):
            masked = b["labels"][row].ne(IGNORE_INDEX)
            for i in masked.nonzero()[:, 0].tolist():
                s_1, e_1, k = (int(b[key][row, i]) for key in ("span_left", "span_right", "span_position"))
                assert s_1 < i < e_1 and k == i - s_1 - 1  # i − s
                assert not masked[s_1] and not masked[e_1] and masked[s_1 + 1 : e_1].all()  # the run's edges
                longest = max(longest, e_1 - s_1 - 1)
            assert not b["span_left"][row][~masked].any() and not b["span_position"][row][~masked].any()
    assert longest > 1  # spans of several tokens
