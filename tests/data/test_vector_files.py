"""Word vectors in word2vec text, word2vec binary and GloVe files (data/vector_files.py): each round-trips bit for
bit, is told apart from the others, reads the first ``limit`` words, loads what gensim writes and writes what
gensim loads; every flaw is one line naming the file (and line)."""

import logging
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2bert.data import vector_files
from seq2bert.data.vector_files import FORMATS, WordVectors, detect_format, read_vectors, write_vectors
from seq2bert.errors import ConfigError, DataError

WORDS = ["the", "café", "naïve", "日本語", "</s>", "a\tb", "x\u00a0y", "2007"]


def example(dim: int = 7, words: list[str] = WORDS) -> WordVectors:
    """Random float32 vectors, with values that need all 9 digits, extremes, a subnormal and -0."""
    g = torch.Generator().manual_seed(0)
    vectors = torch.randn(len(words), dim, generator=g) * 10.0 ** torch.randint(
        -6, 6, (len(words), dim), generator=g
    )
    vectors[0, :4] = torch.tensor([-0.0, 1e-45, 3.4028235e38, -1.1754942e-38])
    return WordVectors(list(words), vectors)


def same(a: WordVectors, b: WordVectors) -> bool:
    return a.words == b.words and torch.equal(a.vectors.view(torch.int32), b.vectors.view(torch.int32))


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def binary(words: list[str], vectors, header: str | None = None, end: bytes = b"\n") -> bytes:
    """A word2vec.c binary file: "V d\\n", then per word its bytes, a space, d float32 and ``end``."""
    vectors = np.asarray(vectors, dtype="<f4")
    out = (header or f"{len(words)} {vectors.shape[1]}\n").encode()
    return out + b"".join(w.encode() + b" " + v.tobytes() + end for w, v in zip(words, vectors, strict=True))


