"""Adding a family, as docs/architecture.md describes it: a tiny family written in tests/models/tiny_family.py —
a config dataclass and three classes composed from the shared blocks (nn/stack.py, nn/layers.py,
objectives/) — is registered, then pretrained by the pretraining recipe, saved, loaded by
``seq2bert.from_pretrained``, fine-tuned by the fine-tuning recipe and used by a pipeline, without a line of
generic code knowing it: in this process, and through the CLI with the plugin module that registers it
(tests/models/tiny_plugin.py, named by $SEQ2BERT_PLUGINS) and ``--set model.model_type=tiny-shared``."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import seq2bert
from seq2bert import config as config_io
from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.recipes.finetune import FinetuneConfig, FinetuneDataConfig, finetune
from seq2bert.recipes.pretrain import PretrainConfig, PretrainDataConfig, pretrain
from seq2bert.training.config import TrainConfig
from tests.conftest import REPO
from tests.models.tiny_family import TINY, TinyConfig, TinyForPreTraining, TinyForSequenceClassification


@pytest.fixture
def tiny_family(monkeypatch):
    monkeypatch.setitem(registry.FAMILIES, TINY.model_type, TINY)  # registered for this test only
    return TINY


WORDS = "the a film movie was is great fine awful dull plot cast story so very".split()


def write_text(tmp_path):
    rng = np.random.default_rng(0)
    docs = [" ".join(" ".join(rng.choice(WORDS, 6)).capitalize() + "." for _ in range(6)) for _ in range(20)]
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "a.txt").write_text("\n\n".join(docs) + "\n")
    (tmp_path / "sst2").mkdir()
    for split, n in (("train", 64), ("dev", 16)):
        rows = ["sentence\tlabel"]
        for i in range(n):
            rows.append(
                f"the film was {'great' if i % 2 else 'awful'} {' '.join(rng.choice(WORDS, 3))}\t{i % 2}"
            )
        (tmp_path / "sst2" / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def test_a_tiny_family_pretrains_saves_loads_and_finetunes_through_the_generic_code(tiny_family, tmp_path):
    write_text(tmp_path)
    train = dict(warmup_steps=1, eval_every=4, log_every=2, lr=1e-3, device="cpu")
    cfg = PretrainConfig(
        model=TinyConfig(),
        data=PretrainDataConfig(
            files=[str(tmp_path / "books")],
            vocab_size=60,
            max_seq_length=24,
            batch_size=4,
            valid_fraction=0.2,
            dupe_factor=2,
        ),  # fmt: skip
        train=TrainConfig(max_steps=8, metric="mlm_accuracy", **train),
    )
    row = pretrain(cfg, tmp_path / "pre", progress_bar=False)
    assert (
        row["steps"] == 8 and row["model"].startswith("tiny-shared") and 0 <= row["valid_mlm_accuracy"] <= 100
    )

    # saved as a directory of its own family; loaded back by the generic entry point
    best = tmp_path / "pre" / "best"
    assert registry.family_at(best) is TINY
    model = seq2bert.from_pretrained(best)
    assert type(model) is TinyForPreTraining and len(model.tiny.layers) == 1 and model.tiny.num_layers == 3
    ids = torch.tensor([[2, 7, 9, 3]])
    again = seq2bert.from_pretrained(best)
    torch.testing.assert_close(model(ids).prediction_logits, again(ids).prediction_logits, rtol=0, atol=0)

    # fine-tuned by the fine-tuning recipe: the family names the class with a "sequence" head
    ft = FinetuneConfig(init=str(best), data=FinetuneDataConfig(task="sst2", path=str(tmp_path / "sst2"), batch_size=8),
                        train=TrainConfig(max_epochs=6, metric="main", **train))  # fmt: skip
    result = finetune(ft, tmp_path / "ft", progress_bar=False)
    assert result["dev_accuracy"] >= 75.0  # "great" / "awful" decide the label
    classifier = seq2bert.from_pretrained(tmp_path / "ft" / "best")
    assert type(classifier) is TinyForSequenceClassification
    torch.testing.assert_close(
        classifier.tiny.embeddings.tokens.weight.shape, model.tiny.embeddings.tokens.weight.shape
    )
    labels = seq2bert.classify(
        ["the film was great", "the film was awful"], model=str(tmp_path / "ft" / "best")
    )
    assert [p["label"] for p in labels] == ["1", "0"]
    assert seq2bert.embed(["the film was great"], model=str(best)).shape == (1, 32)


def test_a_model_section_offers_a_family_registered_at_run_time(tmp_path, monkeypatch):
    """The model section is the registry's choices when the configuration is read, not when it was imported."""
    (tmp_path / "run.yaml").write_text("model:\n  model_type: tiny-shared\n  num_hidden_layers: 2\n")
    with pytest.raises(ConfigError, match=r"model.model_type: expected one of 'bert', .*got 'tiny-shared'"):
        config_io.build(PretrainConfig, overrides=["model.model_type=tiny-shared"])
    monkeypatch.setitem(registry.FAMILIES, TINY.model_type, TINY)
    cfg = config_io.build(PretrainConfig, file=tmp_path / "run.yaml", overrides=["model.hidden_size=64"])
    assert cfg.model == TinyConfig(num_hidden_layers=2, hidden_size=64)  # its own defaults, not BERT-mini's
    cfg = config_io.build(PretrainConfig, overrides=["model.model_type=tiny-shared"])
    assert cfg.model == TinyConfig()
    back = config_io.build(PretrainConfig, base=cfg, overrides=["model.model_type=gpt2"])
    assert back.model == registry.get("gpt2").presets["mini"]()  # another family: its "mini" preset


