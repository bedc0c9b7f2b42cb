"""Tests for seq2bert.data.parallel: aligned files, TSV, every error message, skip_bad, real Multi30k."""

import gzip
import logging
from pathlib import Path

import pytest

from seq2bert.data.parallel import ParallelCorpus, parallel_files, read_parallel
from seq2bert.errors import DataError, UserError


def write(path: Path, content: str | bytes, *, gz: bool = False) -> Path:
    data = content.encode("utf-8") if isinstance(content, str) else content
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def read_error(*args, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        read_parallel(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message, "error messages are one line"
    return message


# ---------------------------------------------------------------------------------------------------------
# Aligned files


def test_reads_plain_and_gzip_files(tmp_path):
    src = write(tmp_path / "a.de", "Ein Hund.\nZwei Katzen.\n")
    tgt = write(tmp_path / "a.en.gz", "A dog.\nTwo cats.\n", gz=True)
    corpus = read_parallel(src, tgt)
    assert isinstance(corpus, ParallelCorpus)
    assert corpus.pairs == [("Ein Hund.", "A dog."), ("Zwei Katzen.", "Two cats.")]
    assert corpus.skipped == 0
    assert len(corpus) == 2
    assert "a.de" in corpus.source and "a.en.gz" in corpus.source


def test_gzip_recognised_by_magic_bytes_without_suffix(tmp_path):
    src = write(tmp_path / "a.src", "eins\n", gz=True)
    tgt = write(tmp_path / "a.tgt", "one\n")
    assert read_parallel(src, tgt).pairs == [("eins", "one")]


def test_plain_file_with_gz_suffix_still_reads(tmp_path):
    src = write(tmp_path / "a.de.gz", "eins\n")
    tgt = write(tmp_path / "a.en", "one\n")
    assert read_parallel(src, tgt).pairs == [("eins", "one")]


def test_strips_only_the_line_terminator(tmp_path):
    src = write(tmp_path / "a.de", "  zwei  Leerzeichen \r\nTab\there\n")
    tgt = write(tmp_path / "a.en", "x\r\ny")  # last line without a newline
    assert read_parallel(src, tgt).pairs == [("  zwei  Leerzeichen ", "x"), ("Tab\there", "y")]


def test_byte_order_mark_is_dropped(tmp_path):
    src = write(tmp_path / "a.de", "\ufeffeins\n")
    tgt = write(tmp_path / "a.en", "one\n")
    assert read_parallel(src, tgt).pairs == [("eins", "one")]


def test_empty_files_give_no_pairs(tmp_path):
    assert read_parallel(write(tmp_path / "a.de", ""), write(tmp_path / "a.en", "")).pairs == []


@pytest.mark.parametrize("short", ["src", "tgt"])
def test_mismatched_line_counts(tmp_path, short):
    long_text, short_text = "a\nb\nc\n", "a\nb\n"
    src = write(tmp_path / "a.de", short_text if short == "src" else long_text)
    tgt = write(tmp_path / "a.en", short_text if short == "tgt" else long_text)
    message = read_error(src, tgt)
    n_src, n_tgt = (2, 3) if short == "src" else (3, 2)
    assert f"a.de has {n_src} lines but " in message and f"a.en has {n_tgt}" in message


def test_mismatched_line_counts_win_over_a_bad_line(tmp_path):
    src = write(tmp_path / "a.de", "a\n\nc\n")
    tgt = write(tmp_path / "a.en", "a\nb\n")
    assert "a.de has 3 lines but" in read_error(src, tgt)


def test_mismatched_line_counts_are_an_error_even_with_skip_bad(tmp_path):
    src = write(tmp_path / "a.de", "a\nb\n")
    tgt = write(tmp_path / "a.en", "a\n")
    assert "a.de has 2 lines but" in read_error(src, tgt, skip_bad=True)


@pytest.mark.parametrize("line", ["", "   ", "\t"])
def test_empty_line(tmp_path, line):
    src = write(tmp_path / "a.de", f"eins\n{line}\ndrei\n")
    tgt = write(tmp_path / "a.en", "one\ntwo\nthree\n")
    message = read_error(src, tgt)
    assert message.endswith(
        "a.de:2: empty line (expected a sentence; pass skip_bad=True to skip bad pairs)"
    ), message


def test_empty_line_in_target_names_target_file(tmp_path):
    src = write(tmp_path / "a.de", "eins\nzwei\n")
    tgt = write(tmp_path / "a.en.gz", "one\n\n", gz=True)
    assert "a.en.gz:2: empty line" in read_error(src, tgt)


def test_invalid_utf8(tmp_path):
    src = write(tmp_path / "x.de", b"ok\nab\xffcd\n")
    tgt = write(tmp_path / "x.en", "ok\nok\n")
    assert "x.de:2: invalid UTF-8 at byte 3 (expected UTF-8 text; pass skip_bad=True" in read_error(src, tgt)


def test_line_longer_than_max_chars(tmp_path):
    src = write(tmp_path / "a.de", "kurz\n")
    tgt = write(tmp_path / "a.en", "longer\n")
    message = read_error(src, tgt, max_chars=5)
    assert "a.en:1: line has 6 characters (expected at most max_chars=5" in message
    assert read_parallel(src, tgt, max_chars=6).pairs == [("kurz", "longer")]


def test_max_chars_counts_characters_not_bytes(tmp_path):
    src = write(tmp_path / "a.de", "äöü\n")  # 3 characters, 6 bytes
    tgt = write(tmp_path / "a.en", "aou\n")
    assert read_parallel(src, tgt, max_chars=3).pairs == [("äöü", "aou")]


@pytest.mark.parametrize("skip_bad", [False, True])
def test_nul_bytes_mean_not_a_text_file(tmp_path, skip_bad):
    src = write(tmp_path / "a.de", "eins\nzw\x00ei\n")
    tgt = write(tmp_path / "a.en", "one\ntwo\n")
    message = read_error(src, tgt, skip_bad=skip_bad)
    assert "a.de:2: NUL byte at byte 3" in message and "text file" in message


def test_utf16_file_is_rejected_as_not_text(tmp_path):
    src = write(tmp_path / "a.de", "eins\n".encode("utf-16-le"))
    tgt = write(tmp_path / "a.en", "one\n")
    assert "a.de:1: NUL byte" in read_error(src, tgt)


@pytest.mark.parametrize("skip_bad", [False, True])
def test_missing_file(tmp_path, skip_bad):
    tgt = write(tmp_path / "a.en", "one\n")
    message = read_error(tmp_path / "missing.de", tgt, skip_bad=skip_bad)
    assert message == f"no such file: {tmp_path / 'missing.de'}"
    assert read_error(tmp_path / "missing.tsv") == f"no such file: {tmp_path / 'missing.tsv'}"


def test_directory_instead_of_file(tmp_path):
    tgt = write(tmp_path / "a.en", "one\n")
    assert "is a directory" in read_error(tmp_path, tgt)


def test_corrupt_gzip(tmp_path):
    data = gzip.compress(("line\n" * 1000).encode())
    src = write(tmp_path / "a.de.gz", data[: len(data) // 2])
    tgt = write(tmp_path / "a.en", "line\n" * 1000)
    assert "a.de.gz:" in (message := read_error(src, tgt)) and "corrupt gzip" in message


@pytest.mark.parametrize("max_chars", [0, -1, 1.5, True])
def test_bad_max_chars(tmp_path, max_chars):
    with pytest.raises(UserError, match="max_chars"):
        read_parallel(tmp_path / "a.tsv", max_chars=max_chars)


def test_skip_bad_skips_and_counts(tmp_path, caplog):
    src = write(tmp_path / "a.de", b"eins\n\ndrei\nvi\xe9r\nfuenf\nsechs sechs sechs\n")
    tgt = write(tmp_path / "a.en", "one\ntwo\n   \nfour\nfive\nsix\n")
    with caplog.at_level(logging.WARNING, logger="seq2bert.data.parallel"):
        corpus = read_parallel(src, tgt, skip_bad=True, max_chars=10)
    assert corpus.pairs == [("eins", "one"), ("fuenf", "five")]
    assert corpus.skipped == 4  # empty source, empty target, invalid UTF-8, too long
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "skipped 4" in warnings[0].getMessage()
    assert "a.de:2: empty line" in warnings[0].getMessage()


def test_clean_data_logs_no_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="seq2bert.data.parallel"):
        read_parallel(write(tmp_path / "a.de", "a\n"), write(tmp_path / "a.en", "b\n"), skip_bad=True)
    assert not caplog.records


# ---------------------------------------------------------------------------------------------------------
# TSV


def test_reads_tsv(tmp_path):
    path = write(tmp_path / "p.tsv", "Ein Hund.\tA dog.\r\n Zwei \t Two \n")
    corpus = read_parallel(path)
    assert corpus.pairs == [("Ein Hund.", "A dog."), (" Zwei ", " Two ")]
    assert corpus.source == str(path)


def test_reads_gzip_tsv(tmp_path):
    assert read_parallel(write(tmp_path / "p.tsv.gz", "a\tb\n", gz=True)).pairs == [("a", "b")]


@pytest.mark.parametrize(
    ("line", "found"), [("only one", "1 tab-separated column"), ("a\tb\tc", "3 tab-separated")]
)
def test_tsv_wrong_number_of_columns(tmp_path, line, found):
    path = write(tmp_path / "p.tsv", f"a\tb\n{line}\n")
    message = read_error(path)
    assert message.startswith(f"{path}:2: found {found}")
    assert "expected exactly 2: source<TAB>target; pass skip_bad=True" in message


def test_tsv_empty_column(tmp_path):
    path = write(tmp_path / "p.tsv", "a\tb\n \tb\n")
    assert f"{path}:2: empty source column (expected a sentence" in read_error(path)
    path = write(tmp_path / "q.tsv", "a\t\n")
    assert f"{path}:1: empty target column" in read_error(path)


def test_tsv_errors_invalid_utf8_and_too_long(tmp_path):
    path = write(tmp_path / "p.tsv", b"a\tb\nx\xc3\tb\n")
    assert f"{path}:2: invalid UTF-8 at byte 2" in read_error(path)
    path = write(tmp_path / "q.tsv", "a\tbbbbbb\n")
    assert f"{path}:1: target column has 6 characters (expected at most max_chars=5" in read_error(
        path, max_chars=5
    )


def test_tsv_skip_bad(tmp_path):
    path = write(tmp_path / "p.tsv", b"a\tb\nbad\n\t\nc\td\ne\tf\tg\n\xff\tx\n")
    corpus = read_parallel(path, skip_bad=True)
    assert corpus.pairs == [("a", "b"), ("c", "d")]
    assert corpus.skipped == 4


# ---------------------------------------------------------------------------------------------------------
# parallel_files


def test_parallel_files_finds_plain_and_gzip(tmp_path):
    write(tmp_path / "train.de.gz", "a\n", gz=True)
    write(tmp_path / "train.en", "b\n")
    assert parallel_files(tmp_path, "train", "de", "en") == (tmp_path / "train.de.gz", tmp_path / "train.en")


def test_parallel_files_missing_lists_what_was_looked_for(tmp_path):
    write(tmp_path / "train.de", "a\n")
    with pytest.raises(DataError) as info:
        parallel_files(tmp_path, "train", "de", "fr")
    message = str(info.value)
    assert str(tmp_path / "train.fr") in message and str(tmp_path / "train.fr.gz") in message
    assert "train.de" in message  # what is there
    with pytest.raises(DataError, match="no such directory"):
        parallel_files(tmp_path / "nowhere", "train", "de", "en")


# ---------------------------------------------------------------------------------------------------------
# The real Multi30k


@pytest.mark.data
def test_real_multi30k(shared_data):
    src, tgt = parallel_files(shared_data / "multi30k", "train", "de", "en")
    corpus = read_parallel(src, tgt)
    assert len(corpus.pairs) == 29000
    assert corpus.skipped == 0
    assert corpus.pairs[0] == (
        "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
        "Two young, White males are outside near many bushes.",
    )
    assert all(de.strip() and en.strip() for de, en in corpus.pairs)
    valid = read_parallel(*parallel_files(shared_data / "multi30k", "val", "de", "en"))
    assert len(valid.pairs) == 1014
