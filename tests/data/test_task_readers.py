"""Tests for the fine-tuning readers: GLUE TSV, CoNLL-2003, SQuAD JSON, SWAG CSV; every error; the real data."""

import gzip
import json
from pathlib import Path

import pytest

from seq2bert.data.conll import TaggedSentence, label_list, read_conll
from seq2bert.data.glue import GLUE_TASKS, TextExample, get_glue_task, read_glue, read_glue_dir
from seq2bert.data.squad import Answer, QAExample, read_squad
from seq2bert.data.swag import ChoiceExample, read_swag
from seq2bert.errors import DataError


def write(path: Path, content: str | bytes, *, gz: bool = False) -> Path:
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def error_of(function, *args) -> str:
    with pytest.raises(DataError) as info:
        function(*args)
    message = str(info.value)
    assert "\n" not in message, "error messages are one line"
    return message


# ---------------------------------------------------------------------------------------------------------
# GLUE


def test_glue_tasks_registry():
    assert set(GLUE_TASKS) == {"sst2", "cola", "mrpc", "stsb", "qqp", "mnli", "mnli_mismatched", "qnli", "rte",
                               "wnli"}  # fmt: skip
    main = {name: task.main_metric for name, task in GLUE_TASKS.items()}
    assert main == {
        "sst2": "accuracy", "cola": "matthews", "mrpc": "f1", "stsb": "pearson", "qqp": "f1",
        "mnli": "accuracy", "mnli_mismatched": "accuracy", "qnli": "accuracy", "rte": "accuracy", "wnli": "accuracy",
    }  # fmt: skip
    for task in GLUE_TASKS.values():
        assert task.main_metric in task.metrics
    assert GLUE_TASKS["mnli"].labels == ("entailment", "neutral", "contradiction")  # Hugging Face order
    assert GLUE_TASKS["rte"].labels == ("entailment", "not_entailment")
    assert GLUE_TASKS["stsb"].labels is None and GLUE_TASKS["stsb"].num_labels == 1
    assert GLUE_TASKS["mnli"].dev_file == "dev_matched.tsv"
    assert GLUE_TASKS["mnli_mismatched"].dev_file == "dev_mismatched.tsv"
    assert get_glue_task("SST-2") is GLUE_TASKS["sst2"]
    assert "unknown GLUE task 'squad'" in error_of(get_glue_task, "squad")


def test_sst2_header_and_trailing_space_kept(tmp_path):
    path = write(tmp_path / "dev.tsv", "sentence\tlabel\nit 's a charming journey . \t1\nbleak \t0\n")
    assert read_glue("sst2", path) == [
        TextExample("dev-0", "it 's a charming journey . ", None, 1),
        TextExample("dev-1", "bleak ", None, 0),
    ]


def test_cola_has_no_header_and_empty_judgement(tmp_path):
    path = write(tmp_path / "dev.tsv", "gj04\t1\t\tThe sailors rode.\ngj04\t0\t*\tThe rode sailors.")
    assert read_glue("cola", path) == [
        TextExample("dev-0", "The sailors rode.", None, 1),
        TextExample("dev-1", "The rode sailors.", None, 0),
    ]


def test_mrpc_bom_header_and_unbalanced_quotes(tmp_path):
    content = (
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
        '1\t1355540\t1355592\tHe said "it fits.\t"The pie business does not fit.\r\n'
        '0\t2029631\t2029565\tHe was "100 percent" behind.\tHis wife said so.\r\n'
    )
    examples = read_glue("mrpc", write(tmp_path / "train.tsv", content))
    assert examples == [
        TextExample("train-0", 'He said "it fits.', '"The pie business does not fit.', 1),
        TextExample("train-1", 'He was "100 percent" behind.', "His wife said so.", 0),
    ]


