"""A TSV's fields are split on tabs and nothing else (IANA text/tab-separated-values, GLUE's files): a quote is
text, read and written back as it is; a cell TSV cannot hold (a tab, a line break) is a one-line error."""

from pathlib import Path

import pytest

from seq2bert.data.tables import TableWriter, rows
from seq2bert.errors import DataError


def test_a_quote_in_a_tsv_is_text_even_one_never_closed(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text('a\tb\tscore\n"Oh, such a good person!\tSuch a bad one!"\t1.8\nplain\t"quoted"\t2\n')
    got = [row for _, row in rows(path)]
    assert got == [
        {"a": '"Oh, such a good person!', "b": 'Such a bad one!"', "score": "1.8"},
        {"a": "plain", "b": '"quoted"', "score": "2"},
    ]


def test_a_csv_keeps_its_quoting(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text('a,b\n"one, two","say ""hi"""\n')
    assert [row for _, row in rows(path)] == [{"a": "one, two", "b": 'say "hi"'}]


@pytest.mark.parametrize("name", ["out.tsv", "out.csv"])
def test_texts_with_quotes_are_written_and_read_back_as_they_were(tmp_path, name):
    texts = [{"text": 'He said "no', "label": "a"}, {"text": '"all" of it', "label": "b"}]
    with TableWriter(tmp_path / name) as out:
        out.write_all(texts)
    assert [row for _, row in rows(tmp_path / name)] == texts


def test_a_tab_or_a_line_break_in_a_tsv_cell_is_one_line_and_nothing_written(tmp_path):
    for text in ("a\ttab", "a line\nbreak"):
        target = Path(tmp_path / "out.tsv")
        with pytest.raises(DataError, match=r"out\.tsv: a TSV cell cannot hold a tab or a line break") as e:
            with TableWriter(target) as out:
                out.write({"text": "fine"})
                out.write({"text": text})
        assert "\n" not in str(e.value) and not target.exists() and not list(tmp_path.iterdir())
