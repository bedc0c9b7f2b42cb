"""Pretraining instances of one pass over a prepared corpus (seq2bert/data/pretraining.py): which sentences
make the segments of each instance, and the label of the sentence task.

    nsp    BERT (Devlin et al. 2018, Sect. 3.1, Task #2; the released create_instances_from_document):
           sentences are gathered up to a target length (max_seq_length − 3; with probability
           short_seq_prob a random shorter one) and cut at a random sentence boundary into A and B; half the
           time B is replaced by a span of a random other document (IsNext = 0, NotNext = 1) and the unused
           sentences go back to the pool.
    sop    ALBERT (Lan et al. 2019, Sect. 3.1, sentence-order prediction): the same two consecutive segments
           of one document, "as negative examples the same two consecutive segments but with their order
           swapped" — half the time, label 1 = swapped, 0 = in order; both segments from one document, so the
           task is coherence, not topic. A chunk of one sentence has no order to swap: as in ALBERT's released
           create_pretraining_data.py (``len(current_chunk) == 1`` → ``is_random_next``), its B is a span of a
           random other document, as NSP's, labelled 1 (not in order) — a corpus of one-sentence documents
           still gives instances.
    none   RoBERTa (Liu et al. 2019, Sect. 4.2, without NSP) and SpanBERT (Joshi et al. 2019, Sect. 3.3,
           single-sequence training): one segment of full sentences of one document, packed up to
           max_seq_length − 2 tokens ([CLS] A [SEP]); a document's last chunk may be shorter. (RoBERTa's
           FULL-SENTENCES also runs on across documents; here an instance stays in its document, RoBERTa's
           DOC-SENTENCES.)
    full_sentences
           RoBERTa's FULL-SENTENCES (Liu et al. 2019, Sect. 4.2): "contiguous full sentences sampled from one
           or more documents, such that the total length is at most 512 tokens. Inputs may cross document
           boundaries. When we reach the end of one document, we begin sampling sentences from the next
           document and add an extra separator token between documents." Packed greedily in the order of the
           documents, every token of the pass once: <s> A </s>, A up to max_seq_length − 2 tokens with its
           separators; a sentence is split only when it alone is longer, into consecutive pieces of
           max_seq_length − 2 tokens (rows of their own). No short instances (short_seq_prob is BERT's).

A pass is a table with one row per instance, [a_start, a_end, b_start, b_end, label] in global sentence
numbers (ends exclusive; int32 while they fit): the first segment is sentences a_start … a_end − 1, the
second b_start … b_end − 1 (empty for ``none``), in the order the model reads them. A ``full_sentences``
row is [start, end, k_first, k_last, piece]: the sentences start … end − 1 of the documents at positions
k_first … k_last − 1 of the pass's document list (each document's own part of the range, so held-out
documents between them are skipped), and for a sentence split into pieces, which piece (``packed_tokens``).
"""

from __future__ import annotations

from array import array

import numpy as np

from seq2bert.errors import DataError

SENTENCE_TASKS = ("nsp", "sop", "none", "full_sentences")


def instance_table(
    corpus,
    documents: np.ndarray,
    *,
    max_seq_length: int,
    short_seq_prob: float,
    seed: int,
    sentence_task: str = "nsp",
) -> np.ndarray:
    """The instances over ``documents`` (ids) of ``corpus`` (a data.pretraining.Corpus: ``doc_sentences``,
    ``lengths``) for ``sentence_task``, one row each (module docstring). Random B segments (NSP) come from
    other documents of the same set."""
    if sentence_task not in SENTENCE_TASKS:
        raise DataError(f"sentence_task: expected one of {', '.join(SENTENCE_TASKS)}, got {sentence_task!r}")
    if sentence_task == "full_sentences":
        return full_sentence_table(corpus, documents, max_seq_length - 2)  # <s> A </s>
    rng = np.random.default_rng(seed)
    max_tokens = max_seq_length - (2 if sentence_task == "none" else 3)  # [CLS], [SEP] (, [SEP])
    rows = array("i" if len(corpus.lengths) < 2**31 else "q")  # 4 bytes a number, not a Python object
    starts, lengths = corpus.doc_sentences, corpus.lengths
    for d in documents:
        first, last = int(starts[d]), int(starts[d + 1])
        lens = lengths[first:last].tolist()  # of this document's sentences, indexed from `first`
        target = max_tokens
        if rng.random() < short_seq_prob:  # "to minimize the mismatch between pre-training and fine-tuning"
            target = int(rng.integers(2, max_tokens + 1))
        chunk_start, length, i = first, 0, first
        while i < last:
            length += lens[i - first]
            if i == last - 1 or length >= target:
                n = i + 1 - chunk_start  # sentences in the chunk
                if sentence_task == "none":
                    rows.extend((chunk_start, i + 1, i + 1, i + 1, 0))
                elif sentence_task == "sop" and n >= 2:
                    a_end = chunk_start + int(rng.integers(1, n))
                    if rng.random() < 0.5:  # the negative: B before A
                        rows.extend((a_end, i + 1, chunk_start, a_end, 1))
                    else:
                        rows.extend((chunk_start, a_end, a_end, i + 1, 0))
                else:  # NSP, and SOP's chunk of one sentence: B from another document (ALBERT's released code)
                    i = next_sentence_rows(
                        rows, corpus, documents, d, chunk_start, i, target, lens, first, rng
                    )
                chunk_start, length = i + 1, 0
            i += 1
    return np.frombuffer(rows, dtype=np.dtype(rows.typecode)).reshape(-1, 5)


