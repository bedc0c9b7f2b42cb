"""`seq2bert distill` end to end: a tiny BERT fine-tuned on a tiny task is the teacher; students of half its
layers (initialised from its layers 2 and 4) and narrower ones (from random weights, through TinyBERT's two
stages) learn the task from it, keep a transformers-readable best/, and report the teacher's score beside
theirs; the same student fine-tuned without a teacher is the comparison."""

import json

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.models import registry
from seq2bert.recipes.distill import StudentConfig, copy_from_teacher, student_config
from tests.recipes.test_finetune import init_dir, write_conll, write_sst2  # noqa: F401 (a fixture)
from tests.recipes.test_pretrain import TINY, books  # noqa: F401 (a fixture)

FAST = ["--set", "data.batch_size=16", "--set", "train.log_every=5"]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, init_dir):  # noqa: F811
    """A 2-layer BERT fine-tuned on the tiny SST-2 (dev accuracy ≥ 90 %), and the data."""
    root = tmp_path_factory.mktemp("teacher")
    write_sst2(root / "sst2", np.random.default_rng(0))
    assert main(["finetune", "--task", "sst2", "--init", str(init_dir), "--data", str(root / "sst2"), "--out",
                 str(root / "run"), "--set", "train.lr=2e-3", "--set", "train.max_epochs=4", *FAST]) == 0  # fmt: skip
    assert json.loads((root / "run" / "results.json").read_text())["dev_accuracy"] >= 90
    return root / "run" / "best", root / "sst2"


def distill(teacher_dir, data, out, *extra):
    return main(["distill", "--teacher", str(teacher_dir), "--task", "sst2", "--data", str(data), "--out", str(out),
                 "--set", "train.lr=2e-3", *FAST, *extra])  # fmt: skip


def test_a_half_depth_student_starts_from_the_teachers_layers_and_learns_its_task(teacher, tmp_path, capsys):
    teacher_dir, data = teacher
    assert distill(teacher_dir, data, tmp_path / "s", "--set", "student.num_hidden_layers=1", "--set",
                   "train.max_epochs=3") == 0  # fmt: skip
    r = json.loads((tmp_path / "s" / "results.json").read_text())
    assert r["method"] == "distilbert" and r["layers"] == 1 and r["params"] < r["teacher_params"]
    assert r["dev_accuracy"] >= 90 and r["teacher_dev_accuracy"] >= 90
    assert r["of_teacher"] == pytest.approx(100 * r["dev_accuracy"] / r["teacher_dev_accuracy"])
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "s" / "best").eval()
    ours, tok = registry.load(tmp_path / "s" / "best")
    ids = torch.tensor([tok.encode("a great film .").ids])
    torch.testing.assert_close(ours(input_ids=ids).logits, hf(input_ids=ids).logits, atol=1e-5, rtol=1e-5)
    out = capsys.readouterr().out
    assert "| dev accuracy |" in out and "| teacher accuracy |" in out and "% of teacher" in out
    # its best/ (a distillation's run.json) and its int8 copy are scored again on the task they were trained on
    assert main(["evaluate", str(tmp_path / "s")]) == 0
    assert f"{r['dev_accuracy']:.2f}" in capsys.readouterr().out
    assert main(["quantize", str(tmp_path / "s" / "best"), "--out", str(tmp_path / "s8")]) == 0
    assert main(["evaluate", str(tmp_path / "s8")]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_the_student_copies_the_mapped_layers_and_the_head():
    from seq2bert.models.bert.config import BertConfig

    family = registry.get("bert")
    cfg = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=6, num_attention_heads=2, intermediate_size=32,
                     max_position_embeddings=16, id2label={0: "n", 1: "p"})  # fmt: skip
    torch.manual_seed(0)
    teacher = family.make(cfg, "BertForSequenceClassification")
    student = family.make(student_config(cfg, StudentConfig()), "BertForSequenceClassification")
    assert student.config.num_hidden_layers == 3
    assert copy_from_teacher(student, teacher, [2, 4, 6]) == []
    for m, n in enumerate([2, 4, 6]):
        pairs = zip(
            student.base_model.layer(m).parameters(),
            teacher.base_model.layer(n - 1).parameters(),
            strict=True,
        )
        for a, b in pairs:
            assert torch.equal(a, b)
    assert torch.equal(student.classifier.weight, teacher.classifier.weight)
    narrow = student_config(BertConfig(hidden_size=384, num_attention_heads=12, num_hidden_layers=6),
                            StudentConfig(num_hidden_layers=4, hidden_size=256))  # fmt: skip
    assert (narrow.num_attention_heads, narrow.intermediate_size) == (4, 1024)  # 12 heads pool 3 to 1


