"""`seq2bert distill --set method=mobilebert`: MobileBERT's progressive knowledge transfer from the tiny
fine-tuned BERT teacher — one stage per block, each training that block alone on feature-map and attention
transfer, then pre-training distillation — into a MobileBERT directory that transformers reads."""

import json

import pytest
import torch

from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.mobilebert.config import MobileBertConfig
from seq2bert.models.mobilebert.model import MobileBertForSequenceClassification
from seq2bert.recipes.distill_mobilebert import (
    MobileBertTransferConfig,
    copy_outside_blocks,
    student_config,
    train_only,
)
from tests.recipes.test_distill import distill, teacher  # noqa: F401 (a fixture)
from tests.recipes.test_finetune import init_dir  # noqa: F401 (a fixture)

MINILM = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                    intermediate_size=1536, id2label={0: "negative", 1: "positive"})  # fmt: skip
SMALL = [
    "--set",
    "method=mobilebert",
    "--set",
    "mobilebert.bottleneck=16",
    "--set",
    "mobilebert.embedding_size=16",
]


def test_the_student_of_minilm_is_mobilebert_shaped_at_the_teachers_width():
    c = student_config(MINILM, MobileBertTransferConfig(), 0, 0, 0, 0)
    assert isinstance(c, MobileBertConfig)
    assert (c.hidden_size, c.true_hidden_size, c.num_hidden_layers, c.num_attention_heads) == (384, 128, 6, 4)
    assert (c.intermediate_size, c.num_feedforward_networks, c.embedding_size) == (512, 4, 128)
    assert c.vocab_size == 30522 and c.id2label == MINILM.id2label and c.normalization_type == "no_norm"
    with pytest.raises(ConfigError, match="feature maps have the teacher's width 384"):
        student_config(MINILM, MobileBertTransferConfig(), 0, 0, 0, 256)
    with pytest.raises(ConfigError, match="more than the teacher's 6"):
        student_config(MINILM, MobileBertTransferConfig(), 8, 0, 0, 0)
    from seq2bert.models.roberta.config import RobertaConfig

    with pytest.raises(ConfigError, match="a BERT teacher"):
        student_config(RobertaConfig(), MobileBertTransferConfig(), 0, 0, 0, 0)


def test_a_stage_trains_its_block_alone_and_the_teachers_head_is_copied():
    torch.manual_seed(0)
    small = BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=16, id2label={0: "a", 1: "b"})  # fmt: skip
    bert = registry.get("bert").make(small, "BertForSequenceClassification")
    m = MobileBertTransferConfig(bottleneck=16, embedding_size=16)
    student = MobileBertForSequenceClassification(student_config(small, m, 0, 0, 0, 0))
    copied = copy_outside_blocks(student, bert)
    assert "classifier.weight" in copied and "mobilebert.pooler.weight" in copied
    assert "mobilebert.embeddings.position_embeddings.weight" in copied
    assert not any(".layers." in k or "word_embeddings" in k for k in copied)  # other shapes: left random
    assert not any("embeddings.norm" in k for k in copied)  # LayerNorm's γ, β are no NoNorm's
    assert torch.equal(student.classifier.weight, bert.classifier.weight)
    trained = lambda: {n for n, p in student.named_parameters() if p.requires_grad}  # noqa: E731
    train_only(student, 2)
    assert trained() and all(".layers.1." in n for n in trained())
    train_only(student, 1)
    assert any("embeddings" in n for n in trained()) and any(".layers.0." in n for n in trained())
    assert not any(".layers.1." in n or ".layers.2." in n or "classifier" in n for n in trained())
    train_only(student, None)
    assert trained() == {n for n, _ in student.named_parameters()}


