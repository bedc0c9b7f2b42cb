"""Tests for GPT's byte-pair encodings (seq2bert.data.gpt_bpe) through seq2bert.data.tokenization.Tokenizer.

Vocabularies are trained on the small generated corpus of test_tokenization plus its odd texts; parity is
checked against transformers' GPT2Tokenizer / OpenAIGPTTokenizer loaded from the files we write (once from
vocab.json + merges.txt alone, once from the saved folder with its tokenizer.json), and against short
re-implementations of GPT-2's encoder.py and GPT-1's bpe(), which do not use the tokenizers library.
"""

import json
import math
import os
import shutil
from functools import cache
from pathlib import Path

import pytest
from tokenizers import normalizers, pre_tokenizers

from seq2bert.cli import main
from seq2bert.commands.tools import TOKENIZER_KINDS
from seq2bert.data import gpt_bpe
from seq2bert.data.tokenization import KINDS, Tokenizer
from seq2bert.errors import DataError, UserError
from tests.data.test_tokenization import FRAGMENTS, make_corpus, parity_pairs, parity_texts

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers reads our files only

GPT_KINDS = ["bytelevel-bpe", "gpt1-bpe"]
EOT = "<|endoftext|>"


def corpus() -> list[str]:
    return make_corpus(300) + FRAGMENTS


@cache
def trained(kind: str) -> Tokenizer:
    return Tokenizer.train(corpus(), kind=kind, vocab_size=400, min_frequency=2)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """Per kind: the folder Tokenizer.save wrote, and a copy holding only vocab.json + merges.txt."""
    folders = {}
    for kind in GPT_KINDS:
        folder = tmp_path_factory.mktemp(kind)
        trained(kind).save(folder / "saved")
        (folder / "files").mkdir()
        for name in ("vocab.json", "merges.txt"):
            shutil.copy(folder / "saved" / name, folder / "files" / name)
        folders[kind] = folder
    return folders


HF_CLASSES = {"bytelevel-bpe": "GPT2TokenizerFast", "gpt1-bpe": "OpenAIGPTTokenizerFast"}


@cache
def hf_tokenizer(kind: str, folder: Path):
    transformers = pytest.importorskip("transformers")
    hf = getattr(transformers, HF_CLASSES[kind]).from_pretrained(str(folder))
    assert len(hf) == trained(kind).vocab_size, "transformers did not load the vocabulary"
    return hf


@pytest.fixture(params=[(k, s) for k in GPT_KINDS for s in ("files", "saved")], ids=lambda p: "-".join(p))
def pair(request, saved):
    kind, source = request.param
    return kind, trained(kind), hf_tokenizer(kind, saved[kind] / source)


# ---------------------------------------------------------------------- what was trained


def test_bytelevel_layout_is_gpt2s():
    tok = trained("bytelevel-bpe")
    vocab = tok.backend.get_vocab()
    assert tok.vocab_size == 400 and tok.token_to_id(EOT) == 399  # <|endoftext|> last, as in GPT-2
    assert set(pre_tokenizers.ByteLevel.alphabet()) <= set(vocab)  # all 256 bytes
    assert tok.unk_token_id == tok.bos_token_id == tok.eos_token_id == 399
    assert tok.pad_token_id is None and tok.cls_token_id is None
    enc = tok.encode("Hello world", "and more")
    assert EOT not in enc.tokens  # no BOS/EOS around a text, as transformers does
    first, second = tok.ids_batch(["Hello world", "and more"])
    assert enc.ids == first + second
    assert enc.type_ids == [0] * len(first) + [1] * len(second)


def test_gpt1_layout():
    tok = trained("gpt1-bpe")
    assert tok.token_to_id("<unk>") == tok.unk_token_id == 0
    assert tok.bos_token_id is None and tok.eos_token_id is None and tok.pad_token_id is None
    assert tok.tokenize("The CAT sat.") == ["the</w>", "cat</w>", "sat</w>", ".</w>"]
    assert tok.decode(tok.encode("The Café, naïve!").ids) == "the cafe , naive !"


def test_vocab_size_and_min_frequency_are_respected():
    rare = Tokenizer.train(corpus(), kind="bytelevel-bpe", vocab_size=400, min_frequency=10**6)
    assert rare.vocab_size == 257  # no pair is frequent enough: the bytes and <|endoftext|>
    small = Tokenizer.train(make_corpus(), kind="gpt1-bpe", vocab_size=100, min_frequency=1)
    assert small.vocab_size == 100