def test_stsb_score_and_index(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    row = "7\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man dances.\tA man is dancing.\t4.750\n"
    assert read_glue("stsb", write(tmp_path / "dev.tsv", header + row)) == [
        TextExample("7", "A man dances.", "A man is dancing.", 4.75)
    ]


def test_qqp_mnli_qnli_rte_wnli_layouts(tmp_path):
    qqp = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n201359\t303345\t303346\tWhy?\tHow?\t1\n"
    assert read_glue("qqp", write(tmp_path / "qqp.tsv", qqp)) == [TextExample("201359", "Why?", "How?", 1)]

    mnli_header = (
        "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
        "sentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tgold_label\n"
    )
    mnli_row = '0\t31193\t31193n\tgov\t( p )\t( h )\t(ROOT p)\t(ROOT h)\tHe said "no.\tHe agreed.\tneutral\tneutral\tneutral\n'
    assert read_glue("mnli", write(tmp_path / "mnli.tsv", mnli_header + mnli_row)) == [
        TextExample("0", 'He said "no.', "He agreed.", 1)
    ]

    qnli = "index\tquestion\tsentence\tlabel\n0\tWhat came?\tIt came.\tentailment\n1\tWho?\tNo one.\tnot_entailment\n"
    assert [e.label for e in read_glue("qnli", write(tmp_path / "qnli.tsv", qnli))] == [0, 1]
    rte = "index\tsentence1\tsentence2\tlabel\n3\tA dog ran.\tAn animal ran.\tentailment\n"
    assert read_glue("rte", write(tmp_path / "rte.tsv", rte)) == [
        TextExample("3", "A dog ran.", "An animal ran.", 0)
    ]
    wnli = "index\tsentence1\tsentence2\tlabel\n0\tI hid it.\tIt was hidden.\t1\n"
    assert read_glue(GLUE_TASKS["wnli"], write(tmp_path / "wnli.tsv", wnli))[0].label == 1


def test_test_file_without_label_column_gives_none(tmp_path):
    path = write(tmp_path / "test.tsv", "index\tsentence\n0\tuneasy mishmash of styles\n")
    assert read_glue("sst2", path) == [TextExample("0", "uneasy mishmash of styles", None, None)]


def test_glue_empty_lines_skipped(tmp_path):
    path = write(tmp_path / "dev.tsv", "sentence\tlabel\n\ngood\t1\n\n")
    assert read_glue("sst2", path) == [TextExample("dev-0", "good", None, 1)]


def test_read_glue_dir(tmp_path):
    write(
        tmp_path / "mnli" / "dev_matched.tsv",
        "index\tsentence1\tsentence2\tgold_label\n0\ta\tb\tcontradiction\n",
    )
    splits = read_glue_dir("mnli", tmp_path / "mnli")
    assert list(splits) == ["dev"] and splits["dev"][0].label == 2
    (tmp_path / "empty").mkdir()
    message = error_of(read_glue_dir, "rte", tmp_path / "empty")
    assert "no rte data in" in message and "train.tsv" in message and "dev.tsv" in message
    assert "no such directory" in error_of(read_glue_dir, "rte", tmp_path / "absent")


def test_glue_errors_name_file_and_line(tmp_path):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    rows = "1\t1\t2\ta\tb\n" * 15 + "1\t2\tonly three\n"
    mrpc = write(tmp_path / "mrpc" / "train.tsv", header + rows)
    assert error_of(read_glue, "mrpc", mrpc) == (
        f"{mrpc}:17: expected 5 tab-separated columns (Quality, #1 ID, #2 ID, #1 String, #2 String), got 3"
    )
    assert str(mrpc).endswith("mrpc/train.tsv")

    dev = write(tmp_path / "dev.tsv", "sentence\tlabel\na\t1\nb\t0\nc\t1\nd\tmaybe\n")
    assert error_of(read_glue, "sst2", dev) == f"{dev}:5: label 'maybe' is not one of 0, 1"

    rte = write(tmp_path / "rte.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tneutral\n")
    assert "rte.tsv:2: label 'neutral' is not one of entailment, not_entailment" in error_of(
        read_glue, "rte", rte
    )

    stsb = write(tmp_path / "stsb.tsv", "sentence1\tsentence2\tscore\na\tb\t5.5\n")
    assert "stsb.tsv:2: score '5.5' is not a number from 0 to 5" in error_of(read_glue, "stsb", stsb)

    cola_as_sst2 = write(tmp_path / "cola.tsv", "gj04\t1\t\tThe sailors rode.\n")
    message = error_of(read_glue, "sst2", cola_as_sst2)
    assert "cola.tsv:1: the header has no column 'sentence'" in message and "is this a sst2 file?" in message

    sst2_as_cola = write(tmp_path / "sst2.tsv", "sentence\tlabel\n")
    assert "sst2.tsv:1: expected 4 tab-separated columns (source, label, judgement, sentence), got 2" in (
        error_of(read_glue, "cola", sst2_as_cola)
    )


def test_glue_bad_bytes_and_missing_file(tmp_path):
    bad = write(tmp_path / "dev.tsv", b"sentence\tlabel\ngood\t1\nbad \xff\t0\n")
    message = error_of(read_glue, "sst2", bad)
    assert message.startswith(f"{bad}:3: invalid UTF-8") and "expected UTF-8 text" in message
    assert error_of(read_glue, "sst2", tmp_path / "nope.tsv") == f"no such file: {tmp_path / 'nope.tsv'}"
    assert "empty file" in error_of(read_glue, "sst2", write(tmp_path / "empty.tsv", ""))


# ---------------------------------------------------------------------------------------------------------
# CoNLL-2003

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""


def test_conll_sentences_docstart_and_ids(tmp_path):
    sentences = read_conll(write(tmp_path / "train.txt", CONLL))
    assert sentences == [
        TaggedSentence("train.txt:3", ["EU", "rejects", "German"], ["B-ORG", "O", "B-MISC"]),
        TaggedSentence("train.txt:7", ["Peter", "Blackburn"], ["B-PER", "I-PER"]),
        TaggedSentence("train.txt:11", ["BRUSSELS"], ["B-LOC"]),
    ]
    # a two-column file, tabs, CRLF, gzip, no blank line at the end
    two = read_conll(write(tmp_path / "two.txt.gz", "Paris\tB-LOC\r\n\r\nis O\r\nnice O", gz=True))
    assert [(s.words, s.tags) for s in two] == [(["Paris"], ["B-LOC"]), (["is", "nice"], ["O", "O"])]


def test_label_list_order():
    sentences = [
        TaggedSentence("a:1", ["x"] * 5, ["I-PER", "B-PER", "O", "B-LOC", "I-ORG"]),
        TaggedSentence("a:3", ["x"] * 3, ["B-MISC", "I-MISC", "I-LOC"]),
    ]
    assert label_list(sentences) == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "I-ORG", "B-PER", "I-PER"]
    iobes = [TaggedSentence("a:1", ["x"] * 4, ["S-PER", "E-PER", "I-PER", "B-PER"])]
    assert label_list(iobes) == ["B-PER", "I-PER", "E-PER", "S-PER"]