def cli(*args, plugins=True, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    env.pop("SEQ2BERT_PLUGINS", None)
    if plugins:
        env["SEQ2BERT_PLUGINS"] = "tests.models.tiny_plugin"
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


@pytest.mark.slow
def test_a_plugin_family_is_chosen_on_the_command_line_pretrained_loaded_elsewhere_and_finetuned(tmp_path):
    write_text(tmp_path)
    seq2bert_cli = (sys.executable, "-m", "seq2bert.cli")
    train = [
        "train.warmup_steps=1",
        "train.eval_every=4",
        "train.log_every=2",
        "train.lr=1e-3",
        "train.device=cpu",
        "train.schedule=constant",  # as TrainConfig() in the test above
    ]
    data = ["data.vocab_size=60", "data.max_seq_length=24", "data.batch_size=4", "data.valid_fraction=0.2"]
    data += ["data.dupe_factor=2"]
    sets = [
        x for s in ["model.model_type=tiny-shared", *data, "train.max_steps=8", *train] for x in ("--set", s)
    ]

    # without the plugin the family is unknown: a one-line error naming the known ones
    proc = cli(*seq2bert_cli, "pretrain", "books", "--out", "pre", *sets, plugins=False, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "model.model_type: expected one of 'bert'" in proc.stderr and "'tiny-shared'" in proc.stderr

    proc = cli(*seq2bert_cli, "pretrain", "books", "--out", "pre", *sets, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    best = tmp_path / "pre" / "best"
    assert json.loads((best / "config.json").read_text())["architectures"] == ["TinyForPreTraining"]

    # loaded in a new process (the plugin imported there too), by the generic entry point and by its class
    code = (
        "import json, torch, seq2bert, tests.models.tiny_plugin\n"
        "from tests.models.tiny_family import TinyForPreTraining\n"
        f"m = seq2bert.from_pretrained({str(best)!r})\n"
        f"c = TinyForPreTraining.from_pretrained({str(best)!r})\n"
        "ids = torch.tensor([[2, 7, 9, 3]])\n"
        "assert torch.equal(m(ids).prediction_logits, c(ids).prediction_logits)\n"
        "print(json.dumps([type(m).__name__, m(ids).prediction_logits.tolist()]))\n"
    )
    proc = cli(sys.executable, "-c", code, plugins=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    name, logits = json.loads(proc.stdout.strip().splitlines()[-1])
    assert name == "TinyForPreTraining"
    registry.FAMILIES[TINY.model_type] = TINY  # this process reads the same directory
    try:
        here = seq2bert.from_pretrained(best)(torch.tensor([[2, 7, 9, 3]])).prediction_logits
    finally:
        del registry.FAMILIES[TINY.model_type]
    torch.testing.assert_close(torch.tensor(logits), here, rtol=0, atol=1e-6)

    # fine-tuned by the CLI: the family names its class with a "sequence" head
    ft = ["--task", "sst2", "--init", str(best), "--data", "sst2", "--out", "ft"]
    ft_sets = [x for s in ["train.max_epochs=6", "data.batch_size=8", *train] for x in ("--set", s)]
    proc = cli(*seq2bert_cli, "finetune", *ft, *ft_sets, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    config = json.loads((tmp_path / "ft" / "best" / "config.json").read_text())
    assert (
        config["architectures"] == ["TinyForSequenceClassification"] and config["model_type"] == "tiny-shared"
    )
    results = json.loads((tmp_path / "ft" / "results.json").read_text())
    assert results["dev_accuracy"] >= 75.0  # "great" / "awful" decide the label
