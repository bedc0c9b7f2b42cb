"""data/tables.py: a user's table — CSV, TSV, JSON Lines, Parquet — read as a stream of rows, each with
"FILE:LINE", every flaw a one-line DataError naming the file and line; TableWriter writes rows atomically."""

import json

import pytest

from seq2bert.data.tables import (
    PARQUET_BATCH,
    TableWriter,
    columns,
    require_columns,
    rows,
    table_format,
    text_value,
)
from seq2bert.errors import DataError, UserError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def test_each_format_gives_the_rows_with_where_they_are(tmp_path):
    (tmp_path / "a.csv").write_text('\ufefftext,label\n"a, quoted\nline",1\n\nplain,0\n', encoding="utf-8")
    (tmp_path / "a.tsv").write_text("text\tlabel\na b\t1\n")
    (tmp_path / "a.jsonl").write_text('{"text": "a", "labels": ["x", "y"], "n": 2}\n\n{"text": "b"}\n')
    pq.write_table(pa.table({"text": ["a", "b"], "labels": [["x"], []]}), tmp_path / "a.parquet")
    csv_rows = list(rows(tmp_path / "a.csv"))
    assert csv_rows == [
        (f"{tmp_path}/a.csv:3", {"text": "a, quoted\nline", "label": "1"}),  # a record ends on its last line
        (f"{tmp_path}/a.csv:5", {"text": "plain", "label": "0"}),  # the blank line skipped, the BOM dropped
    ]
    assert list(rows(tmp_path / "a.tsv")) == [(f"{tmp_path}/a.tsv:2", {"text": "a b", "label": "1"})]
    assert list(rows(tmp_path / "a.jsonl")) == [
        (f"{tmp_path}/a.jsonl:1", {"text": "a", "labels": ["x", "y"], "n": 2}),  # values keep their types
        (f"{tmp_path}/a.jsonl:3", {"text": "b"}),
    ]
    assert list(rows(tmp_path / "a.parquet")) == [
        (f"{tmp_path}/a.parquet:row 1", {"text": "a", "labels": ["x"]}),
        (f"{tmp_path}/a.parquet:row 2", {"text": "b", "labels": []}),
    ]
    assert columns(tmp_path / "a.parquet") == ["text", "labels"] and columns(tmp_path / "a.csv") == [
        "text",
        "label",
    ]


def test_the_format_is_the_extension_unless_given(tmp_path):
    (tmp_path / "data.txt").write_text('{"text": "a"}\n')
    assert table_format(tmp_path / "x.NDJSON") == "jsonl" and table_format(tmp_path / "x.pq") == "parquet"
    with pytest.raises(
        DataError, match=r"data.txt: cannot tell the format from the extension .*give --format"
    ):
        list(rows(tmp_path / "data.txt"))
    assert list(rows(tmp_path / "data.txt", "jsonl")) == [(f"{tmp_path}/data.txt:1", {"text": "a"})]
    with pytest.raises(UserError, match=r"--format: expected one of csv, tsv, jsonl, parquet, got 'xml'"):
        table_format(tmp_path / "data.txt", "xml")


BAD = {
    "empty file": ("t.csv", b"", "t.csv: empty (expected a header line naming the columns, then rows)"),
    "blank lines only": ("t.csv", b"\n\n", "t.csv: empty"),
    "header only": ("t.csv", b"text,label\n", "t.csv: no rows (expected a table with a header"),
    "empty JSON Lines": ("t.jsonl", b"\n", "t.jsonl: no rows"),
    "ragged row": ("t.csv", b"text,label\na,1\nb,1,x\n", "t.csv:3: 3 field(s), the header has 2 (text, label): a ragged row"),
    "short row": ("t.tsv", b"text\tlabel\nb\n", "t.tsv:2: 1 field(s), the header has 2"),
    "quote left open": ("t.csv", b'text,label\n"a,1\nb,0\n', "t.csv:3: not CSV"),
    "JSON syntax": ("t.jsonl", b'{"text": "a"}\n{"text": "b",}\n', "t.jsonl:2: not JSON ("),
    "JSON not an object": ("t.jsonl", b'["a", 1]\n', "t.jsonl:1: a JSON list, expected an object of column: value"),
    "not UTF-8": ("t.csv", b"text,label\nok,1\ncaf\xe9,1\n", "t.csv:3: not UTF-8 text (invalid continuation byte"),
    "not Parquet": ("t.parquet", b"text,label\n", "t.parquet: not a Parquet file"),
}  # fmt: skip


@pytest.mark.parametrize("name, contents, says", BAD.values(), ids=BAD.keys())
def test_every_flaw_is_one_line_naming_the_file_and_line(name, contents, says, tmp_path):
    (tmp_path / name).write_bytes(contents)
    with pytest.raises(DataError) as err:
        list(rows(tmp_path / name))
    assert str(err.value).startswith(f"{tmp_path}/{says}") and "\n" not in str(err.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match="nope.csv"):
        list(rows(tmp_path / "nope.csv"))


def test_columns_and_texts_are_checked_with_the_file_and_line(tmp_path):
    with pytest.raises(
        DataError,
        match=r"t.csv: no column 'review' \(given by --text-column\); the file's columns: text, label",
    ):
        require_columns(
            tmp_path / "t.csv", ["text", "label"], {"--text-column": "review", "--pair-column": None}
        )
    require_columns(tmp_path / "t.csv", ["text", "label"], {"--text-column": "text"})
    with pytest.raises(DataError, match=r"t.jsonl:4: column 'text' is empty \(expected a text\)"):
        text_value("t.jsonl:4", {"text": "  "}, "text")
    with pytest.raises(DataError, match=r"t.jsonl:4: column 'text' holds int 3, not a text"):
        text_value("t.jsonl:4", {"text": 3}, "text")
    with pytest.raises(DataError, match=r"t.jsonl:4: no 'text' field \(the line has label\)"):
        text_value("t.jsonl:4", {"label": 1}, "text")
    assert text_value("w", {"text": ""}, "text", allow_empty=True) == ""


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "parquet"])
def test_written_rows_read_back(ext, tmp_path):
    written = [
        {"id": i, "text": f"row {i}, with a comma", "labels": ["a", "b"][: i % 3]}
        for i in range(PARQUET_BATCH + 5)
    ]
    path = tmp_path / f"out.{ext}"
    with TableWriter(path) as out:
        out.write_all(written)
    back = [row for _, row in rows(path)]
    if ext in ("csv", "tsv"):  # a text table's cells are texts; lists are written as JSON
        written = [
            {"id": str(r["id"]), "text": r["text"], "labels": json.dumps(r["labels"])} for r in written
        ]
    assert back == written


def test_a_writer_interrupted_leaves_neither_the_file_nor_its_temporary(tmp_path):
    (tmp_path / "out.jsonl").write_text('{"old": 1}\n')
    with pytest.raises(RuntimeError), TableWriter(tmp_path / "out.jsonl") as out:
        out.write({"new": 1})
        raise RuntimeError("interrupted")
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
    assert (tmp_path / "out.jsonl").read_text() == '{"old": 1}\n'  # the old file as it was


def test_an_empty_table_written_has_its_header(tmp_path):
    with TableWriter(tmp_path / "e.csv", ["id", "label"]):
        pass
    assert (tmp_path / "e.csv").read_text().strip() == "id,label"
