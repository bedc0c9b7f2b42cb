"""Attention earns its keep: on the synthetic reverse task, where the fixed-vector Seq2Seq must squeeze the
whole source into one state, the attention models learn to reverse sentences of up to 10 tokens almost
perfectly in about a minute of CPU training (slow tier)."""

import pytest

from seq2bert import config as C
from seq2bert.recipes.translation import TranslationConfig, train

REVERSE = [
    "data.task=reverse",
    "data.num_train=4000",
    "data.num_valid=200",
    "data.num_test=200",
    "data.min_len=3",
    "data.max_len=10",
    "data.num_symbols=10",
    "data.max_tokens=400",
    "model.embedding_dim=32",
    "model.hidden_size=64",
    "model.dropout=0.0",
    "train.lr=5e-3",
    "train.max_epochs=6",
    "train.eval_every=200",
    "train.metric=exact_match",
    "train.bf16=auto",
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [
        ["model.model_type=bahdanau", "model.attention_size=64", "model.maxout_size=64"],
        ["model.model_type=luong", "model.num_layers=1", "model.score=general", "model.attention=global"],
    ],
    ids=["bahdanau", "luong-general-global"],
)
def test_attention_models_learn_to_reverse(model, tmp_path):
    cfg = C.build(TranslationConfig, overrides=[*model, *REVERSE])
    row = train(cfg, tmp_path / "run", progress_bar=False)
    assert row["test_exact_match"] >= 90.0, row
