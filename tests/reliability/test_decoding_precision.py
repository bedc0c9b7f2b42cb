"""The decoding pipelines keep their model loaded and compute in bf16 where asked (the default where the CPU
computes bf16 natively): a kept directory's model decodes as a bf16-weights copy made once, a model passed in
under autocast with its own weights left in fp32, ``bf16=False`` in fp32. (Whether bf16 keeps the outputs:
BLEU on Multi30k, benchmarks/inference.py and benchmarks/RESULTS.md; a one-step run's translations are
near-ties everywhere.)"""

import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.decoding.generation import Decoding
from seq2bert.models import registry
from seq2bert.pipelines import loading, translate
from seq2bert.precision import native_int8


@pytest.fixture
def decoded_with(monkeypatch):
    """The models each Decoding.ids call decoded with: (their weights' dtype, autocast on)."""
    seen = []
    real = Decoding.ids

    def ids(self, model, tok, input_ids, mask, draft=None):
        seen.append((next(model.parameters()).dtype, torch.is_autocast_enabled("cpu")))
        return real(self, model, tok, input_ids, mask, draft)

    monkeypatch.setattr(Decoding, "ids", ids)
    return seen


@pytest.mark.parametrize("model_type", ["bahdanau", "transformer"])
def test_translate_keeps_the_model_and_decodes_in_bf16_when_asked(model_type, translation_runs, decoded_with):
    run = translation_runs[model_type]
    texts = ["s1 s2 s3", "s4 s5", "s2"]
    fp32 = translate(run, texts, bf16=False)
    assert decoded_with == [(torch.float32, False)]
    bf16 = translate(run, texts, bf16=True)
    assert len(bf16) == 3 and all(isinstance(t, str) for t in bf16)
    kept = loading._load(str(run), loading.ENCODER)[0]
    if model_type == "transformer":  # a bf16-weights copy of the kept model, made once
        assert decoded_with[1] == (torch.bfloat16, False)
        copy = loading._BF16_COPIES[kept]
        translate(run, texts[:1], bf16=True, decoding=Decoding(num_beams=3))
        assert loading._BF16_COPIES[kept] is copy and decoded_with[2] == (torch.bfloat16, False)
    else:  # a recurrent model: autocast (its cells keep fp32 states)
        assert decoded_with[1] == (torch.float32, True)
    assert next(kept.parameters()).dtype == torch.float32
    assert translate(run, texts, bf16=False) == fp32  # the kept fp32 model, unchanged
    assert loading._load(str(run), loading.ENCODER)[0] is kept  # not read again


def test_a_model_passed_in_decodes_under_autocast_and_bf16_false_is_fp32(translation_runs, decoded_with):
    model, tok = registry.load(translation_runs["transformer"])
    translate(model, ["s1 s2"], tokenizer=tok, bf16=True)
    translate(model, ["s1 s2"], tokenizer=tok, bf16=False)
    assert decoded_with == [(torch.float32, True), (torch.float32, False)]
    assert next(model.parameters()).dtype == torch.float32
    with pytest.raises(seq2bert.errors.UserError, match="bf16: expected true, false or 'auto'"):
        translate(model, ["s1"], tokenizer=tok, bf16="yes")


def test_the_translate_command_takes_bf16(translation_runs, decoded_with, capsys):
    run = str(translation_runs["transformer"])
    assert main(["translate", run, "s1 s2", "--bf16", "false"]) == 0
    assert main(["translate", run, "s1 s2", "--bf16", "true"]) == 0
    assert decoded_with == [(torch.float32, False), (torch.bfloat16, False)]
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2


def test_evaluate_scores_a_translation_model_in_int8_or_bf16(translation_runs, bert_runs, capsys):
    """`seq2bert evaluate --int8 / --bf16 true` scores the model as `translate --int8` / the bf16 default
    decode it (fp32 by default: the precision results.json reports); a fine-tuned BERT refuses both."""
    run = str(translation_runs["transformer"])
    int8 = (  # the CPU decides whether the activations are int8 too (VNNI, AMX)
        "int8 weights and int8 activations (a scale per token), {} between layers"
        if native_int8("cpu")
        else "int8 weights, {} activations"
    )
    for flags, precision in (
        ([], "float32"),
        (["--int8"], int8.format("float32")),
        (["--bf16", "true"], "bfloat16"),
        (["--int8", "--bf16", "true"], int8.format("bfloat16")),
    ):
        assert main(["evaluate", run, *flags]) == 0
        out = capsys.readouterr().out
        assert f"(greedy, {precision})" in out and "bleu" in out.lower()
    assert main(["evaluate", str(bert_runs["sequence"]), "--int8"]) == 2
    assert "--int8 and --bf16 are for translation checkpoints" in capsys.readouterr().err
