"""RoBERTa's FULL-SENTENCES instances (Liu et al. 2019, Sect. 4.2; data/instances.py): contiguous full
sentences packed up to the length across documents, an extra separator between documents, every token of
the pass once, a sentence split only when it alone is too long."""

import numpy as np

from seq2bert.data.instances import instance_table, packed_tokens
from seq2bert.data.masking import MaskingConfig
from seq2bert.data.pretraining import PretrainingData
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from tests.data.test_instances import HandMade

CLS, SEP, MASK = 900_001, 900_002, 900_003  # above every token of HandMade's corpora
L = 32  # max_seq_length: 30 tokens of sentences and separators a row


def table_and_rows(corpus, docs):
    table = instance_table(corpus, docs, max_seq_length=L, short_seq_prob=0.5, seed=0,
                           sentence_task="full_sentences")  # fmt: skip
    return table, [packed_tokens(corpus, docs, row, L - 2, SEP) for row in table]


def test_rows_pack_full_sentences_across_documents_with_a_separator_and_use_every_token_once():
    rng = np.random.default_rng(0)
    corpus = HandMade([rng.integers(2, 11, size=rng.integers(1, 8)).tolist() for _ in range(60)])
    docs = np.array([d for d in range(60) if d % 4 != 3])  # the held-out documents are skipped
    table, rows = table_and_rows(corpus, docs)
    # every token of the pass once, in order, and nothing else but the separators
    every = [
        t for d in docs for t in corpus.span(int(corpus.doc_sentences[d]), int(corpus.doc_sentences[d + 1]))
    ]
    assert [t for row in rows for t in row if t != SEP] == every
    crossing = 0
    for row in rows:
        assert 0 < len(row) <= L - 2 and row[0] != SEP and row[-1] != SEP
        for w, x, y in zip(row, row[1:], row[2:], strict=False):
            if SEP not in (w, x):
                assert w // 1000 == x // 1000  # a new document only after a separator …
            if x == SEP:
                assert w // 1000 != y // 1000  # … which stands between two documents
        crossing += SEP in row
    assert crossing > 0
    # full sentences: each sentence lies in one row, and a row ends only when the next sentence would not fit
    where = {}
    for i, row in enumerate(rows):
        for t in (t for t in row if t != SEP):
            where.setdefault(t // 10, set()).add(i)  # the sentence of token t: 1000 d + 10 s + k
    assert all(len(v) == 1 for v in where.values())
    firsts = set(corpus.doc_sentences[:-1].tolist())
    for i in range(len(rows) - 1):
        s = int(table[i + 1, 0])
        extra = 1 if s in firsts else 0
        assert len(rows[i]) + extra + int(corpus.lengths[s]) > L - 2


def test_a_sentence_longer_than_the_limit_alone_is_split_into_consecutive_pieces():
    corpus = HandMade([[5, 40], [3, 4]])  # 40 tokens > 30
    docs = np.arange(2)
    table, rows = table_and_rows(corpus, docs)
    assert [len(r) for r in rows] == [5, 30, 10, 7]  # [5] | 40 = 30 + 10 | [3 4], the next document
    assert rows[1] + rows[2] == corpus.span(1, 2)
    assert rows[3] == corpus.span(2, 3) + corpus.span(3, 4)  # one document: no separator
    assert table.tolist() == [[0, 1, 0, 1, 0], [1, 2, 0, 1, 0], [1, 2, 0, 1, 1], [2, 4, 1, 2, 0]]
    crossing, rows = table_and_rows(HandMade([[5, 6], [3, 4]]), docs)
    assert rows == [[0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 15, SEP, 1000, 1001, 1002, 1010, 1011, 1012, 1013]]


def test_batches_are_s_a_s_without_token_types_or_a_sentence_label_and_never_mask_separators():
    rng = np.random.default_rng(2)
    corpus = HandMade([rng.integers(2, 9, size=rng.integers(1, 5)).tolist() for _ in range(40)])
    cfg = MaskingConfig(max_seq_length=L, cls_token_id=CLS, sep_token_id=SEP, mask_token_id=MASK,
                        vocab_size=1_000_000, masked_lm_prob=0.5, max_predictions_per_seq=30)  # fmt: skip
    data = PretrainingData(corpus, np.arange(40), cfg, batch_size=8, masking="dynamic",
                           sentence_task="full_sentences")  # fmt: skip
    seen = []
    for batch in data.batches(0):
        b = data.collate(batch)
        assert set(b) == {"input_ids", "attention_mask", "labels"}  # no token types, no NSP
        for row in range(len(batch)):
            n = int(b["attention_mask"][row].sum())
            ids, labels = b["input_ids"][row, :n], b["labels"][row, :n]
            assert ids[0] == CLS and ids[-1] == SEP
            assert (labels[ids.eq(SEP) | ids.eq(CLS)] == IGNORE_INDEX).all()  # separators are never masked
            original = ids.where(labels.eq(IGNORE_INDEX), labels)
            seen += [int(t) for t in original[1:-1] if t != SEP]
    assert sorted(seen) == sorted(t for s in corpus.sentences for t in s)
    # dynamic masking: another epoch masks the same instances anew
    first, again = data.collate(data.batches(0)[0]), data.collate(data.batches(1)[0])
    assert not (set(first["input_ids"].flatten().tolist()) == set(again["input_ids"].flatten().tolist())
                and first["labels"].equal(again["labels"]))  # fmt: skip
