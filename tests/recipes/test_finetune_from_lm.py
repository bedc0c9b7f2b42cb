"""Transfer from a recurrent language model: `seq2bert finetune --model bilstm --init LM` starts the classifier's
embeddings and LSTM from a train-lm run (Dai & Le 2015), one direction, with the LM's tokenizer; ULMFiT's
concat pooling, its classifier blocks and the trainer's discriminative rates, slanted triangular schedule and
gradual unfreezing run through the same command."""

import json

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.models import registry
from seq2bert.recipes.finetune import from_scratch
from seq2bert.recipes.scratch import new_model, starts_from_lm
from tests.recipes.test_finetune_scratch import write_sst2

LM = ["--set", "model.hidden_size=16", "--set", "model.embedding_dim=16", "--set", "model.num_layers=2",
      "--set", "data.tokenizer_kind=word", "--set", "data.vocab_size=60", "--set", "data.batch_size=4",
      "--set", "data.bptt=16", "--set", "data.valid_fraction=0.2", "--set", "train.max_steps=10",
      "--set", "model.dropout=0.0", "--set", "data.documents=blank_line"]  # fmt: skip


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    write_sst2(root / "sst2", np.random.default_rng(0))
    text = root / "text.txt"
    lines = [line.split("\t")[0] for line in (root / "sst2" / "train.tsv").read_text().splitlines()[1:]]
    text.write_text("\n\n".join(lines) + "\n")
    assert main(["train-lm", str(text), "--out", str(root / "run"), *LM]) == 0
    return root


def classifier_from(lm, lm_weights: bool = True):
    """A BiLSTM sentence classifier made by the recipe from the language model of ``lm``."""
    net, tok, _ = new_model(
        "bilstm",
        {},
        from_scratch("bilstm").vocab,
        None,
        [],
        "BiLSTMForSequenceClassification",
        id2label={0: "0", 1: "1"},
        problem_type=None,
        lm=str(lm / "run" / "best"),
        lm_weights=lm_weights,
    )
    return net, tok


def test_the_classifier_starts_from_the_lms_embeddings_and_lstm(lm):
    lm_model, lm_tok = registry.load(lm / "run" / "best", head="causal_lm")
    net, tok = classifier_from(lm)
    assert tok.vocab_size == lm_tok.vocab_size and not net.config.bidirectional
    assert torch.equal(net.bilstm.embeddings.weight, lm_model.embed.weight)
    for name, value in lm_model.rnn.rnn.state_dict().items():
        assert torch.equal(net.bilstm.lstm.rnn.state_dict()[name], value)
    assert starts_from_lm("bilstm")


def test_finetune_from_an_lm_with_ulmfits_classifier_and_trainer(lm, tmp_path):
    args = ["finetune", "--task", "sst2", "--model", "bilstm", "--init", str(lm / "run" / "best"),
            "--data", str(lm / "sst2"), "--out", str(tmp_path / "run"), "--set", "model_config.pooling=concat",
            "--set", "model_config.classifier_hidden=8", "--set", "train.max_epochs=6",
            "--set", "train.gradual_unfreezing=true", "--set", "train.layer_lr_decay=0.385",
            "--set", "train.schedule=slanted_triangular", "--set", "train.lr=0.03", "--set", "data.batch_size=16",
            "--set", "model_config.dropout=0.1"]  # fmt: skip
    assert main(args) == 0
    row = json.loads((tmp_path / "run" / "results.json").read_text())
    assert row["init"] == str(lm / "run" / "best") and row["dev_accuracy"] > 50
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["bidirectional"] is False and config["pooling"] == "concat" and config["hidden_size"] == 16


def test_an_lm_of_another_shape_or_family_is_a_one_line_error(lm, tmp_path, capsys):
    base = ["finetune", "--task", "sst2", "--model", "bilstm", "--data", str(lm / "sst2")]
    code = main([*base, "--init", str(lm / "run" / "best"), "--out", str(tmp_path / "a"),
                 "--set", "model_config.hidden_size=32"])  # fmt: skip
    assert (
        code == 2
        and "model_config.hidden_size: 32, but the language model it starts from has 16"
        in capsys.readouterr().err
    )


def test_random_init_keeps_the_lms_tokenizer_and_shape_not_its_weights(lm):
    lm_model, lm_tok = registry.load(lm / "run" / "best", head="causal_lm")
    net, tok = classifier_from(lm, lm_weights=False)
    assert tok.vocab_size == lm_tok.vocab_size and net.config.hidden_size == lm_model.config.hidden_size
    assert not torch.equal(net.bilstm.embeddings.weight, lm_model.embed.weight)
    from dataclasses import replace

    replace(from_scratch("bilstm"), init=str(lm / "run" / "best"), random_init=True)  # accepted with an LM
    with pytest.raises(Exception, match="random_init: a setting of --init"):
        replace(from_scratch("bilstm"), random_init=True)


def test_an_lm_start_takes_no_vectors_or_features(lm, tmp_path, capsys):
    base = [
        "finetune",
        "--task",
        "sst2",
        "--model",
        "bilstm",
        "--data",
        str(lm / "sst2"),
        "--init",
        str(lm / "run" / "best"),
    ]
    for extra in (["--vectors", str(lm / "v.txt")], ["--features", str(lm / "run" / "best")]):
        assert main([*base, "--out", str(tmp_path / "o"), *extra]) == 2
        assert "not with vectors or features" in capsys.readouterr().err


def test_ulmfits_blocks_take_a_batch_of_one_and_refuse_a_tagger():
    from seq2bert.errors import ConfigError
    from seq2bert.models.bilstm.config import BiLSTMConfig
    from seq2bert.models.bilstm.model import BiLSTMForSequenceClassification, BiLSTMForTokenClassification

    cfg = BiLSTMConfig(vocab_size=20, embedding_dim=8, hidden_size=8, pooling="concat", classifier_hidden=4)
    model = BiLSTMForSequenceClassification(cfg).train()
    out = model(torch.tensor([[3, 4, 5]]), labels=torch.tensor([1]))  # one example: no batch variance
    assert out.logits.shape == (1, 2) and torch.isfinite(out.loss)
    assert model(torch.tensor([[3, 4, 5], [6, 7, 0]]), torch.tensor([[1, 1, 1], [1, 1, 0]])).logits.shape == (
        2,
        2,
    )
    with pytest.raises(ConfigError, match="classifier_hidden: ULMFiT's classifier blocks"):
        BiLSTMForTokenClassification(cfg)


def test_one_epoch_of_gradual_unfreezing_trains_the_head_alone(lm, tmp_path):
    args = ["finetune", "--task", "sst2", "--model", "bilstm", "--init", str(lm / "run" / "best"),
            "--data", str(lm / "sst2"), "--out", str(tmp_path / "run"), "--set", "train.max_epochs=1",
            "--set", "train.gradual_unfreezing=true", "--set", "train.layer_lr_decay=0.385",
            "--set", "model_config.pooling=concat"]  # fmt: skip
    assert main(args) == 0
    import seq2bert

    model = seq2bert.from_pretrained(tmp_path / "run" / "best")
    lm_model, _ = registry.load(lm / "run" / "best", head="causal_lm")
    assert torch.equal(
        model.bilstm.embeddings.weight, lm_model.embed.weight
    )  # frozen in epoch 0: the head alone trained
    for name, value in lm_model.rnn.rnn.state_dict().items():
        assert torch.equal(model.bilstm.lstm.rnn.state_dict()[name], value)
    row = json.loads((tmp_path / "run" / "results.json").read_text())
    assert row["trainable_parameters"] == sum(p.numel() for p in model.parameters())  # all of them, in turn
