"""Text generation from a GPT directory: ``seq2bert.generate`` (the continuations alone, prompts batched with
left padding, the model kept between calls, long prompts cut on the left with a warning, empty prompts
started from <|endoftext|>, streaming) and ``seq2bert generate`` (streamed for one prompt, one JSON line per
prompt for several, one-line errors with exit status 2)."""

import json
import logging
import os

import pytest
import torch

import seq2bert
from seq2bert import pipelines
from seq2bert.cli import main
from seq2bert.errors import CheckpointError
from seq2bert.models import registry
from tests.models.test_gpt_generate import tiny_directory

PROMPTS = ["the quick brown fox", "a stop", "", "Naïve café 🙂 jumps over the lazy dog. the quick"]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """(directory, model, tokenizer) of a tiny random GPT-2 with a context of 48 positions."""
    path = tmp_path_factory.mktemp("gpt2")
    model, tok = tiny_directory(path)
    return str(path), model, tok


def one_by_one(model, tok, prompt, **settings):
    """The continuation of one prompt by model.generate, decoded (the reference of the pipeline)."""
    ids = tok.encode(prompt).ids or [tok.eos_token_id]
    out = model.generate(torch.tensor([ids]), **settings)[0, len(ids) :].tolist()
    return tok.decode(out)


def test_the_continuations_prompt_excluded_batched_with_left_padding(gpt2):
    """In fp32, against model.generate prompt by prompt (a random model's choices are near-ties that bf16
    would flip: bf16 is the next test's)."""
    path, model, tok = gpt2
    texts = seq2bert.generate(PROMPTS, model=path, max_new_tokens=8, batch_size=3, bf16=False)
    assert texts == [one_by_one(model, tok, p, max_new_tokens=8) for p in PROMPTS]
    assert seq2bert.generate(PROMPTS[0], model=path, max_new_tokens=8, bf16=False) == texts[0]  # a string
    assert seq2bert.generate(PROMPTS, model=(model, tok), max_new_tokens=8, bf16=False) == texts  # a pair
    settings = dict(
        max_new_tokens=10, num_beams=3, repetition_penalty=1.3, no_repeat_ngram_size=2, bf16=False
    )
    assert seq2bert.generate(PROMPTS[:2], model=path, **settings) == [
        one_by_one(model, tok, p, **{k: v for k, v in settings.items() if k != "bf16"}) for p in PROMPTS[:2]
    ]


def test_a_kept_model_generates_as_a_bf16_weights_copy_when_asked(gpt2, monkeypatch):
    """bf16 (the default where the CPU computes it natively): the kept model's bf16-weights copy, made once,
    its own weights left in fp32; a pair under autocast; bf16=False in fp32."""
    from seq2bert.decoding import generation

    path, model, tok = gpt2
    seen = []
    real = generation.generate
    monkeypatch.setattr(generation, "generate", lambda net, *a, **k: seen.append(
        (next(net.parameters()).dtype, torch.is_autocast_enabled("cpu"))) or real(net, *a, **k))  # fmt: skip
    texts = seq2bert.generate(PROMPTS[:2], model=path, max_new_tokens=6, bf16=True)
    seq2bert.generate(PROMPTS[:2], model=path, max_new_tokens=6, bf16=True)
    seq2bert.generate(PROMPTS[:1], model=(model, tok), max_new_tokens=6, bf16=True)
    seq2bert.generate(PROMPTS[:1], model=path, max_new_tokens=6, bf16=False)
    assert seen == [(torch.bfloat16, False)] * 2 + [(torch.float32, True), (torch.float32, False)]
    kept = pipelines.loading._load(path, "causal_lm")[0]
    assert next(kept.parameters()).dtype == torch.float32 and kept in pipelines.loading._BF16_COPIES
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)


