"""Marian checkpoints: random-weight MarianMTModels of odd shapes, created with transformers, convert to our
Transformer with every key consumed, round-trip, and give equal logits."""

import json

import pytest
import torch

from seq2bert.errors import CheckpointError
from seq2bert.models.hf import read_config
from seq2bert.models.transformer.convert import (
    config_from_marian,
    config_to_marian,
    from_marian_state_dict,
    to_marian_state_dict,
)
from seq2bert.models.transformer.model import Transformer

transformers = pytest.importorskip("transformers")

SHAPES = {
    "3+3 d64 h4 swish": dict(
        d_model=64,
        encoder_layers=3,
        decoder_layers=3,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=96,
        decoder_ffn_dim=96,
    ),
    "1+2 d24 h3/h2 relu": dict(
        d_model=24,
        encoder_layers=1,
        decoder_layers=2,
        encoder_attention_heads=3,
        decoder_attention_heads=2,
        encoder_ffn_dim=40,
        decoder_ffn_dim=8,
        activation_function="relu",
    ),
    "2+1 d30 h5 gelu unshared": dict(
        d_model=30,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=5,
        decoder_attention_heads=6,
        encoder_ffn_dim=16,
        decoder_ffn_dim=50,
        activation_function="gelu",
        share_encoder_decoder_embeddings=False,
        decoder_vocab_size=61,
    ),
}


def marian(shape: str, vocab: int = 53, **overrides):
    kw = dict(
        vocab_size=vocab,
        max_position_embeddings=64,
        pad_token_id=vocab - 1,
        decoder_start_token_id=vocab - 1,
        eos_token_id=0,
        forced_eos_token_id=0,
        activation_function="swish",
        scale_embedding=True,
        dropout=0.0,
    )
    torch.manual_seed(0)
    hf = transformers.MarianMTModel(transformers.MarianConfig(**{**kw, **SHAPES[shape], **overrides})).eval()
    with torch.no_grad():
        hf.final_logits_bias.normal_()  # zero in a fresh model: make it count
    return hf


def ours_from(hf) -> Transformer:
    cfg = config_from_marian(hf.config.to_dict())
    model = Transformer(cfg).eval()
    model.load_state_dict(from_marian_state_dict(hf.state_dict(), cfg))
    return model


def ours_from_dir(path, hf) -> Transformer:
    """As a saved directory is read (config.json with generation_config.json over it), weights from ``hf``."""
    cfg = config_from_marian(read_config(path))
    model = Transformer(cfg).eval()
    model.load_state_dict(from_marian_state_dict(hf.state_dict(), cfg))
    return model


def inputs(hf, batch=3, src_len=9, tgt_len=7):
    g = torch.Generator().manual_seed(2)
    pad = hf.config.pad_token_id
    src = torch.randint(1, hf.config.vocab_size - 1, (batch, src_len), generator=g)
    src[1, 6:] = pad
    src[2, 3:] = pad
    tgt = torch.randint(1, hf.config.decoder_vocab_size - 1, (batch, tgt_len), generator=g)
    tgt[:, 0] = hf.config.decoder_start_token_id
    return src, src.ne(pad).long(), tgt


@pytest.mark.parametrize("shape", list(SHAPES))
def test_logits_equal_transformers(shape):
    hf = marian(shape)
    ours = ours_from(hf)
    src, mask, tgt = inputs(hf)
    with torch.no_grad():
        expected = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt).logits
        got = ours(src, mask, tgt).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_state_dict_round_trip(shape):
    hf = marian(shape)
    ours = ours_from(hf)
    back = to_marian_state_dict(ours.state_dict(), ours.config)
    reference = hf.state_dict()
    assert set(back) == set(reference)
    for key, value in reference.items():
        torch.testing.assert_close(back[key], value, rtol=0, atol=1e-6, msg=key)
    assert config_from_marian(config_to_marian(ours.config)) == ours.config


