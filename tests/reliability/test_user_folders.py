"""Nothing a user did not give us is deleted (issue 41, item 1): `seq2bert quantize DIR --out OUT` and
`seq2bert average RUN --out OUT` write OUT only when it is new, empty, or their own previous output with
--overwrite; never an input, a folder inside one, or a folder holding one. A refusal is one line, exit 2,
and leaves every folder as it was."""

import shutil

import pytest

from seq2bert.cli import main
from seq2bert.io import check_output_dir
from seq2bert.models.quantized import INT8_WEIGHTS, QUANTIZATION
from seq2bert.training.checkpoint import AVERAGED
from tests.reliability.conftest import one_line, snapshot


def users_folder(path):
    """A folder of the user's own: a thesis and photos."""
    (path / "photos").mkdir(parents=True)
    (path / "thesis.tex").write_text("\\section{Results}\n")
    (path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8\xff")
    return path


@pytest.fixture
def model_dir(bert_runs, tmp_path):
    """A fine-tuned classifier's directory, with a sentence-transformers-style 1_Pooling/ beside it."""
    model = shutil.copytree(bert_runs["sequence"] / "best", tmp_path / "model")
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}\n')
    return model


@pytest.fixture
def run_with_checkpoints(translation_runs, tmp_path):
    """A translation run holding two checkpoint-<step>/ folders."""
    run = shutil.copytree(translation_runs["bahdanau"], tmp_path / "run")
    shutil.copytree(run / "checkpoint-1", run / "checkpoint-2")
    return run


def test_quantize_refuses_a_users_folder_and_leaves_it_whole(model_dir, tmp_path, capsys):
    out = users_folder(tmp_path / "mine")
    before = snapshot(out)
    assert main(["quantize", str(model_dir), "--out", str(out)]) == 2
    line = one_line(capsys)
    assert f"--out {out}: not empty and not written by `seq2bert quantize`" in line
    assert snapshot(out) == before


@pytest.mark.parametrize("where", ["the input", "inside the input", "holding the input"])
def test_quantize_refuses_an_out_that_is_or_holds_its_input(where, model_dir, capsys):
    out = {
        "the input": model_dir,
        "inside the input": model_dir / "int8",
        "holding the input": model_dir.parent,
    }
    before = snapshot(model_dir)
    assert main(["quantize", str(model_dir), "--out", str(out[where])]) == 2
    assert f"--out {out[where]}: " in (line := one_line(capsys)) and "the input" in line
    assert snapshot(model_dir) == before
    assert not (model_dir / "int8").exists()


def test_quantize_writes_a_new_folder_with_the_sources_folders_and_replaces_it_only_when_asked(
    model_dir, tmp_path, capsys
):
    out = tmp_path / "int8"
    assert main(["quantize", str(model_dir), "--out", str(out)]) == 0
    assert (out / INT8_WEIGHTS).is_file() and (out / QUANTIZATION).is_file()
    assert (out / "1_Pooling" / "config.json").read_text() == '{"pooling_mode_mean_tokens": true}\n'
    assert not (out / "model.safetensors").exists()
    capsys.readouterr()
    first = snapshot(out)
    assert main(["quantize", str(model_dir), "--out", str(out)]) == 2
    assert "holds a previous `seq2bert quantize` output; pass --overwrite" in one_line(capsys)
    assert snapshot(out) == first
    assert main(["quantize", str(model_dir), "--out", str(out), "--overwrite"]) == 0
    assert snapshot(out).keys() == first.keys()


def test_quantize_into_an_empty_folder_is_accepted_and_a_file_is_refused(model_dir, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["quantize", str(model_dir), "--out", str(tmp_path / "empty")]) == 0
    assert (tmp_path / "empty" / INT8_WEIGHTS).is_file()
    capsys.readouterr()
    (tmp_path / "notes.txt").write_text("keep me\n")
    assert main(["quantize", str(model_dir), "--out", str(tmp_path / "notes.txt")]) == 2
    assert "a file; expected a folder" in one_line(capsys)
    assert (tmp_path / "notes.txt").read_text() == "keep me\n"


def test_average_refuses_a_users_folder_the_run_itself_and_its_checkpoints(
    run_with_checkpoints, tmp_path, capsys
):
    run = run_with_checkpoints
    mine = users_folder(tmp_path / "mine")
    before, run_before = snapshot(mine), snapshot(run)
    for out, says in [
        (mine, "not empty and not written by `seq2bert average`"),
        (run, "holds the input"),
        (run / "checkpoint-2", "is the input"),
        (run / "best", "not empty and not written by `seq2bert average`"),
    ]:
        assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 2
        assert says in one_line(capsys)
    assert snapshot(mine) == before
    assert snapshot(run) == run_before


def test_average_writes_a_named_folder_once_and_its_own_default_again(run_with_checkpoints, tmp_path, capsys):
    run, out = run_with_checkpoints, tmp_path / "avg"
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 0
    assert (out / AVERAGED).is_file()
    capsys.readouterr()
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 2
    assert "pass --overwrite" in one_line(capsys)
    assert main(["average", str(run), "--last", "2", "--out", str(out), "--overwrite"]) == 0
    for _ in range(2):  # RUN/averaged is the run's own: a second average replaces the first
        assert main(["average", str(run), "--last", "2"]) == 0
    assert (run / "averaged" / AVERAGED).is_file()


def test_average_never_replaces_a_default_folder_it_did_not_write(run_with_checkpoints, capsys):
    users_folder(run_with_checkpoints / "averaged")
    assert main(["average", str(run_with_checkpoints), "--last", "2"]) == 2
    assert "not written by `seq2bert average`" in one_line(capsys)
    assert (run_with_checkpoints / "averaged" / "thesis.tex").is_file()


def test_check_output_dir_accepts_new_and_empty_folders(tmp_path):
    assert check_output_dir(tmp_path / "new", command="quantize", mark=QUANTIZATION) == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # checking creates nothing
    (tmp_path / "empty").mkdir()
    assert check_output_dir(tmp_path / "empty", command="quantize", mark=QUANTIZATION) == tmp_path / "empty"