def test_endoftext_in_the_corpus_is_a_separator_not_a_word():
    texts = [f"first document{EOT}second document", "third"] * 20
    tok = Tokenizer.train(texts, kind="bytelevel-bpe", vocab_size=300, min_frequency=2)
    assert not [t for t in tok.backend.get_vocab() if "endof" in t and t != EOT]
    ids = tok.ids_batch([f"document{EOT}third"])[0]
    assert ids.count(tok.eos_token_id) == 1
    assert tok.decode(ids, skip_special_tokens=False) == f"document{EOT}third"


def test_training_is_deterministic(tmp_path):
    for kind in GPT_KINDS:
        a = Tokenizer.train(corpus(), kind=kind, vocab_size=350, min_frequency=2)
        b = Tokenizer.train(corpus(), kind=kind, vocab_size=350, min_frequency=2)
        a.save(tmp_path / kind / "a")
        b.save(tmp_path / kind / "b")
        for name in ("tokenizer.json", "vocab.json", "merges.txt"):
            first, second = (tmp_path / kind / x / name for x in "ab")
            assert first.read_bytes() == second.read_bytes(), (kind, name)


def test_training_from_a_file_equals_training_from_texts(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus()) + "\n", encoding="utf-8")
    from_file = Tokenizer.train(path, kind="bytelevel-bpe", vocab_size=400, min_frequency=2)
    from_texts = Tokenizer.train([t for t in corpus() if t], kind="bytelevel-bpe", vocab_size=400)
    assert from_file.backend.to_str() == from_texts.backend.to_str()


# ---------------------------------------------------------------------- files


@pytest.mark.parametrize("kind", GPT_KINDS)
def test_save_writes_gpts_files_and_every_way_of_loading_gives_the_same_tokenizer(saved, kind):
    folder = saved[kind] / "saved"
    assert sorted(p.name for p in folder.iterdir()) == ["merges.txt", "tokenizer.json", "vocab.json"]
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    lines = (folder / "merges.txt").read_text(encoding="utf-8").split("\n")
    assert (
        lines[0] == "#version: 0.2" and lines[-1] == "" and all(line.count(" ") == 1 for line in lines[1:-1])
    )
    assert list(vocab.values()) == list(range(len(vocab)))
    expected = trained(kind).backend.to_str()
    for path in (folder, folder / "vocab.json", folder / "merges.txt", saved[kind] / "files"):
        assert Tokenizer.from_file(path).backend.to_str() == expected, path


def test_load_errors_are_one_line_data_errors_naming_the_file(tmp_path, saved):
    folder = tmp_path / "gpt"
    shutil.copytree(saved["bytelevel-bpe"] / "files", folder)
    vocab, merges = folder / "vocab.json", folder / "merges.txt"
    good_merges = merges.read_text(encoding="utf-8")

    def load_error(pattern: str, path: Path = folder) -> None:
        with pytest.raises(DataError, match=pattern) as info:
            Tokenizer.from_file(path)
        assert "\n" not in str(info.value)

    merges.write_text(good_merges + "Ġthe cat dog\n", encoding="utf-8")
    n = good_merges.count("\n") + 1
    load_error(rf"merges.txt:{n}: expected a merge, two tokens")
    merges.write_text(good_merges + "Ġthe Ġzebra\n", encoding="utf-8")
    load_error(rf"merges.txt:{n}: the merge 'Ġthe' \+ 'Ġzebra' needs 'Ġzebra', which vocab.json lacks")
    merges.write_text(good_merges.replace("\n", "\n\n", 2), encoding="utf-8")
    load_error(r"merges.txt:2: expected a merge")
    merges.unlink()
    load_error(r"merges.txt: missing")
    merges.write_text(good_merges, encoding="utf-8")
    vocab.write_text('{"a": 0,\n "b": }', encoding="utf-8")
    load_error(r"vocab.json:2: invalid JSON")
    vocab.write_text('["a", "b"]', encoding="utf-8")
    load_error(r"vocab.json: expected a JSON object mapping each token to its id")
    vocab.write_text('{"a": 0, "b": 0}', encoding="utf-8")
    load_error(r"vocab.json: 'a' and 'b' have the same id 0")
    vocab.unlink()
    load_error(r"vocab.json: missing", merges)
    with pytest.raises(UserError, match="lowercase= applies to a vocab.txt only"):
        Tokenizer.from_file(saved["gpt1-bpe"] / "files", lowercase=True)