def test_sampling_is_repeatable_with_a_seed(gpt2):
    path, model, tok = gpt2
    settings = dict(max_new_tokens=10, do_sample=True, temperature=0.9, top_k=20, top_p=0.95, seed=4)
    a = seq2bert.generate(PROMPTS[:1], model=path, **settings)
    assert a == seq2bert.generate(PROMPTS[:1], model=path, **settings)
    assert a == [one_by_one(model, tok, PROMPTS[0], **settings)]
    assert a != seq2bert.generate(PROMPTS[:1], model=path, **{**settings, "seed": 5})


def test_stop_strings_end_the_text_and_stay_in_it(gpt2):
    path, _, _ = gpt2
    plain = seq2bert.generate(PROMPTS[0], model=path, max_new_tokens=20)
    stop = next(
        plain[i : i + 2] for i in range(4, len(plain)) if plain[i : i + 2].isascii() and plain[i].strip()
    )
    stopped = seq2bert.generate(PROMPTS[0], model=path, max_new_tokens=20, stop=stop)
    assert stop in stopped and plain.startswith(stopped) and len(stopped) < len(plain)
    assert stopped.find(stop) + len(stop) > len(stopped) - 4  # it ends in the token that completed it


def test_streamed_text_is_the_text(gpt2):
    path, _, _ = gpt2
    for settings in (dict(), dict(do_sample=True, seed=1), dict(stop="the")):
        pieces = []
        text = seq2bert.generate(PROMPTS[3], model=path, max_new_tokens=25, on_text=pieces.append, **settings)
        assert "".join(pieces) == text and len(pieces) > 1
    with pytest.raises(ValueError, match="on_text"):
        seq2bert.generate(PROMPTS[:2], model=path, on_text=print)
    with pytest.raises(ValueError, match="on_text"):
        seq2bert.generate(PROMPTS[0], model=path, num_beams=2, on_text=print)


def test_the_model_is_loaded_once_and_again_when_its_files_change(gpt2, monkeypatch, tmp_path):
    path, _, _ = gpt2
    loads = []
    load = registry.load
    monkeypatch.setattr(registry, "load", lambda *a, **k: loads.append(a) or load(*a, **k))
    pipelines._KEPT.clear()
    for _ in range(3):
        seq2bert.generate("x", model=path, max_new_tokens=2)
    assert len(loads) == 1
    config = os.path.join(path, "config.json")
    os.utime(config, ns=(0, os.stat(config).st_mtime_ns + 10**9))  # touched
    seq2bert.generate("x", model=path, max_new_tokens=2)
    assert len(loads) == 2
    other = tmp_path / "other"
    tiny_directory(other, n_layer=1)
    seq2bert.generate("x", model=str(other), max_new_tokens=2)
    assert len(loads) == 3 and len(pipelines._KEPT) == 2  # both kept; the stale first one replaced
    seq2bert.generate("x", model=path, max_new_tokens=2)
    assert len(loads) == 3  # still loaded
    monkeypatch.setattr(pipelines.loading, "KEEP", 1)  # one model kept: a third one sends the others away
    third = tmp_path / "third"
    tiny_directory(third, n_layer=1)
    seq2bert.generate("x", model=str(third), max_new_tokens=2)
    assert len(loads) == 4 and len(pipelines._KEPT) == 1
    seq2bert.generate("x", model=path, max_new_tokens=2)
    assert len(loads) == 5


def test_a_prompt_longer_than_the_context_keeps_its_end_with_a_warning(gpt2, caplog):
    path, model, tok = gpt2
    prompt = " ".join(["the quick brown fox jumps over the lazy dog."] * 8)
    ids = tok.encode(prompt).ids
    assert len(ids) > 48 - 10
    with caplog.at_level(logging.WARNING, logger="seq2bert.pipelines"):
        text = seq2bert.generate(prompt, model=path, max_new_tokens=10, bf16=False)
    assert (
        f"prompt 1: {len(ids)} tokens, but the context holds 48 positions, 10 of them for new tokens"
        in caplog.text
    )
    kept = torch.tensor([ids[-38:]])
    assert text == tok.decode(model.generate(kept, max_new_tokens=10)[0, 38:].tolist())
    with pytest.raises(ValueError, match="max_new_tokens: 48 leaves no room for a prompt"):
        seq2bert.generate("x", model=path, max_new_tokens=48)


