"""Issue 40, item 1, bad input: a user's file the generic tasks cannot use — a missing column (the file's
columns named), a ragged CSV row, a JSON Lines syntax error, an empty text, a label that cannot be parsed, an
empty file, a validation label unseen in training, … — ends `seq2bert finetune` with one line naming the file
(and line), exit status 2, and nothing written where --out points."""

import json

import pytest

from seq2bert.cli import main
from seq2bert.errors import DataError
from seq2bert.tasks.data import FinetuneDataConfig, task_examples
from seq2bert.tasks.files import TASKS as FILE_TASKS
from seq2bert.tasks.registry import TASKS
from tests.recipes.test_finetune import init_dir  # noqa: F401
from tests.reliability.conftest import one_line

GOOD = "text,label\na fine film,good\na dull film,bad\n"

# task, {file name: contents}, extra flags, what the one line says ({d}: the folder of the files)
CASES = {
    "missing column": ("text-classification", {"train.csv": GOOD}, ["--text-column", "review"],
                       "{d}/train.csv: no column 'review' (given by --text-column); the file's columns: text, label"),
    "missing label column": ("text-classification", {"train.csv": GOOD}, ["--label-column", "stars"],
                             "{d}/train.csv: no column 'stars' (given by --label-column); the file's columns: text, label"),
    "ragged CSV row": ("text-classification", {"train.csv": GOOD + "a film,good,extra\n"}, [],
                       "{d}/train.csv:4: 3 field(s), the header has 2 (text, label): a ragged row"),
    "JSON Lines syntax error": ("text-classification",
                                {"train.jsonl": '{"text": "a film", "label": "good"}\n{"text": "a film", "label": }\n'},
                                [], "{d}/train.jsonl:2: not JSON (Expecting value at column 29)"),
    "empty text": ("text-classification", {"train.csv": GOOD + " ,good\n"}, [],
                   "{d}/train.csv:4: column 'text' is empty (expected a text)"),
    "regression label not a number": ("regression", {"train.csv": "text,label\na film,3.5\na film,high\n"}, [],
                                      "{d}/train.csv:3: column 'label' holds 'high', not a number (expected a number: the regression target)"),
    "label that is no label": ("text-classification",
                               {"train.jsonl": '{"text": "a film", "label": "good"}\n{"text": "a film", "label": null}\n'},
                               [], "{d}/train.jsonl:2: column 'label' holds None, expected one label"),
    "empty file": ("text-classification", {"train.csv": ""}, [],
                   "{d}/train.csv: empty (expected a header line naming the columns, then rows)"),
    "header only": ("text-classification", {"train.jsonl": "\n"}, [], "{d}/train.jsonl: no rows"),
    "valid label unseen in train": ("text-classification", {"dev.csv": GOOD + "a film,neutral\n"}, [],
                                    "{d}/dev.csv:4: label 'neutral' is not one of the run's labels (bad, good)"),
    "label not in --labels": ("text-classification", {}, ["--labels", "good,great"],
                              "{d}/train.csv:3: label 'bad' is not one of the run's labels (good, great)"),
    "not UTF-8": ("text-classification", {"train.csv": b"text,label\na caf\xe9,good\n"}, [],
                  "{d}/train.csv:2: not UTF-8 text"),
    "text-pair without a pair column": ("text-pair", {}, [],
                                        "the task text-pair reads two texts: give the second's column (--pair-column)"),
    "multi-label text without a separator": ("multi-label", {"train.csv": "text,label\na film,good|fine\n"}, [],
                                             "{d}/train.csv:2: column 'label' holds the text 'good|fine': give "
                                             "--label-separator"),
    "choice out of range": ("multiple-choice",
                            {"train.csv": "text,a,b,label\nq,x,y,1\nq,x,y,2\n"}, ["--choice-columns", "a,b"],
                            "{d}/train.csv:3: column 'label' is 2, expected a choice from 0 to 1"),
    "unknown extension": ("text-classification", {"train.txt": GOOD}, [],
                          "{d}/train.txt: cannot tell the format from the extension"),
}  # fmt: skip


