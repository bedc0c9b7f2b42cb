"""ALBERT pretraining: sentence-order instances (Lan et al. 2019, Sect. 3.1) and `seq2bert pretrain` with
model.model_type=albert — MLM + SOP on a SentencePiece unigram vocabulary, a checkpoint transformers reads
(tokenizer and model) with equal outputs."""

import json

import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from tests.recipes.test_pretrain import TINY, WORDS, books  # noqa: F401 (a fixture)


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
    # the tokenizer: a SentencePiece unigram vocabulary with ALBERT's specials, read by transformers as ours
    tok = Tokenizer.load(tmp_path / "a" / "best")
    assert [tok.token_to_id(t) for t in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")] == [0, 1, 2, 3, 4]
    assert type(tok.backend.model).__name__ == "Unigram" and ours.config.vocab_size == tok.vocab_size
    pieces = tok.tokenize(" ".join(WORDS[:8]))
    assert sum(p.startswith("▁") for p in pieces) == 8  # one word-initial piece a word
    theirs_tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "a" / "best")
    assert type(theirs_tok).__name__.startswith("AlbertTokenizer")
    pairs = [
        (" ".join(WORDS[:5]).upper(), " ".join(WORDS[5:9])),
        (" ".join(WORDS[9:12]), "``" + WORDS[12] + "''"),
    ]
    enc = theirs_tok(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        padding=True,
        return_tensors="pt",
        return_token_type_ids=True,
    )
    ids, mask = enc["input_ids"], enc["attention_mask"]
    assert ids.tolist() == tok.encode_batch(pairs, padding="longest")["input_ids"]

    theirs = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "a" / "best").eval()
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask, token_type_ids=enc["token_type_ids"])
    got = ours(ids, mask, enc["token_type_ids"])
    torch.testing.assert_close(got.prediction_logits, expected.prediction_logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(got.sop_logits, expected.sop_logits, rtol=0, atol=1e-5)
