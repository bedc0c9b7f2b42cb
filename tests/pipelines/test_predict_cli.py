"""``seq2bert predict`` through the command line: a fine-tuning run directory is predicted with its best/
checkpoint and the column its run read, and ``seq2bert serve`` serves the same run directory; every bad input
is one line, exit status 2, and nothing written at --out."""

import json

import numpy as np
import pytest

from seq2bert.cli import main
from seq2bert.data import tables
from seq2bert.pipelines import classify
from tests.pipelines.conftest import WORDS


@pytest.fixture(scope="module")
def run(checkpoints, tmp_path_factory):
    """A two-step SST-2 fine-tuning of the tiny pretrained BERT whose run read the column "sentence"."""
    root = tmp_path_factory.mktemp("sst2")
    rng = np.random.default_rng(0)
    (root / "data").mkdir()
    for split in ("train", "dev"):
        lines = [f"{' '.join(rng.choice(WORDS, size=4))}\t{i % 2}" for i in range(16)]
        (root / "data" / f"{split}.tsv").write_text("\n".join(["sentence\tlabel", *lines]) + "\n")
    argv = ["finetune", "--task", "sst2", "--init", str(checkpoints["pretrained"]), "--data", str(root / "data"),
            "--out", str(root / "run"), "--set", "train.max_steps=2", "--set", "data.batch_size=8",
            "--set", "data.max_seq_length=32", "--set", "data.text_column=sentence"]  # fmt: skip
    assert main(argv) == 0
    return root / "run"


def write_csv(path, header: str, lines: list[str]) -> None:
    path.write_text("\n".join([header, *lines]) + "\n")


def test_a_run_directory_is_predicted_with_its_best_checkpoint_and_columns(run, tmp_path, capsys):
    texts = [" ".join(WORDS[i : i + 2 + i % 5]) for i in range(9)]
    write_csv(tmp_path / "in.csv", "id,sentence", [f"{i},{t}" for i, t in enumerate(texts)])
    out = tmp_path / "out.parquet"
    argv = [
        "predict",
        str(run),
        str(tmp_path / "in.csv"),
        "--out",
        str(out),
        "--bf16",
        "false",
        "--no-progress",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == f"{out}: 9 rows (classify)"
    got = [row for _, row in tables.rows(out)]
    want = classify(texts, str(run / "best"), bf16=False)
    assert [r["sentence"] for r in got] == texts and [r["id"] for r in got] == [str(i) for i in range(9)]
    assert [r["label"] for r in got] == [w["label"] for w in want]
    assert [r["score"] for r in got] == pytest.approx([w["score"] for w in want], abs=1e-5)


def test_serve_takes_a_fine_tuning_run_directory(run):
    """The run directory is served by its best/ checkpoint: classify answers as the checkpoint does."""
    from seq2bert.serve import ServedModel

    served = ServedModel.load("sst2", run)
    assert served.directory == run / "best"
    assert served.pipelines[0] == "classify"
    texts = ["great film", "the awful story of john"]
    answers = served.run("classify", texts, (("top_k", 1),))
    assert answers == classify(texts, str(run / "best"), batch_size=2)


def test_the_serve_command_loads_a_run_directory(run, monkeypatch):
    """`seq2bert serve RUN` loads the run (its best/), named after the run, and serves it."""
    pytest.importorskip("fastapi")
    from seq2bert.serve import app, server

    started = {}
    monkeypatch.setattr(app, "create_app", lambda models, settings: started.setdefault("models", models))
    monkeypatch.setattr(server, "serve", lambda made, sock, settings: started.setdefault("served", made))
    assert main(["serve", str(run), "--port", "0"]) == 0
    (model,) = started["served"]
    assert (model.name, model.directory) == ("run", run / "best") and "classify" in model.pipelines


def bad_inputs(tmp_path, checkpoints) -> dict:
    """{case: (argv, the error's start)}: each bad input of the issue."""
    classifier = str(checkpoints["sequence"])
    write_csv(tmp_path / "good.csv", "id,text", ["1,a great film", "2,an awful story"])
    write_csv(tmp_path / "other.csv", "id,sentence", ["1,a great film"])
    (tmp_path / "typed.jsonl").write_text('{"text": "a film"}\n{"text": 5}\n')
    (tmp_path / "listed.jsonl").write_text('{"text": ["a", "film"]}\n')
    (tmp_path / "keyless.jsonl").write_text('{"text": "a film"}\n{"id": 2}\n')
    write_csv(tmp_path / "blank.csv", "id,text", ["1,a great film", '2,""', "3,the end"])
    (tmp_path / "empty.csv").write_text("")
    write_csv(tmp_path / "header.csv", "id,text", [])
    (tmp_path / "not-a-model").mkdir()
    middle = [f"{i},{' '.join(WORDS[i % 7 : i % 7 + 3])}" for i in range(20)]
    middle[11] = "11,"  # an empty text, after two chunks of five were predicted and written
    write_csv(tmp_path / "middle.csv", "id,text", middle)
    out = str(tmp_path / "out.jsonl")
    good = str(tmp_path / "good.csv")
    return {
        "missing column": (
            ["predict", classifier, str(tmp_path / "other.csv"), "--out", out],
            f"{tmp_path / 'other.csv'}: no column 'text' (given by --column); the file's columns: id, sentence",
        ),
        "a number for a text": (
            ["predict", classifier, str(tmp_path / "typed.jsonl"), "--out", out],
            f"{tmp_path / 'typed.jsonl'}:2: column 'text' holds int 5, not a text",
        ),
        "a list for a text": (
            ["predict", classifier, str(tmp_path / "listed.jsonl"), "--out", out],
            f"{tmp_path / 'listed.jsonl'}:1: column 'text' holds list ['a', 'film'], not a text",
        ),
        "a line without the column": (
            ["predict", classifier, str(tmp_path / "keyless.jsonl"), "--out", out],
            f"{tmp_path / 'keyless.jsonl'}:2: no 'text' field (the line has id)",
        ),
        "an empty text": (
            ["predict", classifier, str(tmp_path / "blank.csv"), "--out", out],
            f"{tmp_path / 'blank.csv'}:3: column 'text' is empty (expected a text)",
        ),
        "an empty text mid-file": (
            ["predict", classifier, str(tmp_path / "middle.csv"), "--out", out, "--chunk-size", "5"],
            f"{tmp_path / 'middle.csv'}:13: column 'text' is empty (expected a text)",
        ),
        "an empty file": (
            ["predict", classifier, str(tmp_path / "empty.csv"), "--out", out],
            f"{tmp_path / 'empty.csv'}: empty (expected a header line naming the columns, then rows)",
        ),
        "a header and no rows": (
            ["predict", classifier, str(tmp_path / "header.csv"), "--out", out],
            f"{tmp_path / 'header.csv'}: no rows",
        ),
        "--out is the input": (
            ["predict", classifier, good, "--out", good],
            f"--out {good}: the input file itself",
        ),
        "--out in a missing folder": (
            ["predict", classifier, good, "--out", str(tmp_path / "nowhere" / "out.jsonl")],
            f"--out {tmp_path / 'nowhere' / 'out.jsonl'}: no folder {tmp_path / 'nowhere'}",
        ),
        "--out of no known format": (
            ["predict", classifier, good, "--out", str(tmp_path / "out.txt")],
            f"--out {tmp_path / 'out.txt'}: cannot tell the format from the extension (expected .csv, .tsv",
        ),
        "not a model": (
            ["predict", str(tmp_path / "not-a-model"), good, "--out", out],
            f"{tmp_path / 'not-a-model'}: not a checkpoint",
        ),
        "no such model": (
            ["predict", str(tmp_path / "absent"), good, "--out", out],
            f"{tmp_path / 'absent'}: no such checkpoint or run directory",
        ),
    }


CASES = ["missing column", "a number for a text", "a list for a text", "a line without the column", "an empty text", "an empty text mid-file",
         "an empty file", "a header and no rows", "--out is the input", "--out in a missing folder", "--out of no known format",
         "not a model", "no such model"]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_exit_2_and_nothing_written(case, checkpoints, tmp_path, capsys):
    argv, message = bad_inputs(tmp_path, checkpoints)[case]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"seq2bert: error: {message}"), err
    assert len(err.splitlines()) == 1
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before  # no output, no temporary file left, the input untouched


