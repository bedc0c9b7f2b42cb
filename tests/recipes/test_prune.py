"""`seq2bert prune` on a fine-tuned tiny BERT: heads removed least important first, step by step, into a
directory every command reads (and transformers, dense); weights zeroed by magnitude; bad requests one line."""

import json

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.models import pruning
from seq2bert.models.pretrained import load
from tests.recipes.test_finetune import init_dir, run, write_sst2  # noqa: F401 (init_dir: a fixture)


@pytest.fixture(scope="module")
def fine_tuned(init_dir, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("prune")
    write_sst2(root / "sst2", np.random.default_rng(0))
    assert run("sst2", root / "sst2", init_dir, root / "run", "--set", "train.max_epochs=3") == 0
    return root / "run"


def test_heads_go_least_important_first_and_the_result_is_scored_by_evaluate(fine_tuned, tmp_path, capsys):
    out = tmp_path / "heads"
    assert (
        main(
            [
                "prune",
                str(fine_tuned),
                "--heads",
                "0.5",
                "--step",
                "0.25",
                "--examples",
                "200",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads((out / "prune.json").read_text())
    assert (record["heads_before"], record["heads_after"], len(record["steps"])) == (4, 2, 2)
    for step in record["steps"]:  # the head removed had the lowest importance of those a layer could lose
        ((layer, (head,)),) = step["removed"].items()
        scores = [(s, i, int(h)) for i, layer_scores in enumerate(step["importance"]) for h, s in layer_scores.items()
                  if len(layer_scores) > 1]  # fmt: skip
        assert min(scores)[1:] == (int(layer), head)
    model, _ = load(out)
    assert pruning.count_heads(model) == 2 and model.config.pruned_heads == {
        int(k): v for k, v in record["pruned_heads"].items()
    }
    assert (out / "vocab.txt").is_file() or (out / "tokenizer.json").is_file()
    capsys.readouterr()
    assert main(["evaluate", str(out)]) == 0  # its run.json: the same task
    assert "accuracy" in capsys.readouterr().out


def test_a_dense_directory_is_what_transformers_reads(fine_tuned, tmp_path):
    transformers = pytest.importorskip("transformers")
    args = ["--heads", "0.5", "--step", "0.5", "--examples", "100"]
    assert main(["prune", str(fine_tuned), *args, "--out", str(tmp_path / "compact")]) == 0
    assert main(["prune", str(fine_tuned), *args, "--dense", "--out", str(tmp_path / "dense")]) == 0
    ours, tok = load(tmp_path / "compact")
    theirs = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "dense").eval()
    enc = dict(
        tok.encode_batch(["a superb film", "it was dull and poor"], padding="longest", return_tensors="pt")
    )
    with torch.no_grad():
        torch.testing.assert_close(ours(**enc).logits, theirs(**enc).logits, rtol=0, atol=1e-5)


def test_weights_are_zeroed_by_magnitude(fine_tuned, tmp_path, capsys):
    assert main(["prune", str(fine_tuned), "--sparsity", "0.5", "--out", str(tmp_path / "sparse")]) == 0
    assert "encoder weights 50.0 % zero" in capsys.readouterr().out
    model, _ = load(tmp_path / "sparse")
    linears = pruning.encoder_linears(model)
    zeros = sum(int((m.weight == 0).sum()) for m in linears) / sum(m.weight.numel() for m in linears)
    assert zeros == pytest.approx(0.5, abs=1e-3)


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "prune: give --heads P"),
        (["--heads", "1.5"], "--heads: a fraction in [0, 1)"),
        (["--sparsity", "1"], "--sparsity: a fraction in [0, 1), got 1.0"),
    ],
)
def test_bad_requests_are_one_line(fine_tuned, tmp_path, capsys, extra, message):
    assert main(["prune", str(fine_tuned), *extra, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()