def error(function, *args, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        function(*args, **kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


# --- round trips and detection


@pytest.mark.parametrize("format", FORMATS)
def test_each_format_round_trips_bit_for_bit_and_is_detected(tmp_path, format):
    wv = example()
    path = tmp_path / f"vectors.{format}"
    write_vectors(path, wv, format)
    assert detect_format(path) == format
    assert same(read_vectors(path), wv)
    assert same(read_vectors(path, format=format), wv)


def test_the_formats_written_look_as_published(tmp_path):
    wv = WordVectors(["café", "b"], torch.tensor([[0.5, -1.0], [0.25, 3.0]]))
    write_vectors(tmp_path / "w.txt", wv, "word2vec")
    assert (tmp_path / "w.txt").read_text(encoding="utf-8") == "2 2\ncafé 0.5 -1\nb 0.25 3\n"
    write_vectors(tmp_path / "g.txt", wv, "glove")
    assert (tmp_path / "g.txt").read_text(encoding="utf-8") == "café 0.5 -1\nb 0.25 3\n"
    write_vectors(tmp_path / "w.bin", wv, "word2vec-binary")
    assert (tmp_path / "w.bin").read_bytes() == binary(["café", "b"], [[0.5, -1.0], [0.25, 3.0]])


def test_word_vectors_api():
    wv = WordVectors(["a", "b"], np.array([[1.0, 2.0], [3.0, 4.0]]))  # any array, kept as float32
    assert wv.vectors.dtype == torch.float32 and len(wv) == 2 and wv.dim == 2
    assert "b" in wv and "c" not in wv and wv.index == {"a": 0, "b": 1}
    assert wv.vector("b").tolist() == [3.0, 4.0]
    with pytest.raises(KeyError):
        wv.vector("c")
    assert repr(wv) == "WordVectors(2 words, dim 2)"
    with pytest.raises(ValueError, match=r"shape \(2, 2\) for 3 words"):
        WordVectors(["a", "b", "c"], torch.zeros(2, 2))
    with pytest.raises(ValueError, match="'a' is in rows 0 and 2"):
        WordVectors(["a", "b", "a"], torch.zeros(3, 2))


def test_binary_detected_and_read_when_its_float_bytes_hold_spaces_and_newlines(tmp_path):
    awkward = struct.unpack("<2f", b" \n \x41\n\n\n ")  # a vector whose bytes are separators
    path = write(tmp_path / "v.bin", binary(["a", "b"], [awkward, [1.0, 2.0]]))
    assert detect_format(path) == "word2vec-binary"
    assert read_vectors(path).vectors[0].numpy().tobytes() == b" \n \x41\n\n\n "
    no_newlines = write(tmp_path / "n.bin", binary(["a", "b"], [[1.0, 2.0], [3.0, 4.0]], end=b""))
    assert read_vectors(no_newlines).words == ["a", "b"]  # gensim and word2vec.c read both


def test_text_files_as_published_crlf_trailing_spaces_blank_lines_and_words_with_spaces(tmp_path):
    fasttext = write(tmp_path / "wiki.vec", "2 3\r\nthe 1 2 3 \r\n\r\nof 4 5 6 \r\n\n")
    assert detect_format(fasttext) == "word2vec"
    wv = read_vectors(fasttext)
    assert wv.words == ["the", "of"] and wv.vectors.tolist() == [[1, 2, 3], [4, 5, 6]]
    glove = write(
        tmp_path / "glove.840B.txt", "the 1 2\n. . . 3 4\nat name@domain.com 5 6\n"
    )  # as glove.840B
    assert detect_format(glove) == "glove"
    assert read_vectors(glove).words == ["the", ". . .", "at name@domain.com"]


def test_read_a_folder_of_trained_vectors(tmp_path):
    write_vectors(tmp_path / "vectors.txt", example(), "word2vec")
    assert same(read_vectors(tmp_path), example())
    assert detect_format(tmp_path) == "word2vec"
    (tmp_path / "empty").mkdir()
    message = error(read_vectors, tmp_path / "empty")
    assert message.startswith(f"{tmp_path / 'empty'}: a folder without vectors.txt")


@pytest.mark.parametrize("format", FORMATS)
def test_limit_reads_the_first_words(tmp_path, format):
    path = tmp_path / "v"
    write_vectors(path, example(), format)
    assert same(read_vectors(path, limit=3), WordVectors(WORDS[:3], example().vectors[:3]))
    assert same(read_vectors(path, limit=100), example())
    assert len(read_vectors(path, limit=0)) == 0 and read_vectors(path, limit=0).dim == 7
    with pytest.raises(ConfigError):
        read_vectors(path, limit=-1)


def test_limit_stops_before_a_flaw_further_on(tmp_path):
    path = write(tmp_path / "v.txt", "3 2\na 1 2\nb 3 4\nc x 6\n")
    assert read_vectors(path, limit=2).words == ["a", "b"]
    truncated = binary(["a", "b", "c"], [[1, 2], [3, 4], [5, 6]])[:-5]
    assert read_vectors(write(tmp_path / "v.bin", truncated), limit=2).words == ["a", "b"]


@pytest.mark.parametrize("format", FORMATS)
def test_records_and_lines_across_the_blocks_read_at_once(tmp_path, monkeypatch, format):
    monkeypatch.setattr(vector_files, "_BLOCK", 5)  # every line, every record over several blocks
    path = tmp_path / "v"
    write_vectors(path, example(), format)
    assert same(read_vectors(path), example())
    assert same(read_vectors(path, limit=5), WordVectors(WORDS[:5], example().vectors[:5]))


def test_line_numbers_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_files, "_BLOCK", 8)
    path = write(tmp_path / "g.txt", "a 1 2\n\nb 3 4\nc 5 6\nd 7 x\n")
    assert error(read_vectors, path) == f"{path}:5: value 2 of 'd' is 'x'; expected a number"
    bad = write(tmp_path / "u.txt", "a 1 2\nb 3 4\nc 5 6\nd\xe9 7 8\n".encode("latin-1"))
    assert error(read_vectors, bad) == f"{bad}:4: invalid UTF-8; expected UTF-8 text"


def test_a_repeated_word_keeps_its_first_vector_with_a_warning(tmp_path, caplog):
    path = write(tmp_path / "g.txt", "a 1 2\nb 3 4\na 5 6\nb 7 8\nc 9 0\n")
    with caplog.at_level(logging.WARNING, logger="seq2bert.data.vector_files"):
        wv = read_vectors(path)
    assert wv.words == ["a", "b", "c"] and wv.vectors.tolist() == [[1, 2], [3, 4], [9, 0]]
    [record] = caplog.records
    assert f"{path}: 2 entries repeat an earlier word" in record.getMessage()
    assert "'a', entries 1 and 3" in record.getMessage()


# --- flaws: one line naming the file and line


def test_missing_or_empty_files(tmp_path):
    assert error(read_vectors, tmp_path / "nope.txt") == f"{tmp_path / 'nope.txt'}: no such file"
    assert error(detect_format, tmp_path / "nope.txt") == f"{tmp_path / 'nope.txt'}: no such file"
    empty = write(tmp_path / "empty.txt", "")
    for format in ("auto", *FORMATS):
        assert error(read_vectors, empty, format=format).startswith(f"{empty}: empty; expected word vectors")
    blank = write(tmp_path / "blank.txt", "\n\n")
    assert error(read_vectors, blank).startswith(f"{blank}: empty")


def test_a_header_where_one_is_expected(tmp_path):
    glove = write(tmp_path / "g.txt", "the 1 2\n")
    for format in ("word2vec", "word2vec-binary"):
        message = error(read_vectors, glove, format=format)
        assert message.startswith(f"{glove}:1: expected a word2vec header 'V d'") and "'the 1 2'" in message
    assert error(read_vectors, write(tmp_path / "z.txt", "3 0\n")).startswith(f"{tmp_path / 'z.txt'}:1:")


def test_a_line_of_another_number_of_values(tmp_path):
    glove = write(tmp_path / "g.txt", "a 1 2 3\nb 4 5 6\nc 7 8\n")
    assert error(read_vectors, glove) == f"{glove}:3: 2 values for 'c', expected 3 (the dimension of line 1)"
    more = write(tmp_path / "m.txt", "a 1 2 3\n\nb 4 5 6 7\n")  # line numbers count blank lines
    assert error(read_vectors, more) == f"{more}:3: 4 values for 'b', expected 3 (the dimension of line 1)"
    w2v = write(tmp_path / "w.txt", "2 3\na 1 2 3\nb\n")
    assert (
        error(read_vectors, w2v) == f"{w2v}:3: 0 values for 'b', expected 3 (the header's dimension, line 1)"
    )
    one = write(tmp_path / "one.txt", "2 1\na 1\nb\n")
    assert error(read_vectors, one).startswith(f"{one}:3: 0 values for 'b', expected 1")
    first = write(tmp_path / "f.txt", "a\nb 1\n")
    assert error(read_vectors, first).startswith(f"{first}:1: 'a' and no values")


def test_a_glove_read_of_a_word2vec_file_points_at_its_header(tmp_path):
    path = write(tmp_path / "w.txt", "2 3\na 1 2 3\nb 4 5 6\n")
    assert "a word2vec header 'V d'? format='word2vec'" in error(read_vectors, path, format="glove")


def test_a_value_that_is_not_a_number(tmp_path):
    path = write(tmp_path / "g.txt", "a 1 2 3\nb 4 x 6\n")
    assert error(read_vectors, path) == f"{path}:2: value 2 of 'b' is 'x'; expected a number"
    spaced = write(tmp_path / "s.txt", "a 1 2 3\nb 4  6\n")  # two spaces: an empty value
    assert error(read_vectors, spaced) == f"{spaced}:2: value 2 of 'b' is ''; expected a number"


def test_text_with_fewer_or_more_words_than_its_header(tmp_path):
    fewer = write(tmp_path / "f.txt", "3 2\na 1 2\nb 3 4\n")
    assert error(read_vectors, fewer) == f"{fewer}: ends after 2 words; the header (line 1) says 3"
    more = write(tmp_path / "m.txt", "1 2\na 1 2\nb 3 4\n")
    assert error(read_vectors, more) == f"{more}:3: more words than the 1 of the header (line 1)"


def test_invalid_utf8_text(tmp_path):
    path = write(tmp_path / "g.txt", b"a 1 2\ncaf\xe9 3 4\n")
    assert error(read_vectors, path) == f"{path}:2: invalid UTF-8; expected UTF-8 text"


def test_a_truncated_binary_file(tmp_path):
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4)
    whole = binary(["a", "bé", "c"], vectors)
    cut = write(tmp_path / "cut.bin", whole[: -1 - 10])  # c's vector is 6 of its 16 bytes
    message = error(read_vectors, cut)
    assert message == f"{cut}: truncated: word 3 of 3 ('c') has 6 of 16 bytes"
    no_vector = write(tmp_path / "nv.bin", whole[: whole.rindex(b"c ") + 1])
    assert error(read_vectors, no_vector) == f"{no_vector}: truncated: word 3 of 3 ends before its vector"
    fewer = write(tmp_path / "f.bin", binary(["a", "b"], vectors[:2], header="3 4\n"))
    assert error(read_vectors, fewer) == f"{fewer}: truncated: ends after 2 words; the header (line 1) says 3"
    more = write(tmp_path / "m.bin", binary(["a", "b"], vectors[:2], header="1 4\n"))
    assert error(read_vectors, more).startswith(f"{more}: more data after the 1 words of the header")


