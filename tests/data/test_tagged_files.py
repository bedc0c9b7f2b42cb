"""A user's tagged sentences (data/tagged_files.py): CoNLL columns with the tag in any column or JSON Lines of
tokens and tags; each flaw one line naming file and line; the tag schemes detected and checked; and their
scores (evaluation/tasks.py ``tagging_metrics``) worked out by hand."""

import json
from pathlib import Path

import pytest

from seq2bert.data.conll import TaggedSentence, read_conll
from seq2bert.data.tagged_files import check_labels, check_scheme, detect_scheme, read_tagged, tagged_format
from seq2bert.errors import ConfigError, DataError
from seq2bert.evaluation.tasks import tagging_metrics
from tests.data.test_task_readers import CONLL  # word POS chunk NER, as CoNLL-2003


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def error(function, *args, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        function(*args, **kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


def jsonl(path: Path, *rows) -> Path:
    return write(path, "".join(json.dumps(row) + "\n" for row in rows))


def test_conll_columns_any_tag_column_the_last_by_default(tmp_path):
    path = write(tmp_path / "train.txt", CONLL)
    ner = read_tagged(path)
    assert ner == read_conll(path)  # the last column: CoNLL-2003's reader's sentences, ids and all
    assert [s.id for s in ner] == ["train.txt:3", "train.txt:7", "train.txt:11"]
    assert [s.tags for s in read_tagged(path, label_column="1")] == [
        ["NNP", "VBZ", "JJ"],
        ["NNP", "NNP"],
        ["NNP"],
    ]
    assert [s.tags for s in read_tagged(path, label_column="2")] == [
        ["B-NP", "B-VP", "B-NP"],
        ["B-NP", "I-NP"],
        ["B-NP"],
    ]
    assert read_tagged(path, label_column="3") == ner
    for name in ("dev.conll", "dev.tsv", "dev.iob", "dev"):  # any extension but JSON Lines': columns
        assert tagged_format(tmp_path / name) == "conll"
    tabs = write(tmp_path / "tabs.tsv", "Paris\tNNP\tB-LOC\n\nis\tVBZ\tO\n")
    assert [(s.words, s.tags) for s in read_tagged(tabs)] == [(["Paris"], ["B-LOC"]), (["is"], ["O"])]


def test_json_lines_of_tokens_and_tags(tmp_path):
    path = jsonl(
        tmp_path / "train.jsonl",
        {"tokens": ["EU", "rejects"], "tags": ["B-ORG", "O"], "id": 7},
        {"tokens": ["Peter"], "tags": ["B-PER"]},
    )
    assert read_tagged(path) == [
        TaggedSentence("train.jsonl:1", ["EU", "rejects"], ["B-ORG", "O"]),
        TaggedSentence("train.jsonl:2", ["Peter"], ["B-PER"]),
    ]
    other = jsonl(tmp_path / "pos.ndjson", {"words": ["EU"], "pos": ["NNP"]})
    assert read_tagged(other, text_column="words", label_column="pos")[0].tags == ["NNP"]
    # --format overrides the extension, both ways
    assert read_tagged(write(tmp_path / "sentences.txt", path.read_text()), "jsonl")[0].words == [
        "EU",
        "rejects",
    ]
    assert read_tagged(write(tmp_path / "x.jsonl", "EU B-ORG\n"), "conll")[0].tags == ["B-ORG"]


def test_every_flaw_of_a_file_is_one_line_naming_file_and_line(tmp_path):
    path = write(tmp_path / "train.txt", CONLL)
    assert error(read_tagged, path, label_column="4") == (
        f"{path}:3: expected at least 5 space-separated columns (word … tag in column 4), got 4: "
        "'EU NNP B-NP B-ORG'"
    )
    ragged = write(tmp_path / "ragged.txt", CONLL + "Smith NNP I-PER\n")
    assert error(read_tagged, ragged).startswith(
        f"{ragged}:12: expected 4 space-separated columns as on line 3 (word … tag), got 3"
    )
    assert error(read_tagged, write(tmp_path / "empty.txt", "\n-DOCSTART- -X- O\n\n")) == (
        f"{tmp_path / 'empty.txt'}: no sentences (expected CoNLL columns: a word and its tag per line, a blank "
        "line between sentences)"
    )
    assert error(read_tagged, write(tmp_path / "empty.jsonl", "\n")).endswith(
        "no sentences (expected JSON Lines of tokens and tags)"
    )
    lengths = jsonl(
        tmp_path / "a.jsonl", {"tokens": ["a"], "tags": ["O"]}, {"tokens": ["EU", "x"], "tags": ["O"]}
    )
    assert error(read_tagged, lengths) == f"{lengths}:2: 2 tokens and 1 tags (expected one tag per token)"
    missing = jsonl(tmp_path / "b.jsonl", {"tokens": ["EU"], "ner": ["O"]})
    assert error(read_tagged, missing) == f"{missing}:1: no 'tags' field (the line has tokens, ner)"
    ids = jsonl(tmp_path / "c.jsonl", {"tokens": ["EU"], "tags": [3]})
    assert error(read_tagged, ids).startswith(f"{ids}:1: tags[0] is int 3, expected a text without spaces")
    spaced = jsonl(tmp_path / "d.jsonl", {"tokens": ["New York"], "tags": ["B-LOC"]})
    assert error(read_tagged, spaced).startswith(f"{spaced}:1: tokens[0] is str 'New York'")
    assert error(read_tagged, jsonl(tmp_path / "e.jsonl", {"tokens": [], "tags": []})).endswith(
        ":1: no tokens (expected a sentence of at least one token)"
    )
    assert "not JSON" in error(read_tagged, write(tmp_path / "f.jsonl", '{"tokens": ["a"]\n'))
    assert "a .csv file; token classification reads CoNLL columns" in error(read_tagged, tmp_path / "x.csv")
    with pytest.raises(ConfigError, match="data.label_column: .*numbered from 0 .*got 'ner'"):
        read_tagged(path, label_column="ner")
    with pytest.raises(ConfigError, match="data.label_column: column 0 is the word"):
        read_tagged(path, label_column="0")
    with pytest.raises(
        ConfigError, match="data.format: token classification reads conll or jsonl files, got 'csv'"
    ):
        read_tagged(path, "csv")


def sentences(*tags: str) -> list[TaggedSentence]:
    """One sentence per argument, its tags space-separated; ids as a CoNLL file's (a blank line between)."""
    out, line = [], 1
    for text in tags:
        out.append(TaggedSentence(f"f.txt:{line}", ["w"] * len(text.split()), text.split()))
        line += len(text.split()) + 1
    return out


def test_schemes_are_detected_from_the_tags():
    assert detect_scheme(sentences("B-PER I-PER O B-LOC", "O B-ORG"), Path("f.txt"), "conll") == "IOB2"
    # IOB1: I- opens an entity; B- only between two of a type (CoNLL-2003's original files)
    assert detect_scheme(sentences("I-PER I-PER O", "I-LOC B-LOC O"), Path("f.txt"), "conll") == "IOB1"
    assert detect_scheme(sentences("B-LOC E-LOC O S-PER"), Path("f.txt"), "conll") == "IOBES"
    assert detect_scheme(sentences("NNP VBZ JJ", "DT NN"), Path("f.txt"), "conll") == "none"
    assert detect_scheme(sentences("B-NP I-NP B-VP"), Path("f.txt"), "conll") == "IOB2"  # chunks: entities
    assert detect_scheme(sentences("O O"), Path("f.txt"), "conll") == "IOB2"
    message = error(detect_scheme, sentences("B-PER O", "O PER"), Path("f.txt"), "conll")
    assert message == (
        "f.txt:5: tag 'PER' has no scheme prefix while 'B-PER' (f.txt:1) has one; fix the tag, or give "
        "--tag-scheme none to score tags one by one"
    )


@pytest.mark.parametrize(
    "scheme, tags, line, why",
    [
        ("IOB2", "O I-PER", 2, "I-PER after O: in IOB2 every entity starts with B-"),
        ("IOB2", "B-PER I-LOC", 2, "I-LOC after B-PER: in IOB2 every entity starts with B-"),
        ("IOB2", "S-PER", 1, "S- is IOBES's; IOB2 has B- and I- only"),
        (
            "IOB1",
            "O B-PER",
            2,
            "B-PER after O: in IOB1 an entity starts with I-, B- only after one of its type",
        ),
        ("IOBES", "B-PER O", 1, "B-PER is not continued (O follows): in IOBES it is followed by I- or E-"),
        (
            "IOBES",
            "O B-PER I-PER",
            3,
            "I-PER is not continued (the sentence ends): in IOBES it is followed by I- or E-",
        ),
        ("IOBES", "O E-PER", 2, "E-PER after O: in IOBES it continues a B-PER or I-PER"),
        ("IOB2", "O NN", 2, "not O or a prefix and an entity type (e.g. B-PER)"),
    ],
)
def test_a_tag_that_breaks_the_scheme_names_file_and_line(scheme, tags, line, why):
    message = error(
        check_scheme, sentences("O", tags), scheme, Path("f.txt"), "conll", "as --tag-scheme says"
    )
    assert message.startswith(f"f.txt:{2 + line}: tag {tags.split()[line - 1]!r}")  # the tag at fault
    assert message.endswith(f" is not {scheme} (as --tag-scheme says): {why}")


def test_files_true_to_their_scheme_pass_and_are_marked():
    cases = {
        "IOB2": "B-PER I-PER B-PER O B-LOC",
        "IOB1": "I-PER I-PER B-PER O I-LOC",
        "IOBES": "B-PER I-PER E-PER S-PER O S-LOC",
        "none": "NN I-PER whatever",
    }
    for scheme, tags in cases.items():
        found = sentences(tags)
        check_scheme(found, scheme, Path("f.txt"), "conll", "")
        assert found[0].scheme == scheme
    # a JSON Lines sentence is one line: its tags are named by it
    one = [TaggedSentence("d.jsonl:4", ["a", "b"], ["O", "I-PER"])]
    assert error(check_scheme, one, "IOB2", Path("d.jsonl"), "jsonl", "").startswith("d.jsonl:4: tag 'I-PER'")


def test_a_tag_not_among_the_labels_names_file_and_line():
    found = sentences("B-PER O", "B-LOC B-FOO")
    check_labels(found, ["O", "B-PER", "B-LOC", "B-FOO"], Path("f.txt"), "conll", "")
    message = error(
        check_labels, found, ["O", "B-PER", "B-LOC"], Path("f.txt"), "conll", "a tag of train.txt"
    )
    assert message == "f.txt:5: tag 'B-FOO' is not a tag of train.txt (O, B-PER, B-LOC)"


def test_scores_follow_the_scheme():
    """Worked out by hand: the same predictions scored in each scheme."""
    true = [["B-PER", "I-PER", "O", "B-LOC"]]
    pred = [["I-PER", "I-PER", "O", "B-LOC"]]  # a PER opened by I-
    iob2 = tagging_metrics(true, pred, "IOB2")
    # strict IOB2: I-PER after O opens no entity → predicted {LOC}, true {PER, LOC}: P 1/1, R 1/2, F1 2/3
    assert (iob2["precision"], iob2["recall"]) == (100.0, 50.0)
    assert iob2["f1"] == pytest.approx(200 / 3) and iob2["f1_PER"] == 0.0 and iob2["f1_LOC"] == 100.0
    assert iob2["accuracy"] == 75.0
    assert iob2["f1_conlleval"] == 100.0  # conlleval's rules: the I- opens PER, right
    iob1 = tagging_metrics(true, pred, "IOB1")
    assert iob1["f1"] == 100.0 and "f1_conlleval" not in iob1
    # strict IOBES: B-LOC I-LOC without E- is no entity → predicted {PER}, true {PER, LOC}
    iobes = tagging_metrics([["S-PER", "O", "B-LOC", "E-LOC"]], [["S-PER", "O", "B-LOC", "I-LOC"]], "IOBES")
    assert (iobes["precision"], iobes["recall"], iobes["accuracy"]) == (100.0, 50.0, 75.0)
    # no scheme: tokens, one by one; a word left unpredicted (None) is wrong
    assert tagging_metrics([["NN", "VBZ", "JJ", "NN"]], [["NN", "VBZ", "NN", None]], "none") == {
        "accuracy": 50.0
    }
