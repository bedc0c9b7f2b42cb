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
    "train.max_epochs=12",
    "train.eval_every=200",
    "train.metric=exact_match",
    "train.bf16=false",  # learning is tested in fp32 on every machine (bf16: tests/test_precision.py)
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, training",
    [
        (["model.model_type=bahdanau", "model.attention_size=64", "model.maxout_size=64"], ["train.lr=1e-2"]),
        (
            ["model.model_type=luong", "model.num_layers=1", "model.score=general", "model.attention=global"],
            [],
        ),
    ],
    ids=["bahdanau", "luong-general-global"],
)
def test_attention_models_learn_to_reverse(model, training, tmp_path):
    cfg = C.build(TranslationConfig, overrides=[*model, *REVERSE, *training])
    row = train(cfg, tmp_path / "run", progress_bar=False)
    assert row["test_exact_match"] >= 90.0, row


@pytest.mark.slow
def test_transformer_learns_to_reverse(tmp_path):
    """Self-attention needs no recurrence to reverse: a 2+2-layer Transformer with the warm-up schedule."""
    data = [r for r in REVERSE if r.startswith(("data.", "train."))]
    model = [
        "model.model_type=transformer",
        "model.d_model=64",
        "model.encoder_ffn_dim=128",
        "model.decoder_ffn_dim=128",
        "model.encoder_layers=2",
        "model.decoder_layers=2",
        "model.dropout=0.0",
        "train.lr=2e-3",
        "train.schedule=inverse_sqrt",
        "train.warmup_steps=100",
    ]
    cfg = C.build(TranslationConfig, overrides=[*data, *model])
    row = train(cfg, tmp_path / "run", progress_bar=False)
    assert row["test_exact_match"] >= 90.0, row
