"""Input the command line cannot use (issue 23, item 9) ends with one clear line on stderr and exit status 2,
no traceback, and leaves the directories it was given as they were: text that is not UTF-8 in an argument or
on standard input, a config file whose section is a scalar combined with --set, a folder where a file is
expected, `evaluate` of a pretraining run. The task commands take a run directory as `evaluate` does (its
best/)."""

import io
import os
import subprocess
import sys

import pytest

from seq2bert.cli import main
from tests.conftest import REPO
from tests.reliability.conftest import one_line, snapshot


def feed(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


# (argv with {translation}, {pretrained}, {sequence}, {tmp} filled in; stdin bytes or None; what the line says)
CASES = {
    "argument not UTF-8": (["translate", "{translation}", "ein \udcff Hund"], None,
                           "argument 'ein \\xff Hund' is not valid UTF-8"),
    "stdin not UTF-8 (translate)": (["translate", "{translation}"], b"ein Hund\nzwei \xff Katzen\n",
                                    "<stdin>:2: invalid UTF-8"),
    "stdin not UTF-8 (classify)": (["classify", "{sequence}"], b"\xfe a film\n", "<stdin>:1: invalid UTF-8"),
    "stdin not UTF-8 (generate)": (["generate", "{pretrained}"], b"once \xff upon\n", "<stdin>:1: invalid UTF-8"),
    "scalar section with --set": (["config", "--config", "{tmp}/scalar.yaml", "--set", "train.lr=1e-3"], None,
                                  "scalar.yaml: train: expected a mapping of its keys, got 5"),
    "folder as --config": (["train", "--task", "copy", "--config", "{tmp}", "--out", "{tmp}/r"], None,
                           ": a folder, expected a YAML or JSON config file"),
    "folder as --out of align": (["align", "{translation}", "ein Hund", "--out", "{tmp}"], None,
                                 ": a folder, expected a file"),
    "folder as --input": (["translate", "{translation}", "--input", "{tmp}"], None, "is a directory"),
    "evaluate a pretraining run": (["evaluate", "{pretrained}"], None,
                                   "a BertForPreTraining, not a fine-tuned model"),
}  # fmt: skip


@pytest.mark.parametrize("argv, stdin, says", CASES.values(), ids=CASES.keys())
def test_unusable_input_is_one_line_and_exit_2(argv, stdin, says, translation_runs, bert_runs, tmp_path,
                                               monkeypatch, capsys):  # fmt: skip
    (tmp_path / "scalar.yaml").write_text("train: 5\n")
    dirs = {"translation": translation_runs["transformer"], **bert_runs}
    before = {name: snapshot(d) for name, d in dirs.items()}
    argv = [a.format(tmp=tmp_path, **dirs) for a in argv]
    if stdin is not None:
        feed(monkeypatch, stdin)
    assert main(argv) == 2
    assert says in one_line(capsys)
    assert {name: snapshot(d) for name, d in dirs.items()} == before  # nothing written where it was read
    assert not (tmp_path / "r").exists()


def test_bytes_that_are_not_utf8_on_the_real_command_line(translation_runs):
    """What the shell passes: the bytes themselves (Python keeps them as surrogate escapes)."""
    run = os.fsencode(translation_runs["transformer"])
    proc = subprocess.run([sys.executable, "-m", "seq2bert.cli", b"translate", run, b"caf\xe9"], capture_output=True,
                          cwd=REPO, timeout=120)  # fmt: skip
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "seq2bert: error: argument 'caf\\xe9' is not valid UTF-8 (expected UTF-8 text)"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["classify", "{sequence}", "a great film"],
        ["tag", "{tokens}", "john lives in paris"],
        ["qa", "{qa}", "--question", "where", "--context", "john lives in paris"],
    ],
    ids=["classify", "tag", "qa"],
)
def test_task_commands_take_a_run_directory(argv, bert_runs, capsys):
    run_dir = [a.format(**bert_runs) for a in argv]
    best = [a.format(**{k: v / "best" for k, v in bert_runs.items()}) for a in argv]
    assert main(run_dir) == 0
    by_run = capsys.readouterr().out
    assert main(best) == 0
    assert by_run == capsys.readouterr().out
