"""The Transformer with relative position representations (Shaw, Uszkoreit & Vaswani 2018):
``position_embedding=relative``: no absolute positions, a^K and a^V in every self-attention, the same
logits cached and uncached, a causal decoder, a one-line config error, and a run of the translation recipe
from the CLI that saves, loads and translates. Greedy and beam search with the cache against full
recomputation: tests/models/test_transformer.py (its relative variant)."""

import pytest
import torch
from safetensors.torch import load_file

import seq2bert
from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.errors import ConfigError
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.model import Transformer
from seq2bert.nn.multihead import FEW_QUERIES
from seq2bert.nn.positions import RelativePositionRepresentations
from seq2bert.recipes.translation import TranslationConfig
from tests.models.test_transformer import PAD, TINY, V

K = 3  # a small clipping distance, so that the lengths below reach past it


def model(**kw) -> Transformer:
    torch.manual_seed(0)
    c = TransformerConfig(**{**TINY, "position_embedding": "relative", "max_relative_position": K, **kw})
    return Transformer(c).eval()


def batch(S=11, T=FEW_QUERIES + 4):
    g = torch.Generator().manual_seed(1)
    src = torch.randint(3, V, (3, S), generator=g)
    src[1, 7:] = PAD
    tgt = torch.randint(3, V, (3, T), generator=g)
    return src, src.ne(PAD), tgt


def test_relative_positions_replace_the_absolute_ones_in_every_self_attention():
    m = model()
    keys = m.state_dict().keys()
    assert not any("embeddings.positions" in k for k in keys)  # Table 1's relative row: no absolute positions
    d_k = {"encoder": 16 // 4, "decoder": 16 // 2}
    for name, stack in (("encoder", m.encoder), ("decoder", m.decoder)):
        for layer in stack.layers:
            position = layer.self_attn.position
            assert isinstance(position, RelativePositionRepresentations)
            assert position.keys.weight.shape == position.values.weight.shape == (2 * K + 1, d_k[name])
            assert layer.cross_attn is None or layer.cross_attn.position is None
    # the sinusoidal model's keys are unchanged: none of the relative tables
    plain = Transformer(TransformerConfig(**TINY))
    assert not any(".position." in k for k in plain.state_dict())


@pytest.mark.parametrize("normalize_before", [False, True])
def test_cached_decoding_equals_the_full_pass(normalize_before):
    """Each step's query at t against the cached keys 0 … t gives the teacher-forced logits (whose pass takes
    the fused kernel with the relative bias: T > FEW_QUERIES)."""
    m = model(normalize_before=normalize_before)
    src, mask, tgt = batch()
    full = m(src, mask, tgt).logits
    state = m.encode(src, mask)
    steps = []
    for t in range(tgt.size(1)):
        logits, state = m.step(tgt[:, t], state)
        steps.append(logits)
    torch.testing.assert_close(torch.stack(steps, 1), full, rtol=0, atol=1e-5)


def test_the_decoder_is_causal_and_the_encoder_sees_both_sides():
    m = model()
    src, mask, tgt = batch()
    changed = tgt.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % V
    a, b = m(src, mask, tgt).logits, m(src, mask, changed).logits
    torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=0)
    assert not torch.allclose(a[:, 6:], b[:, 6:])
    other = src.clone()
    other[0, 8] = (other[0, 8] + 1) % V  # a late source token changes the encoder's early states
    h1, h2 = m.encode(src, mask).memory, m.encode(other, mask).memory
    assert not torch.allclose(h1[0, 0], h2[0, 0])


def test_gradients_reach_the_relative_tables():
    m = model().train()
    src, mask, tgt = batch()
    m(src, mask, tgt, labels=tgt).loss.backward()
    for stack in (m.encoder, m.decoder):
        for layer in stack.layers:
            for table in (layer.self_attn.position.keys, layer.self_attn.position.values):
                assert table.weight.grad is not None and table.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("k", [0, -2])
def test_a_clipping_distance_below_one_is_a_config_error(k):
    with pytest.raises(ConfigError, match=f"^max_relative_position: must be at least 1, got {k}$"):
        TransformerConfig(**{**TINY, "position_embedding": "relative", "max_relative_position": k})
    with pytest.raises(ConfigError, match="position_embedding"):
        C.apply_overrides(
            TranslationConfig(), ["model.model_type=transformer", "model.position_embedding=rel"]
        )


def test_the_cli_refuses_a_bad_clipping_distance_in_one_line(tmp_path, capsys):
    args = ["train", "--task", "copy", "--out", str(tmp_path / "x"), "--set", "model.model_type=transformer"]
    args += ["--set", "model.position_embedding=relative", "--set", "model.max_relative_position=0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "max_relative_position: must be at least 1, got 0" in err and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()


TRAIN = ["data.task=reverse", "data.num_train=80", "data.num_valid=8", "data.num_test=4", "data.min_len=2",
         "data.max_len=6", "data.num_symbols=8", "data.max_tokens=200", "model.model_type=transformer",
         "model.position_embedding=relative", "model.max_relative_position=2", "model.d_model=16",
         "model.encoder_ffn_dim=16", "model.decoder_ffn_dim=16", "model.encoder_layers=1",
         "model.decoder_layers=2", "model.encoder_attention_heads=2", "model.decoder_attention_heads=2",
         "model.dropout=0.0", "train.max_steps=6", "train.eval_every=3", "train.log_every=3",
         "train.bf16=false"]  # fmt: skip


def test_the_translation_recipe_trains_saves_and_loads_a_relative_model(tmp_path, capsys):
    out = tmp_path / "relative"
    assert main(["train", "--out", str(out), *[a for s in TRAIN for a in ("--set", s)]]) == 0
    capsys.readouterr()
    m = seq2bert.from_pretrained(out)  # the best checkpoint, in a model built from its saved config
    assert isinstance(m, Transformer) and m.config.position_embedding == "relative"
    assert m.config.max_relative_position == 2
    saved = load_file(str(out / "best" / "model.safetensors"))
    for key, value in m.state_dict().items():
        if ".position." in key:
            assert value.shape == (5, 8) and torch.equal(value, saved[key])  # 2k + 1 rows of d_k
    first, last = (load_file(str(out / f"checkpoint-{n}" / "model.safetensors")) for n in (3, 6))
    tables = [k for k in last if k.endswith("self_attn.position.keys.weight")]
    assert len(tables) == 3 and all(not torch.equal(first[k], last[k]) for k in tables)  # they train
    assert main(["translate", str(out), "s1 s2 s3"]) == 0
    assert capsys.readouterr().out.strip() == seq2bert.translate("s1 s2 s3", out)
    assert main(["evaluate", str(out)]) == 0
    assert "bleu" in capsys.readouterr().out
