"""Drafts for speculative decoding by `seq2bert distill` (recipes/distill_decoder.py): the word-level
distillation loss against its equation, the student started from the teacher's layers g(m), a GPT-2 student
on text and a Transformer student of a translation run — each a directory of its teacher's family that
decodes, and drafts for its teacher (the same outputs)."""

import json

import pytest
import torch

from seq2bert.cli import main
from seq2bert.models import registry
from seq2bert.objectives.distillation import DistillWeights, NextTokenDistiller
from seq2bert.pipelines import generate, translate
from seq2bert.recipes.distill_decoder import make_student
from tests.models.test_gpt_generate import CORPUS, tiny_directory
from tests.models.tiny_decoders import tiny_gpt2, tiny_transformer
from tests.serve.conftest import checkpoints as served_checkpoints

checkpoints = served_checkpoints


def test_the_loss_is_the_soft_and_hard_terms_of_its_equation():
    teacher, student = tiny_gpt2(2, 0), tiny_gpt2(1, 1)
    ids = torch.randint(3, 29, (2, 9))
    labels = ids.clone()
    labels[1, 6:] = -100  # three positions without a label
    w = DistillWeights(soft=3.0, hard=0.5, temperature=2.0)
    loss = NextTokenDistiller(student, teacher, w, shift=True)(input_ids=ids, labels=labels)
    zs, zt = student(ids).logits[:, :-1] / 2.0, teacher(ids).logits[:, :-1] / 2.0
    real = labels[:, 1:].ne(-100)
    soft = -(zt.softmax(-1) * zs.log_softmax(-1)).sum(-1)[real].mean() * 4.0  # T² · CE
    hard = torch.nn.functional.cross_entropy(student(ids).logits[:, :-1][real], labels[:, 1:][real])
    assert torch.allclose(loss, 3.0 * soft + 0.5 * hard, atol=1e-5)
    loss.backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert all(p.grad is not None for p in student.parameters() if p.requires_grad)


@pytest.mark.parametrize("family", ["gpt2", "transformer"])
def test_the_student_starts_from_the_teachers_layers(family):
    teacher = tiny_gpt2(4, 0) if family == "gpt2" else tiny_transformer(2, 0)
    student = make_student(registry.family_of(teacher), teacher, 1 if family == "transformer" else 2)
    t, s = teacher.state_dict(), student.state_dict()
    if family == "gpt2":  # g(m) = 2m: student layers 0, 1 from teacher layers 1, 3
        assert torch.equal(
            s["transformer.layers.0.self_attn.qkv.weight"], t["transformer.layers.1.self_attn.qkv.weight"]
        )
        assert torch.equal(
            s["transformer.layers.1.feed_forward.w_1.weight"],
            t["transformer.layers.3.feed_forward.w_1.weight"],
        )
        assert student.config.n_layer == 2
    else:  # g(1) = 2 in both stacks
        assert torch.equal(
            s["decoder.layers.0.self_attn.qkv.weight"], t["decoder.layers.1.self_attn.qkv.weight"]
        )
        assert torch.equal(
            s["encoder.layers.0.self_attn.qkv.weight"], t["encoder.layers.1.self_attn.qkv.weight"]
        )
        assert (student.config.encoder_layers, student.config.decoder_layers) == (1, 1)
    shared = [k for k in s if ".layers." not in k]
    assert shared and all(torch.equal(s[k], t[k]) for k in shared)  # embeddings, output layer, norms


def test_a_gpt2_student_on_text_is_a_draft_of_its_teacher(tmp_path, capsys):
    teacher = tmp_path / "teacher"
    tiny_directory(teacher, n_layer=2)
    text = tmp_path / "books"
    text.mkdir()
    for i in range(4):
        (text / f"book{i}.txt").write_text("\n".join(CORPUS[: 5 + i]) + "\n")
    out = tmp_path / "draft"
    settings = ["student.num_hidden_layers=1", "corpus.documents=file", "corpus.valid_fraction=0.25",
                "corpus.max_seq_length=16", "corpus.batch_size=4", "train.max_steps=4", "train.eval_every=2",
                "train.bf16=false"]  # fmt: skip
    code = main(["distill", "--teacher", str(teacher), "--corpus", str(text), "--out", str(out),
                 *[x for s in settings for x in ("--set", s)]])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "results.json").read_text())
    assert results["layers"] == 1 and results["steps"] == 4
    assert results["valid_perplexity"] > 1 and results["teacher_perplexity"] > 1
    student, tok = registry.load(out / "best", head="causal_lm")
    assert student.config.n_layer == 1 and tok.vocab_size == registry.load(teacher)[1].vocab_size
    prompts = ["the quick brown", "a stop"]
    plain = generate(prompts, str(teacher), max_new_tokens=8, bf16=False)
    assert generate(prompts, str(teacher), max_new_tokens=8, bf16=False, draft=str(out / "best")) == plain
    # --resume of a finished run reads its own run.json
    assert (
        main(["distill", "--teacher", str(teacher), "--corpus", str(text), "--out", str(out), "--resume"])
        == 0
    )


def test_a_transformer_student_of_a_translation_run_is_a_draft_of_it(checkpoints, tmp_path, capsys):
    run = checkpoints["translation"]
    out = tmp_path / "m30k-draft"
    code = main(["distill", "--teacher", str(run), "--out", str(out), "--set", "student.num_hidden_layers=1",
                 "--set", "train.max_steps=3", "--set", "loss.soft=1.0"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "results.json").read_text())
    assert "test_bleu" in results and "teacher_test_bleu" in results
    student, _ = registry.load(out / "best")
    assert (student.config.encoder_layers, student.config.decoder_layers) == (1, 1)
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["distill"]["teacher"] == str(run) and run_json["distill"]["loss"] == {"soft": 1.0}
    sources = ["s1 s2 s3", "s4 s2"]
    assert translate(str(run), sources, bf16=False, draft=str(out)) == translate(
        str(run), sources, bf16=False
    )
    assert main(["distill", "--teacher", str(run), "--out", str(tmp_path / "x"), "--task", "sst2"]) == 2
    assert "leave out --task" in capsys.readouterr().err
