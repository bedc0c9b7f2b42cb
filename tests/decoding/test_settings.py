"""Decoding from one declaration (issue 39, item 5): GenerationConfig's fields made with ``option`` are the
settings; model.generate, the pipelines, the command line and the serve request bodies take exactly them,
with the bounds declared there. And the strategies are a registry a user adds to."""

import dataclasses

import pytest
import torch
from pydantic import ValidationError

from seq2bert.cli import build_parser
from seq2bert.decoding import strategies
from seq2bert.decoding.config import GenerationConfig, options
from seq2bert.decoding.generation import Decoding, generate
from seq2bert.decoding.greedy import greedy_search
from seq2bert.errors import ConfigError
from seq2bert.serve import schemas
from tests.decoding.test_generation import LM_EOS, LM_PAD, BigramLM

NAMES = {s.name for s in options()}


def test_the_settings_are_the_option_fields():
    declared = {f.name for f in dataclasses.fields(GenerationConfig) if "option" in f.metadata}
    assert NAMES == declared
    assert {"num_beams", "length_penalty", "penalty_alpha", "num_beam_groups", "diversity_penalty"} <= NAMES
    assert not NAMES & {"eos_token_id", "pad_token_id", "decoder_start_token_id", "bad_words_ids"}


def flags(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {a.dest for a in sub.choices[command]._actions}


@pytest.mark.parametrize(
    "command, excluded",
    [
        ("generate", {"max_len_a", "max_len_b", "num_return_sequences"}),
        ("translate", {"max_new_tokens", "num_return_sequences"}),
        ("evaluate", {"max_new_tokens", "num_return_sequences"}),
        ("align", {"max_new_tokens", "num_return_sequences"}),
        ("sample", {"do_sample", "max_len_a", "max_len_b", "num_return_sequences"}),
    ],
)
def test_every_setting_is_a_flag_of_the_decoding_commands(command, excluded):
    assert NAMES - flags(command) == excluded


def test_every_setting_is_a_field_of_the_serve_bodies_with_its_bounds():
    assert NAMES - set(schemas.Generate.model_fields) == {"max_len_a", "max_len_b", "num_return_sequences"}
    assert NAMES - set(schemas.Translate.model_fields) == {"max_new_tokens", "num_return_sequences"}
    for s in options():
        o = s.option
        below = o.ge - 1 if o.ge is not None else o.gt if o.gt is not None else None
        if below is None or s.name not in schemas.Generate.model_fields:
            continue
        bad = int(below) if s.type is int else float(below)
        with pytest.raises(ValidationError, match=s.name):
            schemas.Generate(prompt="x", **{s.name: bad})
        with pytest.raises(ConfigError, match=s.name):
            GenerationConfig(eos_token_id=1, pad_token_id=0, **{"max_new_tokens": 3, s.name: bad})
    with pytest.raises(ValidationError, match="num_beams"):  # the server's own cap
        schemas.Translate(texts=["a"], num_beams=17)
    assert schemas.Translate(texts=["a"], num_beams=16, no_repeat_ngram_size=2).max_len_b == 10


def test_every_setting_is_a_keyword_of_model_generate_and_the_translation_decoding():
    from tests.models.test_gpt_generate import lm_pair, prompts

    _, ours = lm_pair("gpt2")
    ids, mask = prompts()
    defaults = {s.name: s.default for s in options() if s.name not in ("max_new_tokens", "top_k")}
    out = ours.generate(ids, mask, max_new_tokens=3, **defaults)
    assert torch.equal(out, ours.generate(ids, mask, max_new_tokens=3))
    with pytest.raises(ConfigError, match="unknown setting.*num_beam\\b"):
        ours.generate(ids, mask, num_beam=2)
    decoding = Decoding.of(num_beams=4, no_repeat_ngram_size=2, max_len_b=None)
    assert (decoding.num_beams, decoding.max_len_b, dict(decoding.settings)["no_repeat_ngram_size"]) == (
        4,
        10,
        2,
    )
    with pytest.raises(ConfigError, match="penalty_alpha"):
        Decoding.of(penalty_alpha=0.5, num_beams=2)


def test_a_strategy_registered_by_name_is_used_when_asked_for(monkeypatch):
    """The how-to: a tiny strategy — greedy decoding that never repeats a token — registered and named."""

    def no_repeats(model, input_ids, attention_mask, config, *, stopping=None, streamer=None):
        config = dataclasses.replace(config, no_repeat_ngram_size=1)
        return greedy_search(model, input_ids, attention_mask, config, stopping=stopping, streamer=streamer)

    monkeypatch.setattr(strategies, "STRATEGIES", dict(strategies.STRATEGIES))  # the registry back after
    strategies.register("no_repeats", strategies.Strategy(no_repeats))
    lm, prompt = BigramLM(), torch.tensor([[2, 3]])

    def run(**settings):
        config = GenerationConfig(
            eos_token_id=LM_EOS, pad_token_id=LM_PAD, max_new_tokens=6, min_new_tokens=6, **settings
        )
        return generate(lm, prompt, None, config).sequences

    assert torch.equal(run(strategy="no_repeats"), run(no_repeat_ngram_size=1))
    assert not torch.equal(run(strategy="no_repeats"), run())
    with pytest.raises(ConfigError, match="already registered"):
        strategies.register("no_repeats", strategies.Strategy(no_repeats))
    with pytest.raises(ConfigError, match="strategy: expected one of .*no_repeats"):
        run(strategy="nope")
    config = GenerationConfig(
        eos_token_id=LM_EOS, pad_token_id=LM_PAD, max_new_tokens=4, strategy="no_repeats"
    )
    with pytest.raises(ConfigError, match="streamer"):  # it did not say it streams
        generate(lm, prompt, None, config, streamer=print)