@pytest.mark.parametrize("task, files, extra, says", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_exit_2(task, files, extra, says, init_dir, tmp_path, capsys):  # noqa: F811
    """… and nothing written: --out not made."""
    data = tmp_path / "data"
    data.mkdir()
    written = {"train.csv": GOOD, "dev.csv": GOOD, **files}
    for name, contents in written.items():
        path = data / name
        path.write_bytes(contents) if isinstance(contents, bytes) else path.write_text(contents)
    train = (
        next(n for n in written if n.startswith("train") and n != "train.csv")
        if len([n for n in written if n.startswith("train")]) > 1
        else "train.csv"
    )
    out = tmp_path / "runs" / "r"
    argv = ["finetune", "--task", task, "--init", str(init_dir), "--train", str(data / train)]
    argv += ["--valid", str(data / "dev.csv"), "--out", str(out), *extra]
    assert main(argv) == 2
    assert says.format(d=data) in one_line(capsys)
    assert not out.exists() and not (tmp_path / "runs").exists()  # nothing written, no folder made


def test_a_test_file_with_a_bad_row_is_refused_before_training(init_dir, tmp_path, capsys):  # noqa: F811
    for name, contents in (("train.csv", GOOD), ("dev.csv", GOOD), ("test.csv", "text\na film\na,film\n")):
        (tmp_path / name).write_text(contents)
    out = tmp_path / "r"
    argv = ["finetune", "--task", "text-classification", "--init", str(init_dir), "--out", str(out)]
    argv += ["--train", str(tmp_path / "train.csv"), "--valid", str(tmp_path / "dev.csv")]
    assert main([*argv, "--test", str(tmp_path / "test.csv")]) == 2
    assert f"{tmp_path}/test.csv:3: 2 field(s), the header has 1" in one_line(capsys) and not out.exists()


def test_the_run_records_its_data_section(init_dir, tmp_path):  # noqa: F811
    """run.json keeps the columns and the labels found, which `seq2bert evaluate RUN` reads."""
    for name in ("train.csv", "dev.csv"):
        (tmp_path / name).write_text("review,stars\n" + "a fine film,5\na dull film,1\na film,10\n" * 4)
    argv = [
        "finetune",
        "--task",
        "text-classification",
        "--init",
        str(init_dir),
        "--out",
        str(tmp_path / "r"),
    ]
    argv += [
        "--train",
        str(tmp_path / "train.csv"),
        "--valid",
        str(tmp_path / "dev.csv"),
        "--text-column",
        "review",
    ]
    argv += ["--label-column", "stars", "--set", "train.max_steps=1"]
    assert main(argv) == 0
    data = json.loads((tmp_path / "r" / "best" / "run.json").read_text())["data"]
    assert (
        data["labels"] == ["1", "5", "10"]
        and data["text_column"] == "review"
        and data["label_column"] == "stars"
    )
    assert data["train"] == str(tmp_path / "train.csv") and data["valid"] == str(tmp_path / "dev.csv")


GENERIC = [name for name, task in TASKS.items() if task.user_files and name in FILE_TASKS]


@pytest.mark.parametrize("task", GENERIC)
def test_every_generic_task_names_the_file_it_needs(task, tmp_path):
    """No --valid, a --train that is not there, no --train: each one line naming the key or the file."""
    with pytest.raises(
        DataError, match=rf"^data.valid: empty \(give the {task} validation file with --valid FILE\)$"
    ):
        task_examples(FinetuneDataConfig(task=task, train=str(tmp_path / "t.csv")), 0)
    missing = FinetuneDataConfig(
        task=task, train=str(tmp_path / "nope.csv"), valid=str(tmp_path / "nope.csv")
    )
    with pytest.raises(DataError, match="nope.csv"):
        task_examples(missing, 0)
    no_train = FinetuneDataConfig(task=task, valid=str(tmp_path / "dev.csv"))
    with pytest.raises(
        DataError, match=rf"^data.train: empty \(give the {task} training file with --train FILE\)$"
    ):
        task_examples(no_train, 0)