def next_sentence_rows(
    rows: array,
    corpus,
    documents,
    d: int,
    chunk_start: int,
    i: int,
    target: int,
    lens: list[int],
    first: int,
    rng: np.random.Generator,
) -> int:
    """BERT's NSP instance of the chunk chunk_start … i of document d (appended to ``rows``); returns the last
    sentence used, i or earlier when a random B sent the rest of the chunk back to the pool."""
    starts, lengths = corpus.doc_sentences, corpus.lengths
    n = i + 1 - chunk_start
    a_end = chunk_start + (int(rng.integers(1, n)) if n >= 2 else 1)
    if (n == 1 or rng.random() < 0.5) and len(documents) > 1:  # B from another document
        other = d
        for _ in range(10):
            other = int(documents[rng.integers(len(documents))])
            if other != d:
                break
        o_first, o_last = int(starts[other]), int(starts[other + 1])
        b_start = int(rng.integers(o_first, o_last))
        need = target - sum(lens[chunk_start - first : a_end - first])
        b_end, got = b_start + 1, int(lengths[b_start])  # at least one sentence, as the original
        while b_end < o_last and got < need:
            got += int(lengths[b_end])
            b_end += 1
        rows.extend((chunk_start, a_end, b_start, b_end, 1))
        return a_end - 1  # the unused sentences of the chunk go back to the pool
    if n >= 2:
        rows.extend((chunk_start, a_end, a_end, i + 1, 0))
    return i


def full_sentence_table(corpus, documents: np.ndarray, max_tokens: int) -> np.ndarray:
    """FULL-SENTENCES rows (module docstring) over ``documents`` in their order: sentences are added to the
    current row while it (with one separator between documents) holds at most ``max_tokens`` tokens."""
    rows = array("i" if len(corpus.lengths) < 2**31 else "q")
    starts, lengths = corpus.doc_sentences, corpus.lengths
    start, k_first, used = -1, 0, 0  # the open row: first sentence (−1: none), first document, its tokens

    def close(end: int, k_last: int) -> None:
        nonlocal start, used
        if start >= 0:
            rows.extend((start, end, k_first, k_last, 0))
        start, used = -1, 0

    for k, d in enumerate(documents):
        first, last = int(starts[d]), int(starts[d + 1])
        for s, n in enumerate(lengths[first:last].tolist(), start=first):
            extra = 1 if start >= 0 and s == first else 0  # </s> between the documents
            if start >= 0 and used + extra + n > max_tokens:
                close(s if s > first else int(starts[documents[k - 1] + 1]), k + (s > first))
                extra = 0
            if n > max_tokens:  # alone too long: consecutive pieces, each a row
                rows.extend(x for p in range(-(-n // max_tokens)) for x in (s, s + 1, k, k + 1, p))
                continue
            if start < 0:
                start, k_first = s, k
            used += extra + n
        if start >= 0 and k == len(documents) - 1:
            close(last, k + 1)
    return np.frombuffer(rows, dtype=np.dtype(rows.typecode)).reshape(-1, 5)


def packed_tokens(corpus, documents: np.ndarray, row, max_tokens: int, separator: int) -> list[int]:
    """The tokens of a FULL-SENTENCES row: each document's sentences of the range, ``separator`` between
    documents; a piece of a sentence longer than ``max_tokens``."""
    start, end, k_first, k_last, piece = (int(x) for x in row)
    starts, out = corpus.doc_sentences, []
    for k in range(k_first, k_last):
        d = int(documents[k])
        lo, hi = max(start, int(starts[d])), min(end, int(starts[d + 1]))
        if out:
            out.append(separator)
        out.extend(corpus.span(lo, hi))
    if len(out) > max_tokens:  # one sentence, split
        out = out[piece * max_tokens : (piece + 1) * max_tokens]
    return out


def truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: np.random.Generator) -> None:
    """The released code's truncate_seq_pair: drop tokens from the longer side, at a random end, in place."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