def test_tinybert_two_stages_train_a_narrow_student_and_resume_past_stage_one(teacher, tmp_path):
    teacher_dir, data = teacher
    args = ["--set", "method=tinybert", "--set", "student.num_hidden_layers=2", "--set", "student.hidden_size=16",
            "--set", "tinybert.intermediate_epochs=2", "--set", "tinybert.intermediate_lr=2e-3",
            "--set", "train.max_epochs=4"]  # fmt: skip
    assert distill(teacher_dir, data, tmp_path / "t", *args) == 0
    r = json.loads((tmp_path / "t" / "results.json").read_text())
    assert (r["method"], r["hidden_size"]) == ("tinybert", 16)
    assert (tmp_path / "t" / "intermediate" / "results.json").is_file()
    assert (tmp_path / "t" / "best" / "projections.safetensors").is_file() is False  # stage 2: no W_h
    assert list((tmp_path / "t" / "intermediate").glob("checkpoint-*/projections.safetensors"))
    assert r["dev_accuracy"] >= 85, r
    # a resumed run goes past a finished stage 1 and ends as the uninterrupted one did
    (tmp_path / "t" / "results.json").unlink()
    assert distill(teacher_dir, data, tmp_path / "t", "--resume", *args) == 0
    assert json.loads((tmp_path / "t" / "results.json").read_text())["dev_accuracy"] == r["dev_accuracy"]


def test_the_same_student_without_a_teacher_and_tagging(teacher, tmp_path, init_dir):  # noqa: F811
    teacher_dir, data = teacher
    assert distill(teacher_dir, data, tmp_path / "n", "--set", "method=none", "--set", "student.num_hidden_layers=1",
                   "--set", "train.max_epochs=2") == 0  # fmt: skip
    assert json.loads((tmp_path / "n" / "results.json").read_text())["method"] == "none"
    write_conll(tmp_path / "conll", np.random.default_rng(2))
    assert main(["finetune", "--task", "conll2003", "--init", str(init_dir), "--data", str(tmp_path / "conll"),
                 "--out", str(tmp_path / "tc"), "--set", "train.lr=2e-3", "--set", "train.max_epochs=5", *FAST]) == 0  # fmt: skip
    assert main(["distill", "--teacher", str(tmp_path / "tc" / "best"), "--task", "conll2003", "--data",
                 str(tmp_path / "conll"), "--out", str(tmp_path / "sc"), "--set", "student.num_hidden_layers=1",
                 "--set", "train.lr=2e-3", "--set", "train.max_epochs=5", *FAST]) == 0  # fmt: skip
    r = json.loads((tmp_path / "sc" / "results.json").read_text())
    assert r["dev_f1"] >= 85, r


def test_bad_input_is_one_clear_line(teacher, tmp_path, init_dir, capsys):  # noqa: F811
    teacher_dir, data = teacher
    assert distill(init_dir, data, tmp_path / "a") == 2  # a pretraining directory is no task teacher
    assert "needs a fine-tuned BertForSequenceClassification" in capsys.readouterr().err
    assert distill(teacher_dir, data, tmp_path / "b", "--set", "loss.warmth=1") == 2
    assert "loss: unknown term(s) warmth" in capsys.readouterr().err
    assert distill(teacher_dir, data, tmp_path / "c", "--set", "student.num_hidden_layers=9") == 2
    assert "more than the teacher's 2" in capsys.readouterr().err


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, books):  # noqa: F811
    """A 4-layer BERT pretrained for a few steps on the tiny books (a masked-LM teacher)."""
    out = tmp_path_factory.mktemp("pretrained") / "run"
    tiny = [a.replace("num_hidden_layers=2", "num_hidden_layers=4") for a in TINY]
    assert main(["pretrain", str(books), "--out", str(out), *tiny, "--set", "train.max_steps=20"]) == 0
    return out / "best"


CORPUS = ["--set", "corpus.max_seq_length=32", "--set", "corpus.batch_size=4", "--set", "corpus.valid_fraction=0.2",
          "--set", "train.lr=1e-3", "--set", "train.warmup_steps=2", "--set", "train.log_every=1"]  # fmt: skip