def test_conll_errors(tmp_path):
    one_column = write(tmp_path / "train.txt", "EU NNP B-NP B-ORG\nrejects\n")
    message = error_of(read_conll, one_column)
    assert message.startswith(f"{one_column}:2: expected at least 2 space-separated columns")
    bad = write(tmp_path / "valid.txt", b"EU B-ORG\n\nK\xf6ln B-LOC\n")
    assert error_of(read_conll, bad).startswith(f"{bad}:3: invalid UTF-8")
    assert "no such file" in error_of(read_conll, tmp_path / "test.txt")
    short = write(tmp_path / "short.txt", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP\n")
    message = error_of(read_conll, short)
    assert message.startswith(f"{short}:4: expected 4 space-separated columns as on line 3")


# ---------------------------------------------------------------------------------------------------------
# SQuAD

CONTEXT = "The Normans gave their name to Normandy, a region in France."


def squad_json(qas: list[dict], *, context: str = CONTEXT) -> dict:
    return {
        "version": "1.1",
        "data": [{"title": "Normans", "paragraphs": [{"context": context, "qas": qas}]}],
    }


def qa(id_: str, *answers: tuple[str, int], **extra) -> dict:
    entry = {"id": id_, "question": f"question {id_}?"}
    entry["answers"] = [{"text": text, "answer_start": start} for text, start in answers]
    return entry | extra


def test_squad_v1_plain_and_gzip(tmp_path):
    data = squad_json([qa("q1", ("France", 53), ("in France", 50)), qa("q2", ("Normandy", 31))])
    plain = read_squad(write(tmp_path / "dev.json", json.dumps(data)))
    assert plain[0] == QAExample(
        "q1", "Normans", CONTEXT, "question q1?", [Answer("France", 53), Answer("in France", 50)], False
    )
    assert plain[0].answers[0].end == 59 and CONTEXT[53:59] == "France"
    assert read_squad(write(tmp_path / "dev.json.gz", json.dumps(data), gz=True)) == plain


def test_squad_v2_impossible_questions(tmp_path):
    data = squad_json(
        [
            qa("q1", ("France", 53), is_impossible=False),
            qa("q2", is_impossible=True, plausible_answers=[{"text": "Normans", "answer_start": 4}]),
        ]
    )
    examples = read_squad(write(tmp_path / "dev-v2.0.json", json.dumps(data)))
    assert [(e.id, e.is_impossible, len(e.answers)) for e in examples] == [("q1", False, 1), ("q2", True, 0)]


def test_squad_errors_name_json_path_or_id(tmp_path):
    def fails(data, name: str = "dev-v1.1.json") -> str:
        return error_of(read_squad, write(tmp_path / name, json.dumps(data)))

    no_question = squad_json([qa("q1", ("France", 53)), qa("q2", ("France", 53))])
    del no_question["data"][0]["paragraphs"][0]["qas"][1]["question"]
    path = tmp_path / "dev-v1.1.json"
    assert fails(no_question) == f"{path}: data[0].paragraphs[0].qas[1]: no 'question'"

    assert fails({"version": "1.1"}) == f"{path}: no 'data'"
    assert fails([]) == f"{path}: expected an object, got an array"
    bad_type = squad_json([qa("q1", ("France", 53))])
    bad_type["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = "53"
    assert fails(bad_type).endswith(
        "data[0].paragraphs[0].qas[0].answers[0].answer_start: expected an integer, got a string"
    )

    shifted = fails(squad_json([qa("56ddde6b", ("France", 52))]))
    assert "question '56ddde6b'" in shifted and "answer 'France' is not at answer_start=52" in shifted
    assert "' Franc'" in shifted

    assert "question 'q1'" in fails(squad_json([qa("q1")])) and "no answers" in fails(squad_json([qa("q1")]))
    both = fails(squad_json([qa("q1", ("France", 53), is_impossible=True)]))
    assert "question 'q1'" in both and "is_impossible is true" in both
    repeated = fails(squad_json([qa("q1", ("France", 53)), qa("q1", ("France", 53))]))
    assert "question 'q1'" in repeated and "repeated" in repeated


def test_squad_file_errors(tmp_path):
    assert error_of(read_squad, tmp_path / "absent.json") == f"no such file: {tmp_path / 'absent.json'}"
    broken = write(tmp_path / "broken.json", '{"data": [\n  {"title": }\n]}')
    assert error_of(read_squad, broken).startswith(f"{broken}:2: invalid JSON")
    bad_bytes = write(tmp_path / "bytes.json", b'{"data": [],\n"title": "K\xf6ln"}')
    assert error_of(read_squad, bad_bytes).startswith(f"{bad_bytes}:2: invalid UTF-8")
    corrupt = write(tmp_path / "corrupt.json.gz", gzip.compress(b'{"data": []}')[:-6])
    assert str(corrupt) in error_of(read_squad, corrupt)


# ---------------------------------------------------------------------------------------------------------
# SWAG

SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
SWAG_ROW = (
    '0,anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street, holding instruments. '
    'A drum line","Members of the procession walk down the street, holding instruments.",A drum line,gold,'
    '"passes by walking down the street playing their instruments.",has heard approaching them.,'
    '"arrives and they\'re outside dancing and asleep.","turns the lead singer watches the ""show"".",0\n'
)


def test_swag_quoted_csv(tmp_path):
    examples = read_swag(write(tmp_path / "val.csv", SWAG_HEADER + SWAG_ROW))
    assert examples == [
        ChoiceExample(
            id="0",
            context="Members of the procession walk down the street, holding instruments.",
            start="A drum line",
            endings=[
                "passes by walking down the street playing their instruments.",
                "has heard approaching them.",
                "arrives and they're outside dancing and asleep.",
                'turns the lead singer watches the "show".',
            ],
            label=0,
        )
    ]


def test_swag_test_file_without_label_and_multiline_field(tmp_path):
    header = "video-id,sent1,sent2,ending0,ending1,ending2,ending3\n"
    rows = 'v1,"One\nline more",He,a,b,c,d\nv2,Two,She,e,f,g,h\n'
    examples = read_swag(write(tmp_path / "test.csv.gz", header + rows, gz=True))
    assert [(e.id, e.context, e.label) for e in examples] == [
        ("test-0", "One\nline more", None),
        ("test-1", "Two", None),
    ]


def test_swag_errors(tmp_path):
    short = write(tmp_path / "val.csv", SWAG_HEADER + SWAG_ROW + "1,v,1,x,y,z\n")
    message = error_of(read_swag, short)
    assert message.startswith(f"{short}:3: expected 12 comma-separated fields") and message.endswith("got 6")
    assert '(""' in message and "ending3, label)" in message
    bad_label = write(tmp_path / "train.csv", SWAG_HEADER + SWAG_ROW.replace(",0\n", ",4\n"))
    assert error_of(read_swag, bad_label) == f"{bad_label}:2: label '4' is not one of 0, 1, 2, 3"
    no_endings = write(tmp_path / "other.csv", "a,b,sent1,sent2\n1,2,3,4\n")
    assert "other.csv:1: the header has no column ending0, ending1, ending2, ending3" in error_of(
        read_swag, no_endings
    )
    unclosed = write(tmp_path / "unclosed.csv", SWAG_HEADER + '0,v,1,"never closed,y\n')
    assert error_of(read_swag, unclosed).startswith(f"{unclosed}:2: malformed CSV")
    assert "no such file" in error_of(read_swag, tmp_path / "absent.csv")
    assert "empty file" in error_of(read_swag, write(tmp_path / "empty.csv", "\n"))
    bad_bytes = write(tmp_path / "bytes.csv", SWAG_HEADER.encode() + b"0,\xff\n")
    assert error_of(read_swag, bad_bytes).startswith(f"{bad_bytes}:2: invalid UTF-8")


# ---------------------------------------------------------------------------------------------------------
# The real data in ../shared/data

GLUE_COUNTS = {
    "sst2": {"train": 67349, "dev": 872},
    "mrpc": {"train": 3668, "dev": 408},
    "rte": {"train": 2490, "dev": 277},
    "cola": {"train": 8551, "dev": 1043},
    "stsb": {"train": 5749, "dev": 1500},
    "qnli": {"dev": 5463},
}


def needs(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"needs {path} (absent on this machine)")
    return path


@pytest.mark.data
@pytest.mark.parametrize("task", sorted(GLUE_COUNTS))
def test_real_glue(shared_data, task):
    splits = read_glue_dir(task, needs(shared_data / task))
    assert {split: len(examples) for split, examples in splits.items()} == GLUE_COUNTS[task]
    spec = GLUE_TASKS[task]
    for examples in splits.values():
        assert all(e.text_a for e in examples)
        assert all((e.text_b is None) == (spec.text_b is None) for e in examples)
        if spec.labels is None:
            assert all(0.0 <= e.label <= 5.0 for e in examples)
        else:
            assert {e.label for e in examples} == set(range(len(spec.labels)))


@pytest.mark.data
def test_real_glue_details(shared_data):
    mrpc = read_glue("mrpc", needs(shared_data / "mrpc" / "dev.tsv"))
    assert sum(e.label for e in mrpc) == 279  # BOM header read; 279 paraphrases
    assert mrpc[0].text_b.startswith('"The foodservice pie business')  # an unclosed quote stays text
    sst2 = read_glue("sst2", needs(shared_data / "sst2" / "train.tsv"))
    assert sum(e.label for e in sst2) == 37569
    rte = read_glue("rte", needs(shared_data / "rte" / "train.tsv"))
    assert [e.id for e in rte] == [str(i) for i in range(2490)]


@pytest.mark.data
def test_real_conll(shared_data):
    folder = needs(shared_data / "conll2003")
    for split, (n_sentences, n_tokens, n_per) in {
        "train": (14041, 203621, 6600),
        "valid": (3250, 51362, 1842),
    }.items():
        sentences = read_conll(folder / f"{split}.txt")
        assert len(sentences) == n_sentences
        assert sum(len(s) for s in sentences) == n_tokens
        assert sum(s.tags.count("B-PER") for s in sentences) == n_per
        assert label_list(sentences) == [
            "O",
            "B-LOC",
            "I-LOC",
            "B-MISC",
            "I-MISC",
            "B-ORG",
            "I-ORG",
            "B-PER",
            "I-PER",
        ]


@pytest.mark.data
@pytest.mark.slow
def test_real_squad(shared_data):
    folder = needs(shared_data / "squad")
    dev = read_squad(needs(folder / "dev-v1.1.json.gz"))
    assert len(dev) == 10570 and sum(len(e.answers) for e in dev) == 34726
    assert len({e.context for e in dev}) <= 2067 and not any(e.is_impossible for e in dev)
    train = read_squad(needs(folder / "train-v1.1.reconstructed.json.gz"))
    assert len(train) == 87599 and all(len(e.answers) == 1 for e in train)
    dev2 = read_squad(needs(folder / "dev-v2.0.reconstructed.json.gz"))
    assert len(dev2) == 11873 and sum(e.is_impossible for e in dev2) == 5945
    assert all(not e.answers for e in dev2 if e.is_impossible)
