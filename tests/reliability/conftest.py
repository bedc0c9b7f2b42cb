"""Tiny directories the reliability tests share: two translation runs trained for one step (a recurrent
Bahdanau model, and a Transformer with a learned position table of 16), a tiny BERT (16 positions) saved as a
pretraining run and as the three fine-tuned task shapes, each a run directory holding best/."""

import os
from pathlib import Path

import pytest
import torch

from seq2bert import config as C
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertForPreTraining
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from seq2bert.recipes.pretrain import PretrainConfig
from seq2bert.recipes.translation import TranslationConfig, train
from seq2bert.training.run import write_run_config

POSITIONS = 16  # every model's position table: a long text is past it
TINY = ["data.task=reverse", "data.num_train=60", "data.num_valid=8", "data.num_test=4", "data.min_len=2",
        "data.max_len=5", "data.num_symbols=8", "data.max_tokens=200", "model.dropout=0.0", "train.max_steps=1",
        "train.eval_every=1", "train.log_every=1", "train.bf16=false"]  # fmt: skip
SIZES = {
    "bahdanau": ["model.embedding_dim=8", "model.hidden_size=8"],
    "transformer": ["model.d_model=8", "model.encoder_ffn_dim=8", "model.decoder_ffn_dim=8", "model.encoder_layers=1",
                    "model.decoder_layers=1", "model.encoder_attention_heads=2", "model.decoder_attention_heads=2",
                    "model.position_embedding=learned", f"model.max_position_embeddings={POSITIONS}"],
}  # fmt: skip
WORDS = "the a of on in and to was is it this that film story movie great awful paris john".split()


def tiny_translation_config(model_type: str, *extra: str) -> TranslationConfig:
    return C.build(
        TranslationConfig, overrides=[f"model.model_type={model_type}", *TINY, *SIZES[model_type], *extra]
    )


@pytest.fixture(scope="session")
def umask_022():
    """The process's umask while the session's directories are written: 022, the usual one."""
    old = os.umask(0o022)
    yield 0o022
    os.umask(old)


@pytest.fixture(scope="session")
def translation_runs(tmp_path_factory, umask_022) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("translation")
    for model_type in SIZES:
        train(tiny_translation_config(model_type), root / model_type, progress_bar=False)
    return {model_type: root / model_type for model_type in SIZES}


@pytest.fixture(scope="session")
def bert_runs(tmp_path_factory, umask_022) -> dict[str, Path]:
    """{"pretrained": a pretraining run, "sequence" / "tokens" / "qa": fine-tuned runs}, each a run directory."""
    root = tmp_path_factory.mktemp("bert")
    corpus = root / "words.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=80, lowercase=True)
    torch.manual_seed(0)
    size = dict(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                intermediate_size=16, max_position_embeddings=POSITIONS)  # fmt: skip
    heads = {
        "pretrained": BertForPreTraining(BertConfig(**size)),
        "sequence": BertForSequenceClassification(BertConfig(**size, id2label={0: "neg", 1: "pos"})),
        "tokens": BertForTokenClassification(BertConfig(**size, id2label={0: "O", 1: "B-LOC", 2: "I-LOC"})),
        "qa": BertForQuestionAnswering(BertConfig(**size)),
    }
    for name, model in heads.items():
        save_bert(model, root / name / "best", tok)
    write_run_config(root / "pretrained" / "best", PretrainConfig())
    return {name: root / name for name in heads}


def snapshot(directory: Path) -> dict[str, tuple]:
    """Every file under ``directory`` — but .lock, where each command that takes the run signs in —: its
    bytes, and its mode."""
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def one_line(capsys) -> str:
    """The command's stderr: one line, no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]