def test_an_empty_prompt_needs_a_start_token(tmp_path):
    """GPT-2 starts from <|endoftext|> (test above); GPT-1 has no begin or end token: an error."""
    tiny_directory(tmp_path, kind="gpt1-bpe")
    assert isinstance(seq2bert.generate("the quick", model=str(tmp_path), max_new_tokens=3), str)
    with pytest.raises(ValueError, match="prompt 2 is empty, and the model has no begin or end token"):
        seq2bert.generate(["the", ""], model=str(tmp_path), max_new_tokens=3)


@pytest.mark.parametrize(
    "setting",
    [
        dict(top_p=0.0),
        dict(top_p=1.01),
        dict(temperature=0.0),
        dict(temperature=-0.5),
        dict(top_k=-2),
        dict(repetition_penalty=0.0),
        dict(max_new_tokens=0),
        dict(num_beams=0),
        dict(stop=""),
    ],  # fmt: skip
)
def test_invalid_settings_are_value_errors(gpt2, setting):
    path, _, _ = gpt2
    with pytest.raises(ValueError, match="stop_strings" if "stop" in setting else next(iter(setting))):
        seq2bert.generate("x", model=path, **setting)


# --- the command line
def run(capsys, *args):
    code = main(["generate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_one_prompt_is_streamed_several_give_a_json_line_each(gpt2, capsys, monkeypatch):
    path, _, _ = gpt2
    code, out, _ = run(capsys, path, PROMPTS[3], "--max-new-tokens", "12")
    assert code == 0 and out == seq2bert.generate(PROMPTS[3], model=path, max_new_tokens=12) + "\n"
    flags = ["--max-new-tokens", "9", "--num-beams", "2", "--repetition-penalty", "1.2", "--no-repeat-ngram-size",
             "3", "--top-k", "5"]  # fmt: skip
    code, out, _ = run(capsys, path, *PROMPTS, *flags)
    expected = seq2bert.generate(PROMPTS, model=path, max_new_tokens=9, num_beams=2, repetition_penalty=1.2,
                                 no_repeat_ngram_size=3)  # fmt: skip
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == expected
    code, out, _ = run(capsys, path, PROMPTS[0], "--num-beams", "2", "--max-new-tokens", "5")
    assert out == seq2bert.generate(PROMPTS[0], model=path, num_beams=2, max_new_tokens=5) + "\n"
    sampled = [
        "--do-sample",
        "--seed",
        "3",
        "--temperature",
        "0.8",
        "--top-p",
        "0.9",
        "--max-new-tokens",
        "7",
    ]
    code, out, _ = run(capsys, path, PROMPTS[0], *sampled)
    assert out == seq2bert.generate(PROMPTS[0], model=path, do_sample=True, seed=3, temperature=0.8, top_p=0.9,
                                    max_new_tokens=7) + "\n"  # fmt: skip
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(PROMPTS[1] + "\n"))
    code, out, _ = run(capsys, path, "--max-new-tokens", "4")
    assert out == seq2bert.generate(PROMPTS[1], model=path, max_new_tokens=4) + "\n"


def test_stop_takes_escapes(gpt2, capsys):
    path, _, _ = gpt2
    with_tab = seq2bert.generate(PROMPTS[0], model=path, max_new_tokens=12, stop=["\t", "the"])
    code, out, _ = run(capsys, path, PROMPTS[0], "--max-new-tokens", "12", "--stop", "\\t", "--stop", "the")
    assert code == 0 and out == with_tab + "\n"


def one_line_error(code, err):
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("seq2bert: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--top-p", "0"], "top_p: must be in (0, 1]"),
        (["--top-p", "1.5"], "top_p: must be in (0, 1]"),
        (["--temperature", "0"], "temperature: must be > 0"),
        (["--top-k", "-1"], "top_k: must be an integer >= 0"),
        (["--repetition-penalty", "0"], "repetition_penalty: must be > 0"),
        (["--repetition-penalty", "-1.5"], "repetition_penalty: must be > 0"),
        (["--max-new-tokens", "60"], "max_new_tokens: 60 leaves no room for a prompt"),
    ],
)
def test_invalid_settings_are_one_line_errors(gpt2, capsys, flags, message):
    path, _, _ = gpt2
    assert message in one_line_error(*run(capsys, path, "x", *flags)[::2])