def test_a_binary_word_that_is_not_utf8(tmp_path):
    data = binary(["a", "cafX"], [[1.0, 2.0], [3.0, 4.0]]).replace(b"cafX", b"caf\xe9")
    path = write(tmp_path / "v.bin", data)
    assert detect_format(path) == "word2vec-binary"
    assert (
        error(read_vectors, path) == f"{path}: word 2 of 2 is not UTF-8 (b'caf\\xe9'); expected UTF-8 words"
    )


def test_a_binary_file_read_as_text_and_a_text_file_read_as_binary(tmp_path):
    path = write(tmp_path / "v.bin", binary(["a", "b"], [[0.1, -2.5], [3.0, 1e-3]]))
    assert "a binary file? format='word2vec-binary'" in error(read_vectors, path, format="word2vec")
    text = tmp_path / "v.txt"
    write_vectors(text, example(), "word2vec")
    assert "a text file? format='word2vec'" in error(read_vectors, text, format="word2vec-binary")


def test_a_fasttext_model_is_not_word_vectors(tmp_path):
    path = write(tmp_path / "cc.en.300.bin", (793712314).to_bytes(4, "little") + bytes(60))
    assert error(read_vectors, path) == (
        f"{path}: a fastText model (.bin), not word vectors; read its .vec file (format 'word2vec')"
    )