def test_training_argument_errors():
    with pytest.raises(UserError, match="bytelevel-bpe: 256 bytes"):
        Tokenizer.train(corpus(), kind="bytelevel-bpe", vocab_size=256)
    with pytest.raises(UserError, match="GPT-2 keeps the case"):
        Tokenizer.train(corpus(), kind="bytelevel-bpe", lowercase=True)
    with pytest.raises(DataError, match="no text to train"):
        Tokenizer.train(["", ""], kind="gpt1-bpe")


# ---------------------------------------------------------------------- parity with transformers


def test_parity_single_texts(pair):
    kind, ours, hf = pair
    for text in parity_texts():
        enc = ours.encode(text)
        expected = hf(text, return_offsets_mapping=True)
        assert enc.ids == expected["input_ids"], repr(text)
        assert enc.offsets == [tuple(o) for o in expected["offset_mapping"]], repr(text)
        assert enc.tokens == hf.convert_ids_to_tokens(enc.ids), repr(text)
        assert ours.decode(enc.ids, skip_special_tokens=False) == hf.decode(enc.ids), repr(text)
        assert ours.decode(enc.ids) == hf.decode(enc.ids, skip_special_tokens=True), repr(text)
        if kind == "bytelevel-bpe":
            assert ours.decode(enc.ids) == text  # whitespace runs, tabs, \r\n, controls, emoji, CJK: exact


def test_parity_pairs_and_batches(pair):
    _, ours, hf = pair
    pairs = parity_pairs()
    for a, b in pairs:
        expected = hf([a], [b], return_token_type_ids=True)  # the batch path keeps an empty second text
        enc = ours.encode(a, b)
        assert (enc.ids, enc.type_ids) == (expected["input_ids"][0], expected["token_type_ids"][0]), (a, b)
    texts = parity_texts()
    assert ours.ids_batch(texts) == hf(texts)["input_ids"]
    ids = hf(texts)["input_ids"]
    assert ours.decode_batch(ids) == hf.batch_decode(ids, skip_special_tokens=True)
    assert ours.decode_batch(ids, skip_special_tokens=False) == hf.batch_decode(ids)


def test_parity_special_tokens_in_text(pair):
    kind, ours, hf = pair
    special = gpt_bpe.SPECIAL[kind]
    for text in (f"a{special}b", f"Hello {special} world", special, f"{special}{special} x"):
        assert ours.encode(text).ids == hf(text)["input_ids"], text
        ids = ours.encode(text).ids
        assert ours.decode(ids, skip_special_tokens=False) == hf.decode(ids), text
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True), text
    assert (ours.unk_token_id, ours.bos_token_id, ours.eos_token_id, ours.pad_token_id) == (
        hf.unk_token_id,
        hf.bos_token_id,
        hf.eos_token_id,
        hf.pad_token_id,
    )


# ---------------------------------------------------------------------- against GPT's own algorithms


