"""`seq2bert finetune --model bilstm`: the pre-Transformer baselines trained from random weights by the
fine-tuning recipe (recipes/scratch.py) on tiny tasks whose answer is plain from the words — a sentence
classifier and a tagger learn, their best checkpoints load through ``seq2bert.from_pretrained`` and serve
`seq2bert classify` / `tag` / `evaluate` — and the flags that do not go together are one clear line."""

import json

import numpy as np
import pytest

import seq2bert
from seq2bert import config as config_io
from seq2bert.cli import main
from seq2bert.errors import ConfigError
from seq2bert.models.bilstm.model import BiLSTMForSequenceClassification, BiLSTMForTokenClassification
from seq2bert.recipes.finetune import FinetuneConfig, from_scratch
from tests.recipes.test_finetune import write_conll

FILLER = "the a of on in and to was is it this that film story movie".split()
GOOD, BAD = "great fine lovely superb".split(), "awful dull boring poor".split()
PLACES, PEOPLE = "Paris London Rome Berlin".split(), "John Mary Anna Peter".split()
SMALL = ["--set", "model_config.embedding_dim=16", "--set", "model_config.hidden_size=16", "--set", "train.lr=1e-2",
         "--set", "data.batch_size=16", "--set", "train.log_every=5", "--set", "vocab.min_frequency=1"]  # fmt: skip


def write_sst2(folder, rng):
    folder.mkdir()
    for split, n in (("train", 300), ("dev", 60)):
        rows = ["sentence\tlabel"]
        for _ in range(n):
            label = int(rng.integers(2))
            words = [*rng.choice(FILLER, size=rng.integers(3, 8)), rng.choice(GOOD if label else BAD)]
            rng.shuffle(words)
            rows.append(f"{' '.join(words)} \t{label}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def finetune(task, data, out, *extra):
    return main(["finetune", "--task", task, "--model", "bilstm", "--data", str(data), "--out", str(out),
                 *SMALL, *extra])  # fmt: skip


def test_a_bilstm_classifier_learns_sst2_from_random_embeddings_and_serves_the_pipeline(tmp_path, capsys):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert finetune("sst2", tmp_path / "sst2", tmp_path / "run", "--set", "train.max_epochs=6") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_accuracy"] >= 90 and results["init"] == "random" and results["model"] == "bilstm", (
        results
    )
    run = json.loads((tmp_path / "run" / "best" / "run.json").read_text())
    assert run["train"]["schedule"] == "constant" and run["warmup_ratio"] == 0  # the from-scratch defaults
    assert run["train"]["weight_decay"] == 0 and run["train"]["lr"] == 1e-2  # … and the --set over them
    assert run["model_config"] == {"embedding_dim": 16, "hidden_size": 16}
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["hidden_size"] == 16 and config["id2label"] == {"0": "0", "1": "1"}
    assert (tmp_path / "run" / "best" / "tokenizer.json").is_file()

    model = seq2bert.from_pretrained(tmp_path / "run" / "best")
    assert type(model) is BiLSTMForSequenceClassification
    best = str(tmp_path / "run" / "best")
    labels = [r["label"] for r in seq2bert.classify(["a superb film", "the story was dull"], model=best)]
    assert labels == ["1", "0"]
    capsys.readouterr()
    assert main(["classify", best, "a lovely movie"]) == 0
    assert capsys.readouterr().out.startswith("1\t")
    assert main(["evaluate", str(tmp_path / "run")]) == 0
    assert f"{results['dev_accuracy']:.2f}" in capsys.readouterr().out


def test_a_bilstm_tagger_learns_entities_and_tags_character_spans(tmp_path, capsys):
    write_conll(tmp_path / "conll", np.random.default_rng(2), PLACES, PEOPLE, "Smith")  # cased words
    extra = ["--set", "train.max_epochs=8"]
    assert finetune("conll2003", tmp_path / "conll", tmp_path / "run", *extra) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_f1"] >= 90, results
    best = tmp_path / "run" / "best"
    assert type(seq2bert.from_pretrained(best)) is BiLSTMForTokenClassification
    text = "Mary Smith lives in Rome ."
    entities = seq2bert.tag(text, model=str(best))
    assert [(e["entity_group"], e["word"]) for e in entities] == [("PER", "Mary Smith"), ("LOC", "Rome")]
    capsys.readouterr()
    assert main(["tag", str(best), text]) == 0
    assert "LOC\t20-24" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--init", "somewhere"], "somewhere: no such directory"),
        (["--random-init"], "random_init: a setting of --init"),
        (["--set", "hidden_dropout_prob=0.2"], "hidden_dropout_prob: a setting of --init"),
        (["--set", "model_config.hiden_size=8"], "unknown key model_config.hiden_size: did you mean model_config.hidden_size"),
        (["--set", "model_config.hidden_size=big"], "model_config.hidden_size: expected an integer"),
        (["--set", "model_config.dropout=1"], "model_config.dropout: must be in [0, 1)"),
        (["--set", "model_config.vocab_size=8"], "model_config.vocab_size: set by the recipe"),
        (["--set", "vocab.min_frequency=0"], "vocab.min_frequency: must be at least 1"),
        (["--task", "squad"], "model: bilstm has no 'qa' model (it has: base, sequence, tokens)"),
    ],
)  # fmt: skip
def test_flags_that_do_not_go_together_are_one_line(tmp_path, capsys, args, message):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert finetune("sst2", tmp_path / "sst2", tmp_path / "run", *args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_neither_init_nor_model_and_an_unknown_model_are_one_line(tmp_path, capsys):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    base = ["finetune", "--task", "sst2", "--data", str(tmp_path / "sst2"), "--out", str(tmp_path / "r")]
    for extra, message in (
        ([], "init: give the checkpoint to start from (--init DIR), or a model to train from random weights"),
        (
            ["--model", "lstm"],
            "model: expected an encoder family (bert, electra, roberta, albert, xlnet, distilbert, mobilebert, bilstm), "
            "got 'lstm'",
        ),
        (["--model", "seq2seq"], "model: expected an encoder family"),
        (["--set", "model_config.hidden_size=8"], "model_config: the fields of a model trained from scratch"),
    ):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_from_scratch_defaults_and_model_config_round_trip_through_a_file(tmp_path):
    cfg = config_io.apply_overrides(from_scratch("bilstm"), ["model_config.num_layers=2", "train.lr=2e-3"])
    assert cfg.model_config == {"num_layers": 2} and cfg.train.lr == 2e-3 and cfg.warmup_ratio == 0.0
    config_io.save(cfg, tmp_path / "run.yaml")
    assert config_io.load(FinetuneConfig, tmp_path / "run.yaml") == cfg
    with pytest.raises(ConfigError, match="model_config.num_layers: expected an integer"):
        config_io.apply_overrides(cfg, ["model_config.num_layers=[1]"])