@pytest.mark.parametrize(
    ("word", "problem"),
    [
        ("new york", "holds a space"),
        ("a\nb", "holds a line break"),
        ("a\rb", "holds a line break"),
        ("", "is empty"),
    ],
)
def test_a_word_a_format_cannot_hold_is_refused_and_nothing_written(tmp_path, word, problem):
    path = write(tmp_path / "v.txt", "kept")
    wv = WordVectors(["a", word], torch.zeros(2, 3))
    for format in FORMATS:
        message = error(write_vectors, path, wv, format)
        assert message == f"{path}: the word {word!r} (row 1) {problem}; the {format} format cannot hold it"
    assert path.read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["v.txt"]


def test_an_unknown_format_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="format: expected"):
        read_vectors(tmp_path, format="fasttext")
    with pytest.raises(ConfigError, match="format: expected"):
        write_vectors(tmp_path / "v", example(), "auto")


# --- gensim: its files load here, ours load there


@pytest.fixture
def gensim_data() -> Path:
    pytest.importorskip("gensim")
    from gensim.test.utils import datapath

    return Path(datapath(""))


def keyed(wv: WordVectors):
    """``wv`` as gensim's KeyedVectors."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors.numpy())
    return kv


@pytest.mark.parametrize("format", FORMATS)
def test_gensim_loads_what_we_write(tmp_path, format):
    pytest.importorskip("gensim")
    from gensim.models import KeyedVectors

    wv = example()
    path = tmp_path / "v"
    write_vectors(path, wv, format)
    kv = KeyedVectors.load_word2vec_format(
        path, binary=format == "word2vec-binary", no_header=format == "glove"
    )
    assert kv.index_to_key == wv.words
    assert np.array_equal(kv.vectors.view(np.int32), wv.vectors.numpy().view(np.int32))


@pytest.mark.parametrize("binary_file", [False, True])
def test_we_load_what_gensim_writes(tmp_path, binary_file):
    pytest.importorskip("gensim")
    wv = example()
    path = tmp_path / "v"
    keyed(wv).save_word2vec_format(str(path), binary=binary_file)
    assert detect_format(path) == ("word2vec-binary" if binary_file else "word2vec")
    assert same(read_vectors(path), wv)


@pytest.mark.parametrize(
    ("name", "format", "count", "dim"),
    [
        ("euclidean_vectors.bin", "word2vec-binary", 2747, 10),
        ("poincare_vectors.bin", "word2vec-binary", 1182, 10),
        ("high_precision.kv.bin", "word2vec-binary", 2, 2),
        ("high_precision.kv.txt", "word2vec", 2, 2),
        ("lee_fasttext.vec", "word2vec", 1762, 10),
        ("crime-and-punishment.vec", "word2vec", 291, 5),
        ("test_glove.txt", "glove", 76, 50),
    ],
)
def test_gensims_test_files(gensim_data, name, format, count, dim):
    from gensim.models import KeyedVectors

    path = gensim_data / name
    assert detect_format(path) == format
    wv = read_vectors(path)
    assert (len(wv), wv.dim) == (count, dim)
    kv = KeyedVectors.load_word2vec_format(
        path, binary=format == "word2vec-binary", no_header=format == "glove"
    )
    assert wv.words == kv.index_to_key
    assert np.array_equal(wv.vectors.numpy(), kv.vectors)
