"""`seq2bert finetune --set train.lora.r=…` (LoRA, Hu et al. 2021): the run trains the low-rank factors and the
head only, its checkpoints for resuming hold just those, its best/ is the merged model — a plain checkpoint
of the family that transformers reads —, a killed run resumes exactly, and bad settings are one line."""

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from seq2bert.cli import main
from seq2bert.models import registry
from seq2bert.models.bert.pretrained import load_bert
from seq2bert.pipelines import classify
from tests.recipes.test_finetune import init_dir, run, write_sst2  # noqa: F401 (a fixture)
from tests.recipes.test_gpt_finetune import finetune as gpt_finetune
from tests.recipes.test_gpt_finetune import gpt2_dir, write_glue  # noqa: F401 (a fixture)


def one_line(capsys, *args: str) -> str:
    """The CLI's one-line error of ``seq2bert ARGS`` (exit status 2)."""
    capsys.readouterr()
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("seq2bert: error:")]  # past progress bars
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


LORA = ["--set", "train.lora.r=4", "--set", "train.lr=1e-2"]  # the factors of a tiny model want a large lr


def lora_count(config, r, classifier):
    """r·(k + d) for each of W_q, W_k, W_v, W_o, W_1, W_2 of each layer, plus the new classifier."""
    H, F, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return L * r * (4 * (H + H) + (H + F) + (F + H)) + classifier


