"""`seq2bert pretrain --set model.model_type=xlnet`: the permutation LM (recipes/pretrain_permutation.py) on a
tiny generated corpus — a SentencePiece vocabulary trained with XLNet's specials, checkpoints transformers'
XLNetLMHeadModel reads with the same loss on the same permuted batch, a held-out measure that is the mean NLL
of the predicted tokens computed directly, an exact resume after a kill, and a fine-tuning run from the
result."""

import json
import math
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import seq2bert
from seq2bert.cli import main
from seq2bert.data.pretraining import Corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.recipes import pretrain_permutation

WORDS = "the a cat dog sat ran on under mat tree big small red green saw ate".split()


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    root = tmp_path_factory.mktemp("books")
    rng = np.random.default_rng(0)
    docs = [
        " ".join(
            " ".join(WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(4, 10))).capitalize() + "."
            for _ in range(rng.integers(2, 8))
        )
        for _ in range(30)
    ]
    (root / "book.txt").write_text("\n\n".join(docs) + "\n")
    return root


SETTINGS = {
    "model.model_type": "xlnet", "model.d_model": 32, "model.n_layer": 2, "model.n_head": 2,
    "model.d_inner": 64, "data.vocab_size": 120, "data.max_seq_length": 32, "data.batch_size": 4,
    "data.valid_fraction": 0.2, "train.warmup_steps": 2, "train.max_steps": 6, "train.eval_every": 3,
    "train.log_every": 1, "train.lr": 1e-3, "permutation.k": 4,
}  # fmt: skip
TINY = [x for k, v in SETTINGS.items() for x in ("--set", f"{k}={v}")]


def test_xlnet_pretraining_writes_transformers_checkpoints_and_resumes_exactly(books, tmp_path):
    transformers = pytest.importorskip("transformers")
    a = tmp_path / "a"
    assert main(["pretrain", str(books), "--out", str(a), *TINY]) == 0
    results = json.loads((a / "results.json").read_text())
    assert results["model"] == "xlnet (2/32)" and results["steps"] == 6
    assert results["valid_plm_perplexity"] == pytest.approx(math.exp(results["valid_plm_loss"]))
    assert 0 <= results["valid_plm_accuracy"] <= 100 and results["valid_tokens"] > 0
    log = [json.loads(line) for line in (a / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if r["split"] == "valid"] == [3, 6]
    best_accuracy = max(r["plm_accuracy"] for r in log if r["split"] == "valid")
    assert json.loads((a / "best" / "trainer_state.json").read_text())["best"] == best_accuracy

    # the best checkpoint: transformers' XLNetLMHeadModel and XLNetTokenizer, the same loss on a permuted batch
    best = a / "best"
    assert json.loads((best / "config.json").read_text())["architectures"] == ["XLNetLMHeadModel"]
    tok = Tokenizer.load(best)
    assert [tok.token_to_id(t) for t in ("<cls>", "<sep>", "<pad>", "<eod>")] == [3, 4, 5, 7]
    theirs_tok = transformers.AutoTokenizer.from_pretrained(best)
    assert theirs_tok("The cat sat.")["input_ids"] == tok.encode("The cat sat.").ids
    ours = seq2bert.from_pretrained(best).eval()
    theirs = transformers.XLNetLMHeadModel.from_pretrained(best).eval()
    corpus = Corpus(a / "corpus")
    blocks = pretrain_permutation.blocks(corpus, np.arange(corpus.num_documents), tok, 32, 4, 4.0, seed=9)
    batch = blocks.collate([0, 1, len(blocks) - 1])  # the last block is short: padded on the left
    with torch.no_grad():
        expected = theirs(**batch, use_mems=False)
        got = ours(**batch, use_mems=False)
    real = batch["labels"].ne(-100)  # a row predicting fewer than P: its empty slots are padding (ignored)
    assert not real.all()
    torch.testing.assert_close(got.logits[real], expected.logits[real], rtol=0, atol=1e-5)
    torch.testing.assert_close(got.loss, expected.loss, rtol=0, atol=1e-5)

    # the held-out measure is the mean NLL of the predicted tokens, one block at a time
    indices = list(range(len(blocks)))
    measured = pretrain_permutation.evaluate(ours, blocks, indices, "cpu")
    nll, n = 0.0, 0
    with torch.no_grad():
        for j in indices:
            one = blocks.collate([j])
            labels = one.pop("labels")
            logp = theirs(**one, use_mems=False).logits[0].double().log_softmax(-1)  # (P, V)
            nll -= float(logp[torch.arange(labels.size(1)), labels[0]].sum())
            n += labels.size(1)
    assert measured["tokens"] == n and measured["loss"] == pytest.approx(nll / n, rel=1e-5)

    # a run that stopped after its checkpoint at step 3 and resumes ends where the uninterrupted run ended
    b = tmp_path / "b"
    assert main(["pretrain", str(books), "--out", str(b), *TINY]) == 0
    for name in ("checkpoint-6", "best", "results.json"):
        shutil.rmtree(b / name) if (b / name).is_dir() else (b / name).unlink()
    assert main(["pretrain", "--out", str(b), "--resume"]) == 0
    a6, b6 = (load_file(d / "checkpoint-6" / "model.safetensors") for d in (a, b))
    assert a6.keys() == b6.keys()
    for k in a6:
        assert torch.equal(a6[k], b6[k]), k

    # fine-tuning reads the pretrained XLNet: a sentence classifier from its summary of <cls>
    rows = [f"{'A big red cat sat.' if i % 2 else 'The small dog ran.'}\t{i % 2}" for i in range(24)]
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    out = tmp_path / "cls"
    args = [
        "--text-column",
        "sentence",
        "--label-column",
        "label",
        "--set",
        "train.max_epochs=8",
        "--set",
        "train.lr=3e-3",
    ]
    data = ["--train", str(tmp_path / "train.tsv"), "--valid", str(tmp_path / "train.tsv")]
    assert (
        main(
            [
                "finetune",
                "--task",
                "text-classification",
                *data,
                "--init",
                str(best),
                "--out",
                str(out),
                *args,
            ]
        )
        == 0
    )
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["architectures"] == ["XLNetForSequenceClassification"]
    assert json.loads((out / "results.json").read_text())["dev_accuracy"] == 100.0
