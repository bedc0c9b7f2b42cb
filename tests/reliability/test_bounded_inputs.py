"""Bounded work (issue 23, item 6): every pipeline and command caps or truncates what it reads — a documented
default, overridable — and says so in a warning; a text past a model's position table is never an IndexError.

Translation sources: ``max_source_length`` tokens (default: the model's positions, else 512; CLI
--max-source-length), and no translation longer than the decoder's positions. Encoders: ``max_length``
clamped to the model's positions (embed, classify, tag), fill-mask reads its first positions."""

import logging

import pytest

import seq2bert
from seq2bert.cli import main
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import Decoding
from seq2bert.errors import UserError
from seq2bert.models.alignment import MAX_SOURCE_LENGTH, align, source_limit
from seq2bert.pipelines import classify, embed, fill_mask, tag, translate
from seq2bert.viz.inspect import attention_maps
from tests.reliability.conftest import POSITIONS

LONG = "a b c d " * 2000  # 8000 source tokens


@pytest.fixture
def read_lengths(monkeypatch):
    """The source lengths (tokens) the search is given."""
    seen = []
    search = Decoding.ids

    def spy(self, model, tok, input_ids, mask, draft=None):
        seen.append(input_ids.size(1))
        return search(self, model, tok, input_ids, mask, draft)

    monkeypatch.setattr(Decoding, "ids", spy)
    return seen


def truncations(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "truncated" in r.getMessage()
    ]


@pytest.mark.parametrize(
    "model_type, asked, expected",
    [
        ("bahdanau", None, MAX_SOURCE_LENGTH),  # no position table: the documented default
        ("bahdanau", 7, 7),
        ("transformer", None, POSITIONS),  # a learned table: its size
        ("transformer", 7, 7),
        ("transformer", 10**6, POSITIONS),  # never past it
    ],
)
def test_a_long_source_is_truncated_with_a_warning(model_type, asked, expected, translation_runs, read_lengths,
                                                    caplog):  # fmt: skip
    out = translate(translation_runs[model_type], [LONG, "a b"], max_source_length=asked)
    assert len(out) == 2 and all(isinstance(t, str) for t in out)
    assert max(read_lengths) == expected
    assert truncations(caplog) == [
        f"a source of 8000 tokens truncated to its first {expected} (max_source_length)"
    ]


def test_the_top_level_translate_takes_the_cap_too(translation_runs, read_lengths):
    seq2bert.translate(["word " * 20000], model=translation_runs["bahdanau"], max_source_length=5)
    assert read_lengths == [5]


def test_no_translation_outgrows_the_decoders_positions(translation_runs):
    config = GenerationConfig(eos_token_id=2, pad_token_id=0, max_len_a=1.5, max_len_b=10, max_positions=16)
    assert config.max_lengths([2, 100]) == [13, 16]
    generous = Decoding(max_len_a=0.0, max_len_b=1000)  # a budget far past the 16 positions
    (out,) = translate(translation_runs["transformer"], [LONG], decoding=generous)
    assert len(out.split()) <= POSITIONS


def test_align_truncates_its_source(translation_runs, caplog):
    a = align(translation_runs["transformer"], LONG)
    assert len(a.source_tokens) == POSITIONS and a.weights.shape[1] == POSITIONS
    assert truncations(caplog)


def test_a_bad_cap_is_a_one_line_error(translation_runs):
    with pytest.raises(UserError, match="max_source_length: expected at least 1 token, got 0"):
        source_limit(object(), 0)


def test_the_translate_and_align_commands_take_the_cap(translation_runs, tmp_path, capsys):
    run = translation_runs["transformer"]
    assert main(["translate", str(run), "--max-source-length", "3", LONG]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert main(["align", str(run), LONG, "--max-source-length", "5", "--out", str(tmp_path / "a.png")]) == 0
    assert (tmp_path / "a.png").stat().st_size > 0


def test_embed_with_a_huge_max_length_reads_the_models_positions(bert_runs, caplog):
    vectors = embed(["the film " * 200, "the film"], bert_runs["pretrained"], max_length=10**6)
    assert vectors.shape == (2, 16)
    assert truncations(caplog) == [f"1 text(s) longer than {POSITIONS} tokens truncated (max_length)"]


def test_fill_mask_reads_the_models_positions(bert_runs, caplog):
    rows = fill_mask("the [MASK] film " + "the film " * 200, bert_runs["pretrained"], top_k=2)
    assert len(rows) == 2 and truncations(caplog)
    with pytest.raises(UserError, match=f"no \\[MASK\\] in its first {POSITIONS} tokens"):
        fill_mask("the film " * 200 + "[MASK]", bert_runs["pretrained"])


@pytest.mark.parametrize("run", ["pretrained", "translation"])
def test_attention_maps_read_the_models_positions(run, bert_runs, translation_runs, tmp_path, capsys, caplog):
    model = bert_runs["pretrained"] if run == "pretrained" else translation_runs["transformer"]
    assert main(["attention", str(model), "the film " * 200, "--out", str(tmp_path / "a.png")]) == 0
    assert (tmp_path / "a.png").stat().st_size > 0 and truncations(caplog)
    maps = attention_maps(model, "the film " * 200)
    assert max(w.shape[-1] for layers in maps.layers.values() for w in layers) == POSITIONS


@pytest.mark.parametrize("pipeline, head", [(classify, "sequence"), (tag, "tokens")])
def test_classify_and_tag_say_they_truncated(pipeline, head, bert_runs, caplog):
    pipeline("the film " * 200, bert_runs[head], max_length=10**6)
    assert truncations(caplog) == [f"1 text(s) longer than {POSITIONS} tokens truncated (max_length)"]
