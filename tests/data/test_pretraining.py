"""BERT pretraining data: preparation into memory-mapped shards, NSP instances as the released code builds
them, and masking (15 %, 80/10/10, whole words, static vs dynamic)."""

from collections import Counter

import numpy as np
import pytest

from seq2bert.data.masking import MaskingConfig
from seq2bert.data.pretraining import (
    Batches,
    Corpus,
    PretrainingData,
    instance_table,
    prepare_corpus,
    shuffled,
    split_sentences,
)
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import DataError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
)


def document(rng, n_sentences):
    sentences = []
    for _ in range(n_sentences):
        words = [WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(3, 12))]
        sentences.append(" ".join(words).capitalize() + ".")
    # hard-wrapped lines, as in the books: a paragraph spans several lines
    text = " ".join(sentences)
    return "\n".join(text[i : i + 60] for i in range(0, len(text), 60))


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.train([" ".join(WORDS)] * 20 + ["unbelievable extraordinary"] * 5, kind="wordpiece", vocab_size=80,
                           min_frequency=1, lowercase=True)  # fmt: skip


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    rng = np.random.default_rng(0)
    files = []
    for f in range(3):
        docs = [document(rng, int(rng.integers(2, 30))) for _ in range(12)]
        path = root / f"book{f}.txt"
        path.write_text("\n\n".join(docs) + "\n")
        files.append(path)
    return files


def test_split_sentences():
    assert split_sentences('He said "Go." Then he left! Why? 3 dogs ran.\nA new\nline.') == [
        'He said "Go."', "Then he left!", "Why?", "3 dogs ran.", "A new line."]  # fmt: skip
    assert split_sentences("e.g. this stays one sentence") == ["e.g. this stays one sentence"]


def test_prepare_and_read_back_across_shards(tmp_path, corpus_files, tokenizer):
    info = prepare_corpus(corpus_files, tokenizer, tmp_path / "c", shard_tokens=500, progress=False)
    assert info["documents"] == 36 and len(info["shards"]) > 2 and info["dtype"] == "uint16"
    corpus = Corpus(tmp_path / "c")
    assert corpus.num_documents == 36 and corpus.lengths.sum() == info["tokens"]
    # the sentences read back are the tokenizer's ids of the split text, in order, across shards
    text = corpus_files[1].read_text().split("\n\n")[5]
    expected = [tokenizer.encode(s, add_special_tokens=False).ids for s in split_sentences(text)]
    d = 12 + 5
    got = [corpus.sentence(s).tolist() for s in range(corpus.doc_sentences[d], corpus.doc_sentences[d + 1])]
    assert got == expected
    files = prepare_corpus(corpus_files, tokenizer, tmp_path / "f", documents="file", progress=False)
    assert files["documents"] == 3 and files["tokens"] == info["tokens"]


def test_batch_size_of_tokenization_does_not_change_the_corpus(
    tmp_path, corpus_files, tokenizer, monkeypatch
):
    """Tokenized in batches of 7 sentences (documents straddle batches) or all at once: the same bytes."""
    prepare_corpus(corpus_files, tokenizer, tmp_path / "big", progress=False)
    monkeypatch.setattr("seq2bert.data.pretraining.FLUSH_SENTENCES", 7)
    prepare_corpus(corpus_files, tokenizer, tmp_path / "small", progress=False)
    for name in ("tokens", "sentences", "documents"):
        big, small = (tmp_path / d / "shard-00000" / f"{name}.bin" for d in ("big", "small"))
        assert big.read_bytes() == small.read_bytes() and big.stat().st_size > 8


