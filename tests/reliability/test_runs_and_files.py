"""What runs leave behind and what translate returns (issue 23, item 10): a run that fails before training
leaves no run.json, a refused --resume leaves the run as it was, checkpoint files get the mode the umask gives
any other file (not tempfile's 0600), translate("") is "" and a bare string is one sentence."""

import os
import shutil
import stat

import pytest

import seq2bert
from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.io import write_dir_atomically, write_json
from seq2bert.pipelines import translate
from seq2bert.recipes.translation import TranslationConfig
from tests.reliability.conftest import one_line, snapshot


def bad_data(folder):
    folder.mkdir()
    (folder / "train.de").write_text("ein Hund\n\n")  # an empty line: the data fails once the run has begun
    (folder / "train.en").write_text("a dog\ntwo cats\n")


@pytest.mark.parametrize("out_exists", [False, True], ids=["new OUT", "empty OUT"])
def test_a_run_that_fails_before_training_leaves_no_run_json(out_exists, tmp_path, capsys):
    bad_data(tmp_path / "data")
    out = tmp_path / "run"
    if out_exists:
        out.mkdir()
    assert main(["train", "--data", str(tmp_path / "data"), "--out", str(out)]) == 2
    assert "train.de:2: empty line" in one_line(capsys)
    assert not (out / "run.json").exists()
    assert not out.exists() or not [p for p in out.iterdir() if p.name != ".lock"]


def test_a_refused_resume_leaves_the_run_as_it_was(translation_runs, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(translation_runs["transformer"], run)
    before = snapshot(run)
    assert main(["train", "--out", str(run), "--resume", "--set", "model.d_model=16"]) == 2
    assert "--resume: " in (line := one_line(capsys)) and "model.d_model=8, not 16" in line
    assert snapshot(run) == before


def test_a_resume_with_the_same_model_is_accepted(translation_runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(translation_runs["transformer"], run)
    assert main(["train", "--out", str(run), "--resume", "--set", "train.max_steps=2"]) == 0
    assert C.load(TranslationConfig, run / "run.json").train.max_steps == 2


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_atomic_writes_get_the_mode_the_umask_gives(umask, tmp_path):
    old = os.umask(umask)
    try:
        write_json(tmp_path / "a.json", {"a": 1})
        C.save(TranslationConfig(), tmp_path / "run.yaml")
        (tmp_path / "words.txt").write_text("the film was great\n")
        Tokenizer.train([tmp_path / "words.txt"], kind="wordpiece", vocab_size=40).save(tmp_path / "tok")
        write_dir_atomically(tmp_path / "ckpt", lambda d: write_json(d / "config.json", {}))
        (tmp_path / "plain.txt").write_text("")  # what any other file the user writes gets
    finally:
        os.umask(old)
    expected = stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert expected == 0o666 & ~umask
    for name in ("a.json", "run.yaml", "tok/tokenizer.json", "ckpt/config.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == expected, name
    assert stat.S_IMODE((tmp_path / "ckpt").stat().st_mode) == 0o777 & ~umask


def test_a_trained_run_is_readable_by_the_group(translation_runs, umask_022):
    run = translation_runs["bahdanau"]
    for path in [run, *run.rglob("*")]:
        if path.name == ".lock":
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), (path, oct(mode))


@pytest.mark.parametrize("model_type", ["bahdanau", "transformer"])
def test_an_empty_text_translates_to_an_empty_one_and_a_string_is_one_sentence(model_type, translation_runs):
    run = translation_runs[model_type]
    assert translate(run, ["", "  "]) == ["", ""]
    assert translate(run, "") == ""
    one = translate(run, "s1 s2 s3")
    assert isinstance(one, str) and one == translate(run, ["s1 s2 s3"])[0]
    assert seq2bert.translate("s1 s2 s3", model=run) == one