def test_a_tokenizer_larger_than_the_model_and_an_empty_prompt_without_a_start(gpt2, capsys, tmp_path):
    from seq2bert.models.gpt.config import gpt2_tiny
    from seq2bert.models.gpt.heads import GPT2LMHeadModel

    _, _, tok = gpt2
    GPT2LMHeadModel(gpt2_tiny(vocab_size=100)).save_pretrained(tmp_path / "small", tokenizer=tok)
    (tmp_path / "small" / "tokenizer.json").unlink()
    line = one_line_error(*run(capsys, str(tmp_path / "small"), "x")[::2])
    assert (
        f"{tmp_path / 'small' / 'vocab.json'}: {tok.vocab_size} tokens, more than the model's vocab_size 100"
        in line
    )
    tiny_directory(tmp_path / "gpt1", kind="gpt1-bpe")
    assert "prompt 1 is empty" in one_line_error(
        *run(capsys, str(tmp_path / "gpt1"), "", "--max-new-tokens", "3")[::2]
    )
    with pytest.raises(CheckpointError, match="vocab.json"):
        seq2bert.generate("x", model=str(tmp_path / "small"))


def test_the_command_in_its_own_process(gpt2):
    """The real process: the streamed text, then exit 2 with one line for a bad setting."""
    from tests.test_cli import run_cli

    path, _, _ = gpt2
    proc = run_cli("generate", path, PROMPTS[0], "--max-new-tokens", "6")
    assert (
        proc.returncode == 0
        and proc.stdout == seq2bert.generate(PROMPTS[0], model=path, max_new_tokens=6) + "\n"
    )
    proc = run_cli("generate", path, PROMPTS[0], "--top-p", "2")
    assert (
        proc.returncode == 2
        and proc.stderr == "seq2bert: error: top_p: must be in (0, 1] (1: no nucleus filter), got 2.0\n"
    )


@pytest.mark.parametrize(
    "flags, settings",
    [
        (["--num-beams", "3", "--length-penalty", "0.3"], dict(num_beams=3, length_penalty=0.3)),
        (["--beam", "3", "--length-penalty", "2.5"], dict(num_beams=3, length_penalty=2.5)),
        (["--penalty-alpha", "0.6", "--top-k", "4"], dict(penalty_alpha=0.6, top_k=4)),
        (
            ["--num-beams", "4", "--num-beam-groups", "2", "--diversity-penalty", "1.0"],
            dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0),
        ),
    ],
)
def test_every_decoding_setting_is_a_flag_that_reaches_the_search(gpt2, capsys, monkeypatch, flags, settings):
    """generate --length-penalty (and the strategies' settings) decode as the Python API does; the pipeline
    gets exactly the settings given."""
    path, _, _ = gpt2
    code, out, _ = run(capsys, path, *PROMPTS[:2], "--max-new-tokens", "8", *flags)
    expected = seq2bert.generate(PROMPTS[:2], model=path, max_new_tokens=8, **settings)
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == expected
    seen = {}
    monkeypatch.setattr("seq2bert.pipelines.generate", lambda prompts, model, **kw: seen.update(kw) or [""])
    run(capsys, path, *PROMPTS[:2], *flags)
    assert {k: seen[k] for k in settings} == settings
