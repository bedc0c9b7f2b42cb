"""The command line: helpful --help everywhere, and one-line errors (exit 2, no traceback) for user mistakes."""

import gzip
import subprocess
import sys

import pytest

from seq2bert.cli import build_parser, main

SUBCOMMANDS = [
    "demo",
    "train",
    "average",
    "evaluate",
    "translate",
    "align",
    "compare",
    "config",
    "tokenizer",
    "plot",
    "gradients",
    "train-lm",
    "sample",
    "generate",
    "evaluate-lm",
]


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "seq2bert.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_top_level_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_has_a_useful_help(name, capsys):
    with pytest.raises(SystemExit):
        main([name, "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: seq2bert " + name)
    assert len(out.splitlines()) >= 4


def test_train_help_shows_examples(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--set train.max_minutes" in capsys.readouterr().out


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("seq2bert: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_unknown_key_error_names_the_closest_key(tmp_path):
    err = one_line_error(run_cli("config", "--set", "train.lrr=1"))
    assert "unknown key train.lrr: did you mean train.lr?" in err


def test_invalid_value_is_rejected_before_work(tmp_path):
    err = one_line_error(run_cli("train", "--out", str(tmp_path / "r"), "--set", "train.lr=-3"))
    assert "train.lr: must be > 0" in err
    assert not (tmp_path / "r").exists()


def test_bad_config_file(tmp_path):
    (tmp_path / "c.yaml").write_text("model:\n  num_layer: 2\n")
    err = one_line_error(run_cli("config", "--config", str(tmp_path / "c.yaml")))
    assert "c.yaml: unknown key model.num_layer: did you mean model.num_layers" in err


def test_mismatched_parallel_files_name_the_files(tmp_path):
    with gzip.open(tmp_path / "train.de.gz", "wt") as f:
        f.write("ein Hund\nzwei Katzen\n")
    (tmp_path / "train.en").write_text("a dog\n")
    err = one_line_error(run_cli("train", "--data", str(tmp_path), "--out", str(tmp_path / "r")))
    assert "train.de.gz has 2 lines but" in err and "train.en has 1" in err


def test_empty_line_names_file_and_line(tmp_path):
    (tmp_path / "train.de").write_text("ein Hund\n\n")
    (tmp_path / "train.en").write_text("a dog\ntwo cats\n")
    err = one_line_error(run_cli("train", "--data", str(tmp_path), "--out", str(tmp_path / "r")))
    assert "train.de:2: empty line" in err


def test_invalid_utf8_names_file_and_line(tmp_path):
    (tmp_path / "train.de").write_bytes(b"ein Hund\nzwei \xff Katzen\n")
    (tmp_path / "train.en").write_text("a dog\ntwo cats\n")
    err = one_line_error(run_cli("train", "--data", str(tmp_path), "--out", str(tmp_path / "r")))
    assert "train.de:2: invalid UTF-8" in err


def test_missing_data_folder_and_checkpoint(tmp_path):
    err = one_line_error(run_cli("train", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "r")))
    assert "nope: no such folder" in err
    err = one_line_error(run_cli("translate", str(tmp_path / "nothing"), "hallo"))
    assert "nothing: no such checkpoint" in err
    (tmp_path / "empty").mkdir()
    err = one_line_error(run_cli("evaluate", str(tmp_path / "empty")))
    assert "not a checkpoint" in err


def test_help_is_fast_it_does_not_import_torch():
    code = "import sys; from seq2bert.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False"
    assert build_parser().prog == "seq2bert"


def test_config_file_that_is_not_utf8(tmp_path):
    (tmp_path / "c.yaml").write_bytes(b"train:\n  lr: 0.1 # caf\xe9\n")
    err = one_line_error(run_cli("config", "--config", str(tmp_path / "c.yaml")))
    assert "c.yaml:2: invalid UTF-8" in err


def test_translate_input_file_missing(tmp_path):
    err = one_line_error(run_cli("translate", str(tmp_path), "--input", str(tmp_path / "in.txt")))
    assert "no such file" in err and "in.txt" in err


def test_bad_budget_and_metric(tmp_path):
    assert "--budget: expected a positive number" in one_line_error(run_cli("demo", "--budget", "0"))
    err = one_line_error(run_cli("train", "--out", str(tmp_path / "r"), "--set", "train.metric=exact_mach"))
    assert "train.metric: expected one of" in err


def test_tokenizer_train_and_encode_from_files(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 50)
    proc = run_cli(
        "tokenizer",
        "train",
        "--kind",
        "word",
        "--min-frequency",
        "1",
        "--out",
        str(tmp_path / "t"),
        str(corpus),
    )
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("tokenizer", "encode", str(tmp_path / "t"), "the cat sat")
    assert proc.returncode == 0, proc.stderr
    tokens = [line.split()[-1] for line in proc.stdout.splitlines()]
    assert tokens == ["[CLS]", "the", "cat", "sat", "[SEP]"]  # words of the file, not of its name
    err = one_line_error(
        run_cli("tokenizer", "train", "--out", str(tmp_path / "u"), str(tmp_path / "none.txt"))
    )
    assert "none.txt" in err


def test_average_needs_two_checkpoints(tmp_path):
    (tmp_path / "checkpoint-5").mkdir()
    err = one_line_error(run_cli("average", str(tmp_path)))
    assert f"{tmp_path}: 1 checkpoint-<step>/ folder(s) found, at least 2 are needed" in err