def test_leftover_or_missing_keys_are_named():
    hf = marian("1+2 d24 h3/h2 relu")
    cfg = config_from_marian(hf.config.to_dict())
    sd = dict(hf.state_dict())
    sd["model.encoder.extra.weight"] = torch.zeros(1)
    with pytest.raises(CheckpointError, match="model.encoder.extra.weight"):
        from_marian_state_dict(sd, cfg)
    del sd["model.encoder.extra.weight"]
    del sd["model.decoder.layers.1.fc2.bias"]
    with pytest.raises(CheckpointError, match="model.decoder.layers.1.fc2.bias"):
        from_marian_state_dict(sd, cfg)
    with pytest.raises(CheckpointError, match="marian"):
        config_from_marian({"model_type": "bart"})


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("num_beams, length_penalty", [(1, 1.0), (5, 1.0), (5, 0.6), (4, 2.0)])
def test_generate_equals_transformers(shape, num_beams, length_penalty):
    """Weights drawn wide (init_std 0.3) and [EOS] favoured a little: outputs differ between inputs, beams
    differ from greedy, and some hypotheses end before the limit."""
    hf = marian(shape)
    with torch.no_grad():
        hf.final_logits_bias.zero_()
        hf.final_logits_bias[0, 0] = 1.0
    ours = ours_from(hf)
    src, mask, _ = inputs(hf, batch=4)
    settings = dict(num_beams=num_beams, max_new_tokens=12, length_penalty=length_penalty)
    settings["num_return_sequences"] = min(num_beams, 3)
    with torch.no_grad():
        expected = hf.generate(input_ids=src, attention_mask=mask, do_sample=False, **settings)
    got = ours.generate(src, mask, **settings)
    assert got.tolist() == expected.tolist()


def with_eos_bias(hf, bias: float):
    """[EOS] (id 0) favoured by ``bias`` over a zero final_logits_bias."""
    with torch.no_grad():
        hf.final_logits_bias.zero_()
        hf.final_logits_bias[0, 0] = bias
    return hf


FORCED = {"equal to eos": 0, "another token": 7, "null": None}


@pytest.mark.parametrize("forced", list(FORCED))
@pytest.mark.parametrize("num_beams", [1, 4])
def test_forced_eos_token_follows_the_config_as_transformers_does(forced, num_beams):
    """transformers forces the config's forced_eos_token_id at the last step — [EOS], another token, or
    nothing — and so do we, at a limit the hypotheses reach."""
    hf = with_eos_bias(marian("1+2 d24 h3/h2 relu", init_std=0.3, forced_eos_token_id=FORCED[forced]), 0.0)
    ours = ours_from(hf)
    assert ours.config.forced_eos_token_id == FORCED[forced]
    src, mask, _ = inputs(hf, batch=4)
    settings = dict(num_beams=num_beams, max_new_tokens=5, num_return_sequences=min(num_beams, 2))
    with torch.no_grad():
        expected = hf.generate(input_ids=src, attention_mask=mask, do_sample=False, **settings)
    got = ours.generate(src, mask, **settings)
    assert got.tolist() == expected.tolist()
    assert expected.size(1) == 1 + 5  # some hypotheses reached the limit …
    if forced != "null":
        assert (expected[:, -1] == FORCED[forced]).any()  # … and took the forced token there


def test_forced_eos_of_a_config_without_the_key_is_transformers_default():
    """A config.json without forced_eos_token_id: transformers' MarianConfig default (0), not eos_token_id."""
    hf = marian("1+2 d24 h3/h2 relu")
    data = {k: v for k, v in hf.config.to_dict().items() if k != "forced_eos_token_id"}
    data["eos_token_id"] = 3
    default = transformers.MarianConfig.from_dict(data).forced_eos_token_id
    assert default == 0 and config_from_marian(data).forced_eos_token_id == default
    assert config_from_marian({**data, "forced_eos_token_id": None}).forced_eos_token_id is None
    assert config_to_marian(config_from_marian(data))["forced_eos_token_id"] == 0


