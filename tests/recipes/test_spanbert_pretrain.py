"""SpanBERT pretraining: `seq2bert pretrain` with model.model_type=spanbert — span masking, single segments,
MLM + SBO (Joshi et al. 2019) — resumes exactly and writes a checkpoint transformers reads as BERT."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

import seq2bert
from seq2bert.cli import main
from seq2bert.models.spanbert.config import SpanBertConfig
from seq2bert.models.spanbert.model import SpanBertForPreTraining
from seq2bert.objectives.span_boundary import boundary_targets
from tests.recipes.test_pretrain import TINY, books  # noqa: F401 (a fixture)


def test_the_model_adds_the_sbo_loss_of_the_span_tokens_to_the_mlm_loss():
    torch.manual_seed(0)
    cfg = SpanBertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=16, span_positions=10)  # fmt: skip
    model = SpanBertForPreTraining(cfg).eval()
    ids = torch.tensor([[1, 5, 6, 7, 8, 2], [1, 9, 10, 2, 0, 0]])
    labels = torch.full_like(ids, -100)
    labels[0, 1:3], labels[0, 4], labels[1, 2] = torch.tensor([15, 16]), 18, 20
    spans = [[(1, 2), (4, 4)], [(2, 2)]]
    left, right, position = (
        torch.tensor(t) for t in zip(*(boundary_targets(s, 6) for s in spans), strict=True)
    )
    out = model(ids, (ids != 0).long(), labels=labels, span_left=left, span_right=right, span_position=position,
                sparse_prediction=True)  # fmt: skip
    hidden = model.bert(ids, (ids != 0).long()).last_hidden_state
    # by hand: tokens (0,1), (0,2) of span (1, 2); (0,4) of span (4, 4); (1,2) of span (2, 2)
    x_left = hidden[[0, 0, 0, 1], [0, 0, 3, 1]]
    x_right = hidden[[0, 0, 0, 1], [3, 3, 5, 3]]
    y = model.sbo(x_left, x_right, torch.tensor([0, 1, 0, 0]))
    sbo_logits = (
        y @ model.bert.embeddings.word_embeddings.weight.T + model.mlm.decoder.bias
    )  # output embedding
    torch.testing.assert_close(out.sbo_logits, sbo_logits, rtol=0, atol=1e-5)
    targets = torch.tensor([15, 16, 18, 20])
    torch.testing.assert_close(out.sbo_loss, torch.nn.functional.cross_entropy(sbo_logits, targets))
    torch.testing.assert_close(out.loss, out.mlm_loss + out.sbo_loss)


def test_pretrain_spanbert_trains_mlm_and_sbo_resumes_and_writes_bert(books, tmp_path):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    args = ["--set", "model.model_type=spanbert", *TINY]
    assert main(["pretrain", str(books), "--out", str(tmp_path / "a"), *args]) == 0
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert "valid_nsp_accuracy" not in results and results["valid_sbo_loss"] > 0  # single segments, SBO
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    valid = [r for r in log if r["split"] == "valid"]
    for r in valid:  # the valid loss is the objective: MLM + SBO
        assert r["sbo_loss"] > 0 and r["loss"] == pytest.approx(r["mlm_loss"] + r["sbo_loss"])
    assert all(r["loss"] == pytest.approx(r["loss"]) for r in log if "loss" in r)  # finite throughout
    best = tmp_path / "a" / "best"
    hf = json.loads((best / "config.json").read_text())
    assert hf["model_type"] == "bert" and hf["architectures"] == ["BertForMaskedLM"]
    assert (best / "span_boundary.safetensors").is_file()
    assert not any(k.startswith("sbo") for k in load_file(best / "model.safetensors"))
    ours = seq2bert.from_pretrained(best)
    assert type(ours).__name__ == "BertForMaskedLM"
    theirs = transformers.BertForMaskedLM.from_pretrained(best).eval()
    ids = torch.tensor([[2, 10, 11, 12, 3], [2, 14, 15, 3, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(ours(ids, mask).logits, expected, rtol=0, atol=1e-5)
    # resumed from its step-3 checkpoint, a run ends where the uninterrupted one ended, SBO head included
    b = tmp_path / "b"
    assert main(["pretrain", str(books), "--out", str(b), *args]) == 0
    for name in ("checkpoint-6", "best", "results.json"):
        shutil.rmtree(b / name) if (b / name).is_dir() else (b / name).unlink()
    assert main(["pretrain", "--out", str(b), "--resume"]) == 0
    for file in ("model.safetensors", "span_boundary.safetensors"):
        a6, b6 = load_file(tmp_path / "a" / "checkpoint-6" / file), load_file(b / "checkpoint-6" / file)
        assert a6.keys() == b6.keys()
        for k in a6:
            assert torch.equal(a6[k], b6[k]), (file, k)
