"""A prepared corpus is tied to what it was made from (issue 23, item 1): a fresh run on a directory where a
killed attempt left a tokenizer and corpus of other files makes them again from its own files; of the same
inputs it reuses them; a resumed run keeps what it trained on."""

import json
import shutil

import numpy as np
import pytest

from seq2bert.cli import main
from tests.recipes.test_pretrain import TINY, WORDS

OTHER = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron".split()


def book(folder, words, seed, docs=12):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    text = "\n\n".join(" ".join(" ".join(rng.choice(words, size=8)).capitalize() + "." for _ in range(6))
                       for _ in range(docs))  # fmt: skip
    (folder / "book.txt").write_text(text + "\n")
    return folder


def killed_after_preparing(run):
    """What a run killed once its corpus is prepared leaves: tokenizer/, corpus/ (and prepared.json)."""
    for p in run.iterdir():
        if p.name not in ("tokenizer", "corpus", "prepared.json", ".lock"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()


@pytest.mark.slow
def test_a_fresh_run_never_trains_on_a_corpus_left_from_other_files(tmp_path, caplog):
    a, b = book(tmp_path / "a", WORDS, 0), book(tmp_path / "b", OTHER, 1, docs=20)
    run = tmp_path / "run"
    assert main(["pretrain", str(a), "--out", str(run), *TINY]) == 0
    tokens_a = json.loads((run / "corpus" / "corpus.json").read_text())["tokens"]
    killed_after_preparing(run)
    assert main(["pretrain", str(b), "--out", str(run), *TINY]) == 0
    assert "left by an earlier attempt from other inputs; made again" in caplog.text
    assert main(["pretrain", str(b), "--out", str(tmp_path / "fresh"), *TINY]) == 0
    for name in ("corpus/corpus.json", "tokenizer/tokenizer.json", "best/model.safetensors"):
        assert (run / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    assert json.loads((run / "corpus" / "corpus.json").read_text())["tokens"] != tokens_a
    # the same inputs again: what the killed attempt prepared is reused as it is
    killed_after_preparing(run)
    caplog.clear()
    stamp = (run / "corpus" / "corpus.json").stat().st_mtime_ns
    assert main(["pretrain", str(b), "--out", str(run), *TINY]) == 0
    assert "made again" not in caplog.text and (run / "corpus" / "corpus.json").stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_a_resumed_run_keeps_its_corpus_when_its_files_changed(tmp_path, caplog):
    a = book(tmp_path / "a", WORDS, 0)
    run = tmp_path / "run"
    assert main(["pretrain", str(a), "--out", str(run), *TINY]) == 0
    before = (run / "corpus" / "corpus.json").read_bytes()
    (a / "book.txt").write_text((a / "book.txt").read_text() + "\nOne more sentence here.\n")
    assert main(["pretrain", "--out", str(run), "--resume", *TINY, "--set", "train.max_steps=8"]) == 0
    assert "changed since the run began" in caplog.text
    assert (run / "corpus" / "corpus.json").read_bytes() == before
