"""`seq2bert finetune --model bilstm --vectors DIR`: the BiLSTM's word embeddings start from static vectors —
a train-vectors run, or a published file — frozen or tuned, with fastText composing the words it never saw."""

import json

import numpy as np
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.data.vector_files import WordVectors, write_vectors
from tests.recipes.test_finetune_scratch import finetune, write_sst2
from tests.recipes.test_vectors import small


def embeddings(run) -> tuple[torch.Tensor, dict]:
    model = seq2bert.from_pretrained(run / "best")
    tok = json.loads((run / "best" / "tokenizer.json").read_text())["model"]["vocab"]
    return model.bilstm.embeddings.weight.detach(), tok


def test_frozen_vectors_stay_and_tuned_ones_move(tmp_path):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    rng = np.random.default_rng(1)
    words = "the a of great awful film fine".split()
    wv = WordVectors(words, torch.from_numpy(rng.normal(size=(len(words), 16)).astype(np.float32)))
    write_vectors(tmp_path / "glove.txt", wv, "glove")
    for freeze in (True, False):
        out = tmp_path / f"run-{freeze}"
        extra = ["--vectors", str(tmp_path / "glove.txt"), *(["--freeze-vectors"] if freeze else [])]
        assert finetune("sst2", tmp_path / "sst2", out, "--set", "train.max_epochs=2", *extra) == 0
        results = json.loads((out / "results.json").read_text())
        assert results["vectors_found"] == 7 and results["vectors_frozen"] is freeze
        E, vocab = embeddings(out)
        for w in ("the", "great", "fine"):
            same = torch.allclose(E[vocab[w]], wv.vector(w))
            assert same is freeze, (w, freeze)
        assert results["dev_accuracy"] > 50


def test_a_fasttext_run_gives_vectors_to_words_it_never_saw(tmp_path):
    from tests.recipes.test_vectors import ANIMALS

    text = tmp_path / "text.txt"
    text.write_text("\n\n".join(" ".join(ANIMALS[i % 6] for i in range(k, k + 20)) for k in range(50)))
    from seq2bert.recipes.vectors import train_vectors

    train_vectors(small("fasttext", [text]), tmp_path / "ft", progress_bar=False)
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    out = tmp_path / "run"
    assert (
        finetune(
            "sst2",
            tmp_path / "sst2",
            out,
            "--set",
            "train.max_epochs=1",
            "--vectors",
            str(tmp_path / "ft"),
            "--freeze-vectors",
        )
        == 0
    )
    results = json.loads((out / "results.json").read_text())
    assert results["vectors_found"] == 0  # no word of the task is in the animals' vocabulary …
    assert results["vectors_composed"] == results["vocabulary_words"]  # … and every one gets its n-grams'


def test_vectors_need_a_model_from_scratch_of_their_width(tmp_path, capsys):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    wv = WordVectors(["the"], torch.ones(1, 8))
    write_vectors(tmp_path / "v.txt", wv)
    assert finetune("sst2", tmp_path / "sst2", tmp_path / "o", "--vectors", str(tmp_path / "v.txt")) == 2
    assert "model_config.embedding_dim: 16, but the vectors at" in capsys.readouterr().err
    code = main(["finetune", "--task", "sst2", "--init", str(tmp_path), "--data", str(tmp_path / "sst2"), "--out",
                 str(tmp_path / "o2"), "--vectors", str(tmp_path / "v.txt")])  # fmt: skip
    assert (
        code == 2
        and "vectors: the word embeddings of a model trained from scratch" in capsys.readouterr().err
    )
    assert main(["finetune", "--task", "sst2", "--model", "bilstm", "--data", str(tmp_path / "sst2"), "--out",
                 str(tmp_path / "o3"), "--freeze-vectors"]) == 2  # fmt: skip
    assert "--freeze-vectors: give the vectors" in capsys.readouterr().err