def test_a_lora_run_learns_keeps_small_checkpoints_and_writes_a_plain_merged_best(init_dir, tmp_path, capsys):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    out = tmp_path / "run"
    assert run("sst2", tmp_path / "sst2", init_dir, out, "--set", "train.max_epochs=6", *LORA) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["dev_accuracy"] >= 80, results
    init, _ = load_bert(init_dir)
    H = init.config.hidden_size
    assert results["trainable_parameters"] == lora_count(init.config, 4, 2 * H + 2)
    assert results["params"] == sum(p.numel() for p in init.bert.parameters()) + 2 * H + 2
    assert results["lora"] == {"r": 4, "alpha": 8.0, "targets": ["query", "key", "value", "output", "ffn_in",
                                                                 "ffn_out"], "dropout": 0.0}  # fmt: skip
    # a checkpoint to resume holds what trains: the factors and the classifier, nothing frozen
    last = out / f"checkpoint-{results['steps']}"
    assert not (last / "model.safetensors").exists()
    adapter = load_file(last / "lora.safetensors")
    assert sum(t.numel() for t in adapter.values()) == results["trainable_parameters"]
    assert all(k.endswith(("lora_A", "lora_B")) or k.startswith("classifier.") for k in adapter)
    assert results["checkpoint_bytes"] == sum(f.stat().st_size for f in last.iterdir())
    # best/ is the merged model: the family's own checkpoint, the frozen weights the init's
    best = load_file(out / "best" / "model.safetensors")
    pretrained = load_file(init_dir / "model.safetensors")
    assert not any("lora" in k for k in best)
    assert best.keys() - {"classifier.weight", "classifier.bias"} <= pretrained.keys()
    for key in ("bert.embeddings.word_embeddings.weight", "bert.encoder.layer.0.attention.self.query.bias"):
        assert torch.equal(best[key], pretrained[key])  # frozen: the embeddings, W_0's bias
    query = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(best[query], pretrained[query])  # W_0 + (α/r) B A
    ours, tok = load_bert(out / "best")
    theirs = transformers.BertForSequenceClassification.from_pretrained(out / "best").eval()
    enc = tok.encode_batch(["a superb film", "it was dull"], padding="longest", return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(ours(**dict(enc)).logits, theirs(**dict(enc)).logits, rtol=0, atol=1e-5)
    assert [r["label"] for r in classify(["it was dull and poor", "lovely story"], (ours, tok))] == ["0", "1"]
    capsys.readouterr()
    assert main(["evaluate", str(out)]) == 0  # the merged best/ scores as the run scored it
    assert f"{results['dev_accuracy']:.2f}" in capsys.readouterr().out
    err = one_line(capsys, "evaluate", str(last))
    assert "a LoRA run's checkpoint" in err and "best/" in err


def test_a_killed_lora_run_resumes_exactly(init_dir, tmp_path, capsys):  # noqa: F811
    write_sst2(tmp_path / "sst2", np.random.default_rng(1))
    steps = ["--set", "train.max_steps=6", "--set", "train.eval_every=3", "--set", "train.lora.dropout=0.1"]
    for name in ("a", "b"):
        assert run("sst2", tmp_path / "sst2", init_dir, tmp_path / name, *steps, *LORA) == 0
    for name in ("checkpoint-6", "results.json"):  # as if killed after checkpoint-3 (best/: step 3's, or 6's)
        path = tmp_path / "b" / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert main(["finetune", "--out", str(tmp_path / "b"), "--resume"]) == 0  # the rest from run.json
    for file in ("checkpoint-6/lora.safetensors", "best/model.safetensors"):
        a, b = (load_file(tmp_path / name / file) for name in ("a", "b"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), file
    # a checkpoint of other settings is not resumed with them
    shutil.rmtree(tmp_path / "b" / "checkpoint-6")
    err = one_line(capsys, "finetune", "--out", str(tmp_path / "b"), "--resume", "--set", "train.lora.r=2")
    assert "lora.safetensors: written with LoRA {'r': 4" in err


def test_the_real_minilm_trains_its_factors_and_head_and_transformers_reads_the_merged_best(
    minilm_dir, tmp_path
):
    transformers = pytest.importorskip("transformers")
    write_sst2(tmp_path / "sst2", np.random.default_rng(2))
    out = tmp_path / "run"
    steps = ["--set", "train.max_steps=2", "--set", "data.batch_size=8", "--set", "train.lora.r=8"]
    assert run("sst2", tmp_path / "sst2", minilm_dir, out, *steps) == 0
    results = json.loads((out / "results.json").read_text())
    # 6 layers × r·(k + d) over W_q W_k W_v W_o (384 × 384) and W_1, W_2 (384 × 1536), plus the classifier
    assert results["trainable_parameters"] == 6 * 8 * (4 * 768 + 2 * (384 + 1536)) + 2 * 384 + 2
    theirs = transformers.BertForSequenceClassification.from_pretrained(out / "best").eval()
    ours, tok = load_bert(out / "best")
    enc = tok.encode_batch(["a superb film"], return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(ours(**dict(enc)).logits, theirs(**dict(enc)).logits, rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "setting, message",
    [
        ("train.lora.r=-1", "train.lora.r: the rank must be >= 0 (0: no LoRA), got -1"),
        ("train.lora.alpha=0", "train.lora.alpha: must be > 0, got 0.0"),
        ("train.lora.dropout=1", "train.lora.dropout: must be in [0, 1), got 1.0"),
        ("train.lora.targets=[query,qery]", "train.lora.targets: unknown target 'qery'; did you mean query?"),
        ("train.lora.targets=[]", "train.lora.targets: expected some of query, key, value"),
        ("train.lora.r=4 train.average_last=3", "train.average_last: not with train.lora.r"),
        ("train.lora.r=4 random_init=true", "train.lora.r: LoRA adapts a pretrained checkpoint (--init)"),
    ],
)
def test_bad_lora_settings_are_one_line_and_exit_2(init_dir, tmp_path, capsys, setting, message):  # noqa: F811
    write_sst2(tmp_path / "sst2", np.random.default_rng(3))
    args = ["finetune", "--task", "sst2", "--init", str(init_dir), "--data", str(tmp_path / "sst2")]
    settings = [x for one in setting.split() for x in ("--set", one)]
    err = one_line(capsys, *args, "--out", str(tmp_path / "run"), *settings)
    assert message in err
    assert not (tmp_path / "run").exists()


def test_lora_where_every_weight_trains_is_one_line_and_exit_2(tmp_path, capsys):
    err = one_line(capsys, "finetune", "--task", "sst2", "--model", "bilstm", "--data", str(tmp_path), "--out",
                   str(tmp_path / "run"), "--set", "train.lora.r=4")  # fmt: skip
    assert "train.lora.r: LoRA adapts a pretrained checkpoint (--init)" in err
    (tmp_path / "text.txt").write_text("a few words of text\n")
    for command in (
        ["train"],
        ["pretrain", str(tmp_path / "text.txt")],
        ["train-lm", str(tmp_path / "text.txt")],
    ):
        out = tmp_path / command[0]  # the recipes that train every weight
        err = one_line(capsys, *command, "--out", str(out), "--set", "train.lora.r=4")
        assert "train.lora.r: this command trains every weight; LoRA is for `seq2bert finetune`" in err, err
        assert not out.exists()


def test_a_gpt2_lora_run_trains_its_token_embedding_and_transformers_reads_the_merged_best(
    gpt2_dir,  # noqa: F811
    tmp_path,
):
    """A decoder reads a task through GPT-1's [start] [delim] [extract], new rows of its token embedding: the
    embedding (a new matrix, its old rows copied) trains in full beside the factors and the head (``score``)."""
    transformers = pytest.importorskip("transformers")
    write_glue(tmp_path / "sst2", "sst2", np.random.default_rng(0), n=(64, 16))
    out = tmp_path / "run"
    assert gpt_finetune("sst2", tmp_path / "sst2", gpt2_dir, out, "--set", "train.max_steps=3",
                        "--set", "train.lora.r=2") == 0  # fmt: skip
    adapter = load_file(out / "checkpoint-3" / "lora.safetensors")
    embedding = "transformer.embeddings.token.weight"
    assert embedding in adapter and "score.weight" in adapter
    assert {k for k in adapter if not k.endswith(("lora_A", "lora_B"))} == {embedding, "score.weight"}
    before = load_file(gpt2_dir / "model.safetensors")
    best = load_file(out / "best" / "model.safetensors")
    rows = before["transformer.wte.weight"].shape[0]
    assert best["transformer.wte.weight"].shape[0] == rows + 3
    torch.testing.assert_close(
        best["transformer.wte.weight"][:rows], before["transformer.wte.weight"], rtol=0, atol=0.05
    )
    assert torch.equal(best["transformer.wpe.weight"], before["transformer.wpe.weight"])  # frozen
    theirs = transformers.GPT2ForSequenceClassification.from_pretrained(out / "best").eval()
    ours, _ = registry.load(out / "best")
    ids = torch.tensor([[5, 9, 11, rows + 2]])
    with torch.no_grad():
        torch.testing.assert_close(
            ours(input_ids=ids).logits, theirs(input_ids=ids).logits, rtol=0, atol=1e-5
        )