def test_train_max_minutes_bounds_the_whole_distillation_not_each_stage():
    from seq2bert.recipes.distill import stage_budget
    from seq2bert.training.config import TrainConfig

    assert stage_budget(TrainConfig(max_minutes=55), 0).max_minutes == 55
    assert stage_budget(TrainConfig(max_minutes=55), 20 * 60).max_minutes == pytest.approx(35)
    assert 0 < stage_budget(TrainConfig(max_minutes=55), 60 * 60).max_minutes < 0.01  # nothing left
    assert stage_budget(TrainConfig(max_minutes=0), 60 * 60).max_minutes == 0  # no limit stays none


def test_progressive_transfer_then_prediction_distillation_and_resume(teacher, tmp_path):  # noqa: F811
    teacher_dir, data = teacher
    args = [*SMALL, "--set", "mobilebert.layer_epochs=2", "--set", "mobilebert.layer_lr=2e-3",
            "--set", "train.max_epochs=4"]  # fmt: skip
    assert distill(teacher_dir, data, tmp_path / "m", *args) == 0
    r = json.loads((tmp_path / "m" / "results.json").read_text())
    assert r["method"] == "mobilebert" and r["layers"] == 2
    stages = [
        json.loads((tmp_path / "m" / "transfer" / f"layer-{i}" / "results.json").read_text()) for i in (1, 2)
    ]
    assert [s["stage"] for s in stages] == ["layer-1", "layer-2"] and all(s["steps"] > 0 for s in stages)
    assert all(s["train_seconds"] > 0 for s in stages)
    assert r["train_seconds"] > sum(s["train_seconds"] for s in stages)  # the row's time is every stage's
    # stage 2 left block 1 as stage 1 ended it
    from safetensors.torch import load_file

    def weights(stage):
        (last,) = sorted((tmp_path / "m" / "transfer" / stage).glob("checkpoint-*"))[-1:]
        return load_file(str(last / "model.safetensors"))

    one, two = weights("layer-1"), weights("layer-2")
    block_1 = [k for k in one if ".layer.0." in k]
    block_2 = [k for k in one if ".layer.1." in k]
    assert block_1 and block_2
    assert all(torch.equal(one[k], two[k]) for k in block_1)
    assert not all(torch.equal(one[k], two[k]) for k in block_2)
    assert r["dev_accuracy"] >= 85, r
    transformers = pytest.importorskip("transformers")
    hf = transformers.MobileBertForSequenceClassification.from_pretrained(tmp_path / "m" / "best").eval()
    ours, tok = registry.load(tmp_path / "m" / "best")
    assert type(ours).__name__ == "MobileBertForSequenceClassification"
    ids = torch.tensor([tok.encode("a great film .").ids])
    torch.testing.assert_close(ours(input_ids=ids).logits, hf(input_ids=ids).logits, atol=1e-5, rtol=1e-5)
    # a run killed in its last stage before that stage's first checkpoint: --resume goes past the finished
    # block stages (their last weights loaded) and trains the last stage again from them, as uninterrupted
    import shutil

    def first_checkpoint():
        found = sorted((tmp_path / "m").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        return load_file(str(found[0] / "model.safetensors"))

    uninterrupted = first_checkpoint()
    for path in [
        *(tmp_path / "m").glob("checkpoint-*"),
        tmp_path / "m" / "best",
        tmp_path / "m" / "results.json",
    ]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert distill(teacher_dir, data, tmp_path / "m", "--resume", *args) == 0
    again = json.loads((tmp_path / "m" / "results.json").read_text())
    assert again["steps"] == r["steps"] and again["dev_accuracy"] == r["dev_accuracy"]
    resumed = first_checkpoint()
    assert all(torch.equal(resumed[k], uninterrupted[k]) for k in uninterrupted)


def test_a_student_of_another_width_is_one_clear_line(teacher, tmp_path, capsys):  # noqa: F811
    teacher_dir, data = teacher
    assert distill(teacher_dir, data, tmp_path / "x", *SMALL, "--set", "student.hidden_size=8") == 2
    assert "feature maps have the teacher's width 32" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