def test_the_output_of_a_chunked_run_equals_one_chunk(checkpoints, tmp_path):
    """--chunk-size changes how much is held, not what is written."""
    lines = [json.dumps({"text": " ".join(WORDS[i % 9 : i % 9 + 1 + i % 6])}) for i in range(23)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    outs = []
    for size in ("4", "100"):
        out = tmp_path / f"out-{size}.jsonl"
        argv = ["predict", str(checkpoints["sequence"]), str(tmp_path / "in.jsonl"), "--out", str(out),
                "--chunk-size", size, "--batch-size", "3", "--bf16", "false", "--no-progress"]  # fmt: skip
        assert main(argv) == 0
        outs.append([json.loads(x) for x in out.read_text().splitlines()])
    assert [r["label"] for r in outs[0]] == [r["label"] for r in outs[1]]
    assert [r["score"] for r in outs[0]] == pytest.approx([r["score"] for r in outs[1]], abs=1e-5)


def test_classify_prints_a_multi_label_model_s_labels(shapes, capsys):
    """`seq2bert classify` on a multi-label model: the labels over its threshold, comma-separated, as the
    pipeline gives them."""
    texts = [" ".join(WORDS[i : i + 3]) for i in range(5)]
    assert main(["classify", str(shapes["multi-label"]), *texts, "--bf16", "false"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    want = classify(texts, str(shapes["multi-label"]), bf16=False)
    assert [line.split("\t")[0] for line in lines] == [",".join(r["label"] for r in w) for w in want]
    assert [line.split("\t")[2] for line in lines] == texts


def test_serve_answers_a_multi_label_model_with_its_labels_over_the_threshold(shapes):
    pytest.importorskip("fastapi")
    from seq2bert.serve import ServedModel
    from tests.serve.conftest import client_of

    texts = [" ".join(WORDS[i : i + 4]) for i in range(3)]
    with client_of([ServedModel.load("topics", shapes["multi-label"])]) as client:
        answer = client.post("/v1/classify", json={"texts": texts, "top_k": None})
    assert answer.status_code == 200
    want = classify(texts, str(shapes["multi-label"]), top_k=None)
    got = answer.json()["results"]
    assert [[x["label"] for x in r] for r in got] == [[x["label"] for x in r] for r in want]
