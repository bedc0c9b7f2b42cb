"""Adding a task, as docs/architecture.md describes it: one plugin module (tests/tasks/csv_sentiment.py) that
reads a CSV file and registers a text classification task; the CLI imports it (SEQ2BERT_PLUGINS names it),
fine-tunes a tiny BERT on it with ``seq2bert finetune --task csv_sentiment`` in a new process, and
``seq2bert evaluate`` scores the result — without a line of seq2bert knowing the task."""

import importlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2bert import config as config_io
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError, DataError
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertForPreTraining
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.recipes.finetune import FinetuneConfig
from seq2bert.tasks import registry
from tests.conftest import REPO

PLUGIN_DIR = Path(__file__).resolve().parent  # csv_sentiment.py: the one file the how-to writes
FILLER = "the a of on in and to was is it this that film story movie".split()
GOOD, BAD = "great fine lovely superb".split(), "awful dull boring poor".split()


@pytest.fixture
def plugin(monkeypatch):
    """The plugin module imported here, into a copy of the registry (the built-in tasks stay as they are)."""
    monkeypatch.setattr(registry, "TASKS", dict(registry.TASKS))
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.delitem(sys.modules, "csv_sentiment", raising=False)
    return importlib.import_module("csv_sentiment")


def write_csv(folder: Path, rng) -> None:
    """train.csv and dev.csv: filler words around one word that says the label; a comma inside a quoted text."""
    folder.mkdir()
    for split, n in (("train", 300), ("dev", 50)):
        lines = ["text,label"]
        for _ in range(n):
            label = int(rng.integers(2))
            words = [*rng.choice(FILLER, size=rng.integers(3, 7)), rng.choice(GOOD if label else BAD)]
            rng.shuffle(words)
            lines.append(f'"{words[0]}, {" ".join(words[1:])}",{("negative", "positive")[label]}')
        (folder / f"{split}.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture
def bert_dir(tmp_path):
    """A tiny, randomly initialised BERT with a WordPiece vocabulary of the task's words."""
    corpus = tmp_path / "words.txt"
    words = FILLER + GOOD + BAD + [","]
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))) + "\n")
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=100, lowercase=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    save_bert(BertForPreTraining(config), tmp_path / "bert", tok)
    return tmp_path / "bert"


def cli(*args: str, plugins: str = "csv_sentiment") -> subprocess.CompletedProcess:
    """`seq2bert ARGS` in a new process that finds the plugin module on its path."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(PLUGIN_DIR)]),
        "SEQ2BERT_PLUGINS": plugins,
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "seq2bert.cli", *args], env=env, cwd=REPO, capture_output=True, text=True
    )


@pytest.mark.slow
def test_a_task_of_a_plugin_module_is_fine_tuned_and_scored_by_the_cli(bert_dir, tmp_path):
    write_csv(tmp_path / "reviews", np.random.default_rng(0))
    out = tmp_path / "run"
    proc = cli(
        "finetune",
        "--task",
        "csv_sentiment",
        "--init",
        str(bert_dir),
        "--data",
        str(tmp_path / "reviews"),
        "--out",
        str(out),
        "--set",
        "train.lr=2e-3",
        "--set",
        "data.batch_size=16",
        "--set",
        "train.max_epochs=4",
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["task"] == "csv_sentiment" and results["dev_accuracy"] >= 90, results
    assert set(results) >= {"dev_accuracy", "dev_f1"}  # the metrics the plugin asked for
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert config["problem_type"] == "single_label_classification"
    lines = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 50 and {p["label"] for p in lines} == {"negative", "positive"}
    agree = 100 * np.mean([p["prediction"] == p["label"] for p in lines])
    assert agree == pytest.approx(results["dev_accuracy"])

    # scored again in another process
    proc = cli("evaluate", str(out), "--out", str(tmp_path / "again.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert f"{results['dev_accuracy']:.2f}" in proc.stdout
    assert (tmp_path / "again.jsonl").read_text() == (out / "predictions.jsonl").read_text()

    # without the plugin the task is unknown: one line naming data.task
    proc = cli("evaluate", str(out), plugins="")
    assert proc.returncode == 2 and "data.task: expected one of" in proc.stderr
    assert "csv_sentiment" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_registered_task_is_chosen_from_yaml_and_set_like_a_built_in_one(plugin, tmp_path):
    yaml = tmp_path / "run.yaml"
    yaml.write_text("data:\n  task: csv_sentiment\n  batch_size: 8\n")
    cfg = config_io.build(FinetuneConfig, file=str(yaml))
    assert cfg.data.task == "csv_sentiment" and cfg.data.spec is plugin.TASK
    assert cfg.data.kind == "sequence" and cfg.data.seq_length == 128  # the record answers
    cfg = config_io.build(FinetuneConfig, overrides=["data.task=csv_sentiment"])
    assert cfg.data.spec is plugin.TASK
    with pytest.raises(ConfigError, match="data.task: expected one of .*csv_sentiment.*, got 'csv'"):
        config_io.build(FinetuneConfig, overrides=["data.task=csv"])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(replace(plugin.TASK))  # another record of the same name


def test_the_plugins_reader_is_one_line_errors_and_a_missing_plugin_too(
    plugin, tmp_path, capsys, monkeypatch
):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "dev.csv").write_text("text,label\na fine film,positive\nboring,maybe\n")
    with pytest.raises(DataError, match=r"dev.csv:3: expected text,negative\|positive"):
        plugin.TASK.read(tmp_path / "d")
    (tmp_path / "d" / "dev.csv").unlink()
    with pytest.raises(DataError, match="no csv_sentiment dev file"):
        plugin.TASK.read(tmp_path / "d")
    monkeypatch.setenv("SEQ2BERT_PLUGINS", "no_such_plugin_module")
    assert main(["evaluate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "cannot import 'no_such_plugin_module'" in err and len(err.strip().splitlines()) == 1