def test_distilberts_triple_loss_on_text(pretrained, books, tmp_path, capsys):  # noqa: F811
    """General distillation with DistilBERT's loss lowers the held-out loss; the student starts a task."""
    transformers = pytest.importorskip("transformers")
    assert main(["distill", "--teacher", str(pretrained), "--corpus", str(books), "--out", str(tmp_path / "g"), *CORPUS,
                 "--set", "train.max_steps=30", "--set", "train.eval_every=10"]) == 0  # fmt: skip
    assert "MLM acc %" in capsys.readouterr().out
    evals = [json.loads(x) for x in (tmp_path / "g" / "log.jsonl").read_text().splitlines()]
    evals = [e for e in evals if e["split"] == "valid"]
    assert {"soft", "hard", "cos", "mlm_accuracy"} <= set(evals[0])
    assert evals[-1]["loss"] < evals[0]["loss"]
    r = json.loads((tmp_path / "g" / "results.json").read_text())
    assert (r["layers"], r["method"]) == (2, "distilbert")
    hf = transformers.BertForMaskedLM.from_pretrained(tmp_path / "g" / "best")  # a student transformers reads
    assert hf.config.num_hidden_layers == 2
    # and its encoder starts a task distillation
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert main(["finetune", "--task", "sst2", "--init", str(pretrained), "--data", str(tmp_path / "sst2"), "--out",
                 str(tmp_path / "t"), "--set", "train.lr=2e-3", "--set", "train.max_epochs=1", *FAST]) == 0  # fmt: skip
    assert distill(tmp_path / "t" / "best", tmp_path / "sst2", tmp_path / "s", "--set",
                   f"student.init={tmp_path / 'g' / 'best'}", "--set", "train.max_epochs=1") == 0  # fmt: skip


def test_tinyberts_general_distillation(pretrained, books, tmp_path, capsys):  # noqa: F811
    """TinyBERT's reads the layers only: a teacher without an MLM head (a BertModel, as all-MiniLM-L6-v2)
    serves it, and DistilBERT's loss refuses one in a clear line."""
    from seq2bert.models.bert.pretrained import save_bert

    encoder, tok = registry.load(pretrained, head="base")
    save_bert(encoder, tmp_path / "enc", tok)
    args = ["--set", "student.num_hidden_layers=2", "--set", "student.hidden_size=16", "--set", "train.max_steps=20",
            "--set", "train.eval_every=10"]  # fmt: skip
    assert main(["distill", "--teacher", str(tmp_path / "enc"), "--corpus", str(books), "--out", str(tmp_path / "a"),
                 *CORPUS, *args]) == 2  # fmt: skip
    assert "method=tinybert reads the layers only" in capsys.readouterr().err
    assert main(["distill", "--teacher", str(tmp_path / "enc"), "--corpus", str(books), "--out", str(tmp_path / "b"),
                 *CORPUS, *args, "--set", "method=tinybert"]) == 0  # fmt: skip
    evals = [json.loads(x) for x in (tmp_path / "b" / "log.jsonl").read_text().splitlines()]
    evals = [e for e in evals if e["split"] == "valid"]
    assert {"attention", "hidden"} <= set(evals[0]) and evals[-1]["loss"] < evals[0]["loss"]
    assert json.loads((tmp_path / "b" / "best" / "config.json").read_text())["architectures"] == ["BertModel"]
    assert (tmp_path / "b" / "best" / "projections.safetensors").is_file()  # W_h, W_e: 16 → 32


def test_tinyberts_augmentation_adds_copies_of_the_training_sentences(teacher, tmp_path, capsys):
    teacher_dir, data = teacher
    assert distill(teacher_dir, data, tmp_path / "a", "--set", "augment.copies=2", "--set", "method=tinybert",
                   "--set", "student.num_hidden_layers=1", "--set", "tinybert.intermediate_epochs=1",
                   "--set", "train.max_epochs=1") == 0  # fmt: skip
    r = json.loads((tmp_path / "a" / "results.json").read_text())
    assert r["train_examples"] == 3 * 400  # the tiny SST-2's 400 and two copies of each
    write_conll(tmp_path / "conll", np.random.default_rng(2))
    capsys.readouterr()
    assert main(["distill", "--teacher", str(teacher_dir), "--task", "conll2003", "--data", str(tmp_path / "conll"),
                 "--out", str(tmp_path / "c"), "--set", "augment.copies=2"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "augment.copies: sentence and pair tasks only" in err
