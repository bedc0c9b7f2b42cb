"""`seq2bert finetune --set sesame.…`: SesameBERT's options train with the task, its checkpoint keeps them (and
the pipelines read them), a run resumes with them, and bad settings are one line; BERT's "+ BiLSTM"
(``--set bilstm_top.enabled=true``) the same way, on a model pretrained left to right as in Table 5."""

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from seq2bert.cli import main
from seq2bert.models import encoder_options, sesame
from seq2bert.models.pretrained import load
from seq2bert.pipelines import classify
from tests.recipes.test_finetune import init_dir, run, write_sst2  # noqa: F401 (init_dir: a fixture)

OPTIONS = ["--set", "sesame.squeeze_excitation=true", "--set", "sesame.gaussian_blur=true"]


def test_the_options_train_with_the_task_and_the_checkpoint_keeps_them(init_dir, tmp_path, capsys):  # noqa: F811
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert (
        run("sst2", tmp_path / "sst2", init_dir, tmp_path / "run", "--set", "train.max_epochs=3", *OPTIONS)
        == 0
    )
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_accuracy"] >= 90, results
    best = tmp_path / "run" / "best"
    assert json.loads((best / "config.json").read_text())["sesame"]["gaussian_blur"] is True
    trained = load_file(best / "sesame.safetensors")
    assert set(trained) == {"bert.excitation.squeeze.weight", "bert.excitation.squeeze.bias",
                            "bert.excitation.excite.weight", "bert.excitation.excite.bias"}  # fmt: skip
    assert not torch.all(trained["bert.excitation.excite.bias"] == 0.8)  # it learned
    model, tok = load(best)
    assert sesame.settings_of(model).squeeze_excitation
    assert classify("a superb film", (model, tok))["label"] == "1"
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run")]) == 0  # the checkpoint scored again: the same figure
    assert f"{results['dev_accuracy']:.2f}" in capsys.readouterr().out
    assert main(["quantize", str(best), "--out", str(tmp_path / "int8")]) == 0  # keeps the options too
    int8, _ = load(tmp_path / "int8")
    assert sesame.settings_of(int8) == sesame.settings_of(model)
    enc = tok.encode_batch(["a superb film", "it was dull"], padding="longest", return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(int8(**dict(enc)).logits, model(**dict(enc)).logits, rtol=0, atol=0.05)


def test_a_killed_run_resumes_exactly_with_its_options(init_dir, tmp_path):  # noqa: F811
    write_sst2(tmp_path / "sst2", np.random.default_rng(1))
    steps = ["--set", "train.max_steps=6", "--set", "train.eval_every=3"]
    for name in ("a", "b"):
        assert run("sst2", tmp_path / "sst2", init_dir, tmp_path / name, *steps, *OPTIONS) == 0
    for name in ("checkpoint-6", "results.json"):  # as if killed after checkpoint-3
        path = tmp_path / "b" / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert main(["finetune", "--out", str(tmp_path / "b"), "--resume"]) == 0  # the rest from run.json
    for file in (
        "checkpoint-6/sesame.safetensors",
        "checkpoint-6/model.safetensors",
        "best/sesame.safetensors",
    ):
        a, b = (load_file(tmp_path / name / file) for name in ("a", "b"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), file


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--set", "sesame.kernel_size=4"], "sesame.kernel_size: an odd number >= 1, got 4"),
        (["--set", "sesame.sigma=0"], "sesame.sigma: must be > 0, got 0"),
    ],
)
def test_bad_settings_are_one_line(init_dir, tmp_path, capsys, extra, message):  # noqa: F811
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert run("sst2", tmp_path / "sst2", init_dir, tmp_path / "run", *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_bilstm_on_top_of_a_left_to_right_model_trains_and_its_checkpoint_keeps_it(init_dir, tmp_path):  # noqa: F811
    ltr = tmp_path / "ltr"  # the tiny BERT as if pretrained left to right (BERT's LTR ablation)
    shutil.copytree(init_dir, ltr)
    config = json.loads((ltr / "config.json").read_text())
    (ltr / "config.json").write_text(json.dumps({**config, "is_decoder": True}))
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    top = ["--set", "bilstm_top.enabled=true", "--set", "train.max_epochs=3"]
    assert run("sst2", tmp_path / "sst2", ltr, tmp_path / "run", *top) == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["dev_accuracy"] >= 90
    best = tmp_path / "run" / "best"
    assert json.loads((best / "config.json").read_text())["bilstm_top"] == {"enabled": True, "layers": 1}
    assert all(k.startswith("bert.top.lstm.") for k in load_file(best / "bilstm_top.safetensors"))
    model, tok = load(best)
    assert set(encoder_options.settings_of(model)) == {"bilstm_top"}
    assert main(["quantize", str(best), "--out", str(tmp_path / "int8")]) == 0
    int8, _ = load(tmp_path / "int8")
    assert encoder_options.settings_of(int8) == encoder_options.settings_of(model)
    enc = tok.encode_batch(["a superb film", "it was dull"], padding="longest", return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(int8(**dict(enc)).logits, model(**dict(enc)).logits, rtol=0, atol=0.05)