def reference_bpe(symbols: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """bpe() of GPT-2's encoder.py and GPT-1's text_utils.py: merge the lowest-ranked adjacent pair, all
    its occurrences left to right, until no adjacent pair is a merge."""
    word = list(symbols)
    while len(word) > 1:
        best = min(zip(word, word[1:], strict=False), key=lambda p: ranks.get(p, math.inf))
        if best not in ranks:
            break
        merged, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                merged.append(word[i] + word[i + 1])
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = merged
    return word


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's encoder.py: printable bytes stand for themselves, the others for chr(256 + n)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    for n, b in enumerate(b for b in range(256) if b not in bs):
        bs.append(b)
        cs.append(256 + n)
    return dict(zip(bs, map(chr, cs), strict=True))


def vocab_and_ranks(folder: Path) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    lines = (folder / "merges.txt").read_text(encoding="utf-8").split("\n")[1:-1]
    return vocab, {tuple(line.split(" ")): rank for rank, line in enumerate(lines)}


def test_bytelevel_equals_gpt2s_encoder_py(saved):
    regex = pytest.importorskip("regex")
    pattern = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    byte_encoder = bytes_to_unicode()
    vocab, ranks = vocab_and_ranks(saved["bytelevel-bpe"] / "files")
    ours = trained("bytelevel-bpe")
    for text in parity_texts():
        expected = []
        for piece in regex.findall(pattern, text):
            symbols = [byte_encoder[b] for b in piece.encode("utf-8")]
            expected += [vocab[t] for t in reference_bpe(symbols, ranks)]
        assert ours.encode(text).ids == expected, repr(text)


def test_gpt1_equals_gpt1s_bpe_on_the_same_words(saved):
    """GPT-1's bpe() on the words of BERT's basic (lower-casing) split; the split itself is the pipeline's,
    since GPT-1's own split (ftfy + spaCy) is not what transformers or we do."""
    vocab, ranks = vocab_and_ranks(saved["gpt1-bpe"] / "files")
    normalizer = normalizers.BertNormalizer(lowercase=True)
    splitter = pre_tokenizers.BertPreTokenizer()
    ours = trained("gpt1-bpe")
    checked = 0
    for text in parity_texts():
        expected = []
        for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text)):
            symbols = [*word[:-1], word[-1] + "</w>"]
            expected += [vocab.get(t, vocab["<unk>"]) for t in reference_bpe(symbols, ranks)]
            checked += 1
        assert ours.encode(text).ids == expected, repr(text)
    assert checked > 1000


@pytest.mark.parametrize("kind", GPT_KINDS)
def test_words_given_apart_are_read_as_their_running_text(kind):
    """CoNLL's words, given one by one, are encoded as the text they come from: a byte-level BPE's pieces
    carry the space before a word ("Ġthe"), which each word after a text's first (of a pair, each text's)
    gets back; GPT-1's BPE, which splits on spaces, needs none."""
    tok = trained(kind)
    words = "the river bank , a bank of the river".split()
    [enc] = tok.encode_words([words])
    assert enc.ids == tok.encode(" ".join(words)).ids
    assert [w for w in enc.word_ids if w is not None] == sorted(w for w in enc.word_ids if w is not None)
    for i, word in enumerate(words):  # each word's own pieces, where it falls in the text
        pieces = [t for t, w in zip(enc.ids, enc.word_ids, strict=True) if w == i]
        spaced = word if i == 0 else f" {word}"
        assert pieces == tok.encode(spaced if kind == "bytelevel-bpe" else word).ids
    [pair] = tok.encode_words([(words[:3], words[4:])])
    first = [t for t, s in zip(pair.ids, pair.sequence_ids, strict=True) if s == 0]
    second = [t for t, s in zip(pair.ids, pair.sequence_ids, strict=True) if s == 1]
    assert first == tok.encode("the river bank").ids and second == tok.encode("a bank of the river").ids


# ---------------------------------------------------------------------- the command line


def test_cli_kinds_are_the_tokenizer_kinds():
    assert tuple(TOKENIZER_KINDS) == KINDS


def test_cli_trains_and_encodes_gpt_vocabularies(tmp_path, capsys):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus()) + "\n", encoding="utf-8")
    for kind in GPT_KINDS:
        out = tmp_path / kind
        assert (
            main(["tokenizer", "train", "--kind", kind, "--vocab-size", "300", "--out", str(out), str(path)])
            == 0
        )
        assert "vocab.json" in capsys.readouterr().out
        assert (out / "vocab.json").is_file() and (out / "merges.txt").is_file()
        assert main(["tokenizer", "encode", str(out / "merges.txt"), "Hello world"]) == 0
        tokens = [line.split()[-1] for line in capsys.readouterr().out.splitlines()]
        assert tokens == Tokenizer.from_file(out).tokenize("Hello world")
    (tmp_path / "gpt1-bpe" / "merges.txt").write_text("#version: 0.2\nq z y\n", encoding="utf-8")
    (tmp_path / "gpt1-bpe" / "tokenizer.json").unlink()
    assert main(["tokenizer", "encode", str(tmp_path / "gpt1-bpe"), "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "merges.txt:2: expected a merge" in err
    argv = ["tokenizer", "train", "--kind", "bytelevel-bpe", "--lowercase", "--out", str(tmp_path / "x")]
    assert main([*argv, str(path)]) == 2
    assert "GPT-2 keeps the case" in capsys.readouterr().err
