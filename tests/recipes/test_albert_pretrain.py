"""ALBERT pretraining: sentence-order instances (Lan et al. 2019, Sect. 3.1) and `seq2bert pretrain` with
model.model_type=albert — MLM + SOP, a checkpoint transformers reads with equal outputs."""

import json

import pytest
import torch

import seq2bert
from seq2bert.cli import main
from tests.recipes.test_pretrain import TINY, books  # noqa: F401 (a fixture)


def test_pretrain_albert_trains_mlm_and_sop_and_writes_what_transformers_reads(books, tmp_path):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    args = ["--set", "model.model_type=albert", *TINY, "--set", "model.embedding_size=16"]
    assert main(["pretrain", str(books), "--out", str(tmp_path / "a"), *args]) == 0
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert 0 <= results["valid_sop_accuracy"] <= 100 and "valid_nsp_accuracy" not in results
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    for r in (r for r in log if r["split"] == "valid"):  # the valid loss is the objective: MLM + SOP
        assert r["sop_loss"] > 0 and r["loss"] == pytest.approx(r["mlm_loss"] + r["sop_loss"])
    ours = seq2bert.from_pretrained(tmp_path / "a" / "best")
    assert type(ours).__name__ == "AlbertForPreTraining" and ours.config.embedding_size == 16
    assert len(ours.albert.layers) == 1 and ours.albert.num_layers == 2  # one layer shared by both
    theirs = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "a" / "best").eval()
    ids = torch.tensor([[2, 10, 11, 12, 3, 13, 3], [2, 14, 15, 3, 0, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask)
    got = ours(ids, mask)
    torch.testing.assert_close(got.prediction_logits, expected.prediction_logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(got.sop_logits, expected.sop_logits, rtol=0, atol=1e-5)