def test_bad_input_is_an_error_or_a_counted_skip(tmp_path, tokenizer):
    good = tmp_path / "good.txt"
    good.write_text("One sentence here. Another one.\n\n\n\nA second document.\n")
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\x89PNG\x00\x00\x01" * 50)
    broken = tmp_path / "latin1.txt"
    broken.write_bytes(b"Fine line.\ncaf\xe9 au lait.\n")
    with pytest.raises(DataError, match="image.bin: a binary file"):
        prepare_corpus([good, binary], tokenizer, tmp_path / "x", progress=False)
    with pytest.raises(DataError, match="latin1.txt:2: not valid UTF-8"):
        prepare_corpus([broken], tokenizer, tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()  # nothing half-made
    info = prepare_corpus([good, binary, broken], tokenizer, tmp_path / "x", skip_bad=True, progress=False)
    assert info["skipped"] == {"binary_files": 1, "bad_lines": 1, "empty_documents": 0}
    assert info["documents"] == 3
    with pytest.raises(DataError, match="no text"):
        prepare_corpus([binary], tokenizer, tmp_path / "y", skip_bad=True, progress=False)


def test_a_gutenberg_book_is_read_without_its_header_and_licence(tmp_path, tokenizer):
    book = tmp_path / "pg1_book.txt"
    book.write_bytes(
        "\ufeffThe Project Gutenberg eBook of Alpha, by Beta\r\n\r\nRelease date: pi rho.\r\n\r\n"
        "*** START OF THE PROJECT GUTENBERG EBOOK ALPHA ***\r\n\r\nAlpha beta gamma. Delta epsilon.\r\n\r\n"
        "Zeta eta theta.\r\n\r\n*** END OF THE PROJECT GUTENBERG EBOOK ALPHA ***\r\n\r\n"
        "Section 1. General Terms of Use and Redistributing Project Gutenberg.\r\n".encode()
    )
    plain = tmp_path / "plain.txt"
    plain.write_text("\ufeffMu nu xi.\n")
    prepare_corpus([book, plain], tokenizer, tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    sentences = [tokenizer.decode(corpus.sentence(s).tolist()) for s in range(int(corpus.doc_sentences[-1]))]
    # (the test vocabulary has no ".": decoding drops it)
    assert sentences == ["alpha beta gamma", "delta epsilon", "zeta eta theta", "mu nu xi"]


def test_instances_follow_the_released_code(tmp_path, corpus_files, tokenizer):
    prepare_corpus(corpus_files, tokenizer, tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    docs = np.arange(corpus.num_documents)
    table = instance_table(corpus, docs, max_seq_length=64, short_seq_prob=0.1, seed=0)
    doc_of = np.searchsorted(corpus.doc_sentences, np.arange(len(corpus.lengths)), side="right") - 1
    assert 0.35 < table[:, 4].mean() < 0.65  # about half NotNext
    for a_start, a_end, b_start, b_end, not_next in table:
        assert a_start < a_end and b_start < b_end
        assert doc_of[a_start] == doc_of[a_end - 1]
        if not_next:
            assert doc_of[b_start] != doc_of[a_start] and doc_of[b_start] == doc_of[b_end - 1]
        else:
            assert b_start == a_end and doc_of[b_end - 1] == doc_of[a_start]
    same = instance_table(corpus, docs, max_seq_length=64, short_seq_prob=0.1, seed=0)
    assert np.array_equal(table, same)


def make_data(tmp_path, corpus_files, tokenizer, **kw):
    prepare_corpus(corpus_files, tokenizer, tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    t = tokenizer
    cfg = MaskingConfig(max_seq_length=48, cls_token_id=t.cls_token_id, sep_token_id=t.sep_token_id,
                        mask_token_id=t.mask_token_id, pad_token_id=t.pad_token_id, vocab_size=t.vocab_size,
                        continuation=tuple(i for tok, i in t.backend.get_vocab().items() if tok.startswith("##")),
                        whole_word_masking=kw.pop("whole_word_masking", False))  # fmt: skip
    return PretrainingData(corpus, np.arange(corpus.num_documents), cfg, batch_size=8, **kw)


def test_a_sentence_longer_than_65535_tokens_widens_the_lengths(tmp_path, tokenizer):
    long = tmp_path / "long.txt"
    sentence = "Gamma " + "gamma " * 70_000 + "delta."
    long.write_text(f"Alpha beta. {sentence}\n\nEta theta. Iota kappa.\n")
    prepare_corpus([long], tokenizer, tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    n = len(tokenizer.encode(sentence, add_special_tokens=False).ids)
    assert n > 65535 and corpus.lengths.dtype == np.int32 and corpus.lengths[1] == n
    assert corpus.span(1, 2) == tokenizer.encode(sentence, add_special_tokens=False).ids


def test_shuffled_is_the_permutation_in_half_the_memory():
    order = shuffled(1000, np.random.default_rng(7))
    assert order.dtype == np.int32 and np.array_equal(order, np.random.default_rng(7).permutation(1000))


def test_batches_are_made_on_demand_and_split_between_ranks():
    order = np.random.default_rng(0).permutation(23)
    whole = Batches(order, 5 << 40, batch_size=4)
    assert len(whole) == 6 and whole[-1] == [(5 << 40) + int(i) for i in order[20:]]
    assert [i for b in whole for i in b] == [(5 << 40) + int(i) for i in order]
    ranks = [Batches(order, 0, batch_size=4, rank=r, world=2) for r in range(2)]
    assert [len(r) for r in ranks] == [3, 3] and ranks[1][0] == order[4:8].tolist()
    assert sorted(i for r in ranks for b in r for i in b) == list(range(23))
    with pytest.raises(IndexError):
        ranks[0][3]


def test_the_corpus_reads_sentences_from_disk_without_mapping_them(tmp_path, corpus_files, tokenizer):
    """Positioned reads, not memory maps: the resident memory of a run does not grow with the corpus."""
    prepare_corpus(corpus_files, tokenizer, tmp_path / "c", shard_tokens=300, progress=False)
    corpus = Corpus(tmp_path / "c")
    assert len(corpus.info["shards"]) > 2 and corpus.lengths.dtype == np.uint16  # int32 only when needed
    for shard in corpus.info["shards"]:  # the lengths are those the offsets give
        offsets = np.fromfile(tmp_path / "c" / shard["name"] / "sentences.bin", dtype=np.int64)
        assert shard["sentences"] == len(offsets) - 1
    last = corpus.doc_sentences[-2]  # the last document, in the last shard
    whole = np.fromfile(tmp_path / "c" / corpus.info["shards"][-1]["name"] / "tokens.bin", dtype=np.uint16)
    n = int(corpus.lengths[last:].sum())
    assert corpus.span(int(last), len(corpus.lengths)) == whole[len(whole) - n :].tolist()
    # no sentences past the last one: the empty B of a single segment that ends the corpus
    assert corpus.span(len(corpus.lengths), len(corpus.lengths)) == []
    assert not any(isinstance(v, np.memmap) for v in vars(corpus).values())
    tokens = tmp_path / "c" / corpus.info["shards"][-1]["name"] / "tokens.bin"
    tokens.write_bytes(tokens.read_bytes()[:-2])  # a shard cut short: a clear error, not wrong tokens
    with pytest.raises(DataError, match=r"tokens\.bin: ends before item"):
        Corpus(tmp_path / "c").span(int(last), len(corpus.lengths))


def test_collated_batches_and_the_80_10_10_rule(tmp_path, corpus_files, tokenizer):
    data = make_data(tmp_path, corpus_files, tokenizer)
    t = tokenizer
    counts, chosen, candidates = Counter(), 0, 0
    for batch_indices in data.batches(0):
        b = data.collate(batch_indices)
        ids, labels, types, mask = b["input_ids"], b["labels"], b["token_type_ids"], b["attention_mask"]
        assert ids.shape == labels.shape == types.shape and ids.shape[1] <= 48
        assert (ids[:, 0] == t.cls_token_id).all() and set(b["next_sentence_label"].tolist()) <= {0, 1}
        for row in range(ids.size(0)):
            n = int(mask[row].sum())
            original = ids[row, :n].where(labels[row, :n].eq(IGNORE_INDEX), labels[row, :n])
            seps = (
                (original == t.sep_token_id).nonzero().flatten().tolist()
            )  # a random token may be [SEP] too
            assert (
                seps[-1] == n - 1
                and (types[row, : seps[0] + 1] == 0).all()
                and (types[row, seps[0] + 1 : n] == 1).all()
            )
            picked = labels[row].ne(IGNORE_INDEX)
            assert not picked[[0, *seps]].any() and not picked[n:].any()
            candidates += n - 3
            chosen += int(picked.sum())
            for pos in picked.nonzero().flatten().tolist():
                got, original = int(ids[row, pos]), int(labels[row, pos])
                counts["mask" if got == t.mask_token_id else "same" if got == original else "random"] += 1
    total = sum(counts.values())
    assert 0.13 < chosen / candidates < 0.16  # 15 %, rounded per sequence
    assert abs(counts["mask"] / total - 0.8) < 0.04
    assert abs(counts["random"] / total - 0.1) < 0.04 and abs(counts["same"] / total - 0.1) < 0.04
    first = data.collate(data.batches(0)[0])
    again = data.collate(data.batches(0)[0])
    assert all(np.array_equal(first[k], again[k]) for k in first)  # deterministic: resumable


def test_static_masking_repeats_after_dupe_factor_and_dynamic_does_not(tmp_path, corpus_files, tokenizer):
    static = make_data(tmp_path / "s", corpus_files, tokenizer, dupe_factor=2)
    assert static.batches(0) != static.batches(1) and sorted(map(tuple, static.batches(2))) != []
    a, c = static.collate(static.batches(0)[0]), static.collate(static.batches(2)[0])
    assert [static.pass_index(e) for e in range(4)] == [0, 1, 0, 1]
    dynamic = make_data(tmp_path / "d", corpus_files, tokenizer, masking="dynamic")
    assert [dynamic.pass_index(e) for e in range(4)] == [0, 1, 2, 3]
    assert a["input_ids"].shape[0] == c["input_ids"].shape[0] == 8


def test_whole_word_masking_masks_every_piece_of_a_word(tmp_path, tokenizer):
    path = tmp_path / "words.txt"
    path.write_text(
        " ".join(["Unbelievable extraordinary alpha."] * 10) + "\n\n" + "Beta gamma delta. " * 10 + "\n"
    )
    data = make_data(tmp_path, [path], tokenizer, whole_word_masking=True)
    cont = set(data.cfg.continuation)
    assert cont, "the tokenizer should split the long words"
    for batch_indices in data.batches(0):
        b = data.collate(batch_indices)
        for row in range(b["input_ids"].size(0)):
            labels = b["labels"][row]
            original = [int(x) if x != IGNORE_INDEX else None for x in labels]
            for pos, tok in enumerate(original):
                if tok is not None and tok in cont:  # a continuation piece is masked only with its word start
                    assert original[pos - 1] is not None