RULES = {  # setting → an [EOS] bias under which it changes the result
    "min_new_tokens": (dict(min_new_tokens=4), 3.0),
    "no_repeat_ngram_size": (dict(no_repeat_ngram_size=2), 0.0),
    "early_stopping and n-best": (dict(early_stopping=True, num_return_sequences=3), 2.0),
}


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("num_beams", [1, 4])
def test_generation_rules_equal_transformers(rule, num_beams):
    settings, bias = RULES[rule]
    hf = with_eos_bias(marian("3+3 d64 h4 swish", init_std=0.3), bias)
    ours = ours_from(hf)
    src, mask, _ = inputs(hf, batch=4)
    settings = dict(settings, num_beams=num_beams, max_new_tokens=10)
    settings["num_return_sequences"] = min(num_beams, settings.get("num_return_sequences", 1))
    if num_beams == 1:
        settings.pop("early_stopping", None)
    with torch.no_grad():
        expected = hf.generate(input_ids=src, attention_mask=mask, do_sample=False, **settings)
    got = ours.generate(src, mask, **settings)
    assert got.tolist() == expected.tolist()
    if num_beams > 1 or rule != "early_stopping and n-best":  # the setting matters: the case is not vacuous
        plain = {k: v for k, v in settings.items() if k not in ("min_new_tokens", "no_repeat_ngram_size")}
        plain["early_stopping"] = False
        assert ours.generate(src, mask, **plain).tolist() != got.tolist()


@pytest.mark.parametrize("num_beams", [1, 4])
def test_bad_words_are_never_generated_as_in_transformers(num_beams, tmp_path):
    """Published opus-mt configs ban [PAD] (the decoder start token): bad_words_ids=[[pad]]; a longer banned
    sequence bans its last token after the others."""
    hf = marian("1+2 d24 h3/h2 relu", init_std=0.3)
    pad = hf.config.pad_token_id
    with torch.no_grad():
        hf.final_logits_bias.zero_()
        hf.final_logits_bias[0, pad] = 4.0  # [PAD] would win most steps
    src, mask, _ = inputs(hf, batch=4)
    settings = dict(num_beams=num_beams, max_new_tokens=6, num_return_sequences=min(num_beams, 2))
    plain = ours_from(hf).generate(src, mask, **settings)
    assert (plain[:, 1:] == pad).any()  # without the ban, [PAD] is generated
    first = int(plain[0, 2]) if plain[0, 2] != pad else 5
    hf.generation_config.bad_words_ids = [[pad], [first, 7]]  # where transformers 5 keeps it
    hf.save_pretrained(tmp_path)  # generation_config.json
    ours = ours_from_dir(tmp_path, hf)
    assert ours.config.bad_words_ids == [[pad], [first, 7]]
    with torch.no_grad():
        expected = hf.generate(input_ids=src, attention_mask=mask, do_sample=False, **settings)
    got = ours.generate(src, mask, **settings)
    assert got.tolist() == expected.tolist()
    assert not (expected[:, 1:] == pad).all(dim=1).any()  # no row is [PAD] only: the ban is real
    assert config_to_marian(ours.config)["bad_words_ids"] == [[pad], [first, 7]]


def test_generation_config_json_overrides_config_json_as_in_transformers(tmp_path):
    """A directory's generation_config.json decides the generation rules; a rule it leaves out is off."""
    hf = with_eos_bias(marian("1+2 d24 h3/h2 relu", init_std=0.3, forced_eos_token_id=0), 0.0)
    hf.generation_config.forced_eos_token_id = 7
    hf.save_pretrained(tmp_path)
    ours = ours_from_dir(tmp_path, hf)
    assert ours.config.forced_eos_token_id == 7
    theirs = transformers.MarianMTModel.from_pretrained(tmp_path).eval()
    src, mask, _ = inputs(hf, batch=4)
    with torch.no_grad():
        expected = theirs.generate(input_ids=src, attention_mask=mask, do_sample=False, max_new_tokens=5)
    assert ours.generate(src, mask, max_new_tokens=5).tolist() == expected.tolist()
    data = json.loads((tmp_path / "generation_config.json").read_text())
    del data["forced_eos_token_id"]
    (tmp_path / "generation_config.json").write_text(json.dumps(data))
    assert config_from_marian(read_config(tmp_path)).forced_eos_token_id is None
