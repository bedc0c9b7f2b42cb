"""Same input and seed, same result (issue 23, item 4): every tokenizer kind trained twice in two processes
(hash maps are seeded per process: the library's trainers numbered pieces in their order) gives a
byte-identical tokenizer.json, and pretraining twice from raw text — its vocabulary trained on the way —
gives byte-identical tokenizers and bitwise-identical weights."""

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from seq2bert.cli import main
from tests.conftest import REPO

WORDS = ("the quick brown fox jumps over lazy dogs while seven wizards quietly judge boxing matches quaint "
         "zebras jovial knights").split()  # fmt: skip

TRAIN = """
import hashlib, sys, tempfile, os
from pathlib import Path
kind, corpus = sys.argv[1], Path(sys.argv[2])
if kind in ("albert", "roberta"):
    import importlib
    tok = importlib.import_module(f"seq2bert.models.{kind}.tokenizer").train_tokenizer([corpus], 300)
else:
    from seq2bert.data.tokenization import Tokenizer
    tok = Tokenizer.train([corpus], kind=kind, vocab_size=300, lowercase=kind == "wordpiece")
d = tempfile.mkdtemp()
tok.save(d)
print(hashlib.sha256(open(os.path.join(d, "tokenizer.json"), "rb").read()).hexdigest())
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("corpus") / "text.txt"
    lines = [" ".join(rng.choice(WORDS, size=rng.integers(5, 15))).capitalize() + "." for _ in range(3000)]
    path.write_text(
        "\n\n".join("\n".join(lines[i : i + 30]) for i in range(0, len(lines), 30)) + "\n"
    )  # documents
    return path


def trained(kind, corpus):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "random"}
    out = subprocess.run([sys.executable, "-c", TRAIN, kind, str(corpus)], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize(
    "kind", ["wordpiece", "bpe", "word", "bytelevel-bpe", "gpt1-bpe", "albert", "roberta"]
)
def test_a_tokenizer_trained_twice_is_byte_identical(kind, corpus):
    assert trained(kind, corpus) == trained(kind, corpus)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "albert"])
def test_pretraining_twice_from_raw_text_is_bitwise_identical(family, corpus, tmp_path):
    tiny = ["--set", "model.hidden_size=32", "--set", "model.num_hidden_layers=2", "--set",
            "model.num_attention_heads=2", "--set", "model.intermediate_size=64", "--set", "data.vocab_size=200",
            "--set", "data.max_seq_length=32", "--set", "data.batch_size=8", "--set", "train.max_steps=8",
            "--set", "train.eval_every=4", "--set", f"model.model_type={family}", "--set", "train.bf16=false"]  # fmt: skip
    if family == "albert":
        tiny += ["--set", "model.embedding_size=16"]
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        assert main(["pretrain", str(corpus), "--out", str(run), *tiny]) == 0
    for name in ("tokenizer/tokenizer.json", "best/model.safetensors", "checkpoint-8/model.safetensors"):
        assert digest(runs[0] / name) == digest(runs[1] / name), name
