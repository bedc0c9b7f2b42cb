"""The decoding front ends with int8 weights, a draft model and a compiled stack: the pipelines (translate,
generate), the commands (translate, generate, sample) and the server give the same outputs with a draft as
without it, int8 runs the int8 twin and says so, a compiled stack decodes as the eager one, and the bad
combinations are one-line refusals."""

import json
import logging

import pytest
import torch
from torch import nn

from seq2bert.cli import main
from seq2bert.errors import UserError
from seq2bert.models import registry
from seq2bert.pipelines import generate, loading, translate
from seq2bert.precision import native_int8
from seq2bert.serve import draft_names
from seq2bert.serve.models import ServedModel
from tests.serve.conftest import checkpoints as served_checkpoints

checkpoints = served_checkpoints
PROMPTS = ["the quick brown", "a", "over the lazy dog and the"]
SOURCES = ["s1 s2 s3", "s4", "s2 s5 s1 s3"]


@pytest.mark.parametrize("int8", [False, True])
def test_generate_with_a_draft_gives_the_models_own_text(checkpoints, int8):
    gpt = str(checkpoints["gpt"])
    plain = generate(PROMPTS, gpt, max_new_tokens=10, bf16=False, int8=int8)
    assert generate(PROMPTS, gpt, max_new_tokens=10, bf16=False, int8=int8, draft=gpt) == plain
    assert generate(PROMPTS, gpt, max_new_tokens=10, int8=int8, draft=gpt, num_draft_tokens=2) == generate(
        PROMPTS, gpt, max_new_tokens=10, int8=int8
    )


def test_translate_with_a_draft_gives_the_models_own_translations(checkpoints):
    run = str(checkpoints["translation"])
    plain = translate(run, SOURCES, bf16=False)
    assert translate(run, SOURCES, bf16=False, draft=run) == plain
    assert translate(run, SOURCES, int8=True, draft=run) == translate(run, SOURCES, int8=True)


def test_int8_decoding_says_what_it_runs(checkpoints, caplog):
    pair = registry.load(checkpoints["gpt"], head="causal_lm")  # a model not decoded before: said once
    with caplog.at_level(logging.INFO, logger="seq2bert.pipelines"):
        generate(PROMPTS[:1], pair, max_new_tokens=3, bf16=False, int8=True)
        generate(PROMPTS[:1], pair, max_new_tokens=3, bf16=False, int8=True)
    path = (  # the CPU decides whether the activations are int8 too (VNNI, AMX)
        "int8 weights and int8 activations (a scale per token), fp32 between layers"
        if native_int8("cpu")
        else "int8 weights, fp32 activations"
    )
    said = [r.getMessage() for r in caplog.records if path in r.getMessage()]
    assert said == [f"GPT2LMHeadModel: {path} on the CPU" + said[0].split("the CPU")[1]]


def test_the_commands_take_draft_and_int8(checkpoints, capsys):
    gpt, run = str(checkpoints["gpt"]), str(checkpoints["translation"])
    outputs = []
    for extra in ([], ["--draft", gpt], ["--draft", gpt, "--int8", "--num-draft-tokens", "3"]):
        assert main(["generate", gpt, *PROMPTS, "--max-new-tokens", "8", "--bf16", "false", *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 3
    outputs = []
    for extra in ([], ["--draft", run]):
        assert main(["translate", run, *SOURCES, "--bf16", "false", *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    outputs = []
    for extra in ([], ["--draft", gpt]):  # --temperature 0: greedy
        sample = ["sample", gpt, "--prompt", "the quick", "--temperature", "0", "--max-new-tokens", "9"]
        assert main([*sample, *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].strip()
    assert main(["sample", gpt, "--draft", gpt, "--int8", "--seed", "1", "--max-new-tokens", "5"]) == 0
    assert main(["translate", run, "s1", "--draft", run, "--show-alignment", "a.png"]) == 2
    assert "leave out --draft" in capsys.readouterr().err


def test_a_draft_of_another_vocabulary_is_one_line(checkpoints, capsys):
    assert main(["generate", str(checkpoints["gpt"]), "a b", "--draft", str(checkpoints["translation"])]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_server_decodes_with_its_draft(checkpoints):
    gpt = ServedModel.load("gpt", checkpoints["gpt"], int8=True)
    options = (("max_new_tokens", 6),)
    plain = gpt.run("generate", PROMPTS, options)
    gpt.drafted_by(str(checkpoints["gpt"]))
    assert gpt.draft is not None and gpt.run("generate", PROMPTS, options) == plain
    m30k = ServedModel.load("m30k", checkpoints["translation"])
    options = (("alignment", False), ("num_beams", 1))
    plain = m30k.run("translate", SOURCES, options)
    m30k.drafted_by(str(checkpoints["translation"]))
    assert m30k.run("translate", SOURCES, options) == plain
    with pytest.raises(UserError, match="neither translates nor generates"):
        ServedModel.load("sst2", checkpoints["sequence"]).drafted_by(str(checkpoints["gpt"]))


def test_serve_names_the_model_a_draft_is_for(checkpoints):
    gpt, m30k = (ServedModel("gpt", checkpoints["gpt"], pipelines=["generate"]),
                 ServedModel("m30k", checkpoints["translation"], pipelines=["translate"]))  # fmt: skip
    sst2 = ServedModel("sst2", checkpoints["sequence"], pipelines=["classify"])
    assert draft_names(["small/"], [gpt, sst2]) == [("gpt", "small/")]
    assert draft_names(["m30k=tiny/"], [gpt, m30k]) == [("m30k", "tiny/")]
    with pytest.raises(UserError, match="2 served models translate or generate"):
        draft_names(["small/"], [gpt, m30k])
    with pytest.raises(UserError, match="no served model is named 'bert'"):
        draft_names(["bert=small/"], [gpt, m30k])


def test_evaluate_lm_scores_the_int8_and_int4_twins(checkpoints, tmp_path, capsys):
    from seq2bert.recipes.lm import evaluate_lm

    text = tmp_path / "held-out.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. a stop is a stop, not a top.\n" * 4)
    gpt = str(checkpoints["gpt"])
    plain = evaluate_lm(gpt, [str(text)])["perplexity"]
    for bits, tolerance in ((8, 0.01), (4, 0.2)):  # weights rounded: near the float model, not equal to it
        quantized = evaluate_lm(gpt, [str(text)], bits=bits)["perplexity"]
        assert quantized != plain and abs(quantized / plain - 1) < tolerance
    assert main(["evaluate-lm", gpt, str(text), "--int8"]) == 0
    with pytest.raises(SystemExit):  # one or the other
        main(["evaluate-lm", gpt, str(text), "--int8", "--int4"])


# --- the decoding stack under torch.compile (pipelines/loading.py compiled)


def test_a_compiled_twin_shares_the_weights_and_leaves_the_model_as_it_was(checkpoints):
    net, _ = registry.load(checkpoints["gpt"], head="causal_lm")
    twin = loading.compiled(net)
    assert loading.compiled(net) is twin  # made once
    assert isinstance(twin.transformer, torch._dynamo.eval_frame.OptimizedModule)
    assert not isinstance(net.transformer, torch._dynamo.eval_frame.OptimizedModule)
    assert twin.transformer._orig_mod is net.transformer and twin.lm_head is net.lm_head


def test_compile_refuses_a_model_without_a_transformer_stack():
    class Recurrent(nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.decoder = cell

    for net in (Recurrent(nn.LSTM(4, 4)), Recurrent(nn.GRUCell(4, 4)), nn.Linear(2, 2)):
        with pytest.raises(UserError, match="no Transformer decoding stack to compile"):
            loading.compiled(net)


@pytest.mark.long
def test_the_compiled_stack_decodes_as_the_eager_model(checkpoints, capsys):
    """Compiles a tiny Transformer's decoder and a tiny GPT-2's stack (about a minute)."""
    run, gpt = str(checkpoints["translation"]), str(checkpoints["gpt"])
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert translate(run, SOURCES, bf16=False, compile=True) == translate(run, SOURCES, bf16=False)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > graphs  # compiled, not eager
    plain = generate(PROMPTS, gpt, max_new_tokens=6, bf16=False)
    assert generate(PROMPTS, gpt, max_new_tokens=6, bf16=False, compile=True) == plain
    assert main(["generate", gpt, *PROMPTS, "--max-new-tokens", "6", "--bf16", "false", "--compile"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == plain  # one JSON line each


def test_serve_compile_makes_the_compiled_twin_when_it_loads(checkpoints):
    before = len(loading._COMPILED)
    m30k = ServedModel.load("m30k", checkpoints["translation"], compile=True)
    assert m30k.compile and len(loading._COMPILED) == before + 1  # made by the load, not a request
    with m30k.decoder(compile=True) as (net, _, _):
        assert isinstance(net.decoder, torch._dynamo.eval_frame.OptimizedModule)
    with m30k.decoder() as (net, _, _):  # alignments and attention maps: the eager model
        assert not isinstance(net.decoder, torch._dynamo.eval_frame.OptimizedModule)


# --- int4 weights (one input at a time: benchmarks/int8_kernels.py)


def test_int4_decodes_with_the_int4_twin_everywhere_it_is_offered(checkpoints, capsys):
    from seq2bert.models.weight_only import int8_twin
    from seq2bert.nn.weight_only import Int4Linear

    gpt = str(checkpoints["gpt"])
    net, tok = registry.load(gpt, head="causal_lm")
    twin = int8_twin(net, torch.float32, 4)
    assert any(isinstance(m, Int4Linear) for m in twin.modules())
    ids = torch.tensor([tok.ids_batch([PROMPTS[0]])[0]])
    expected = twin.generate(ids, max_new_tokens=6)
    assert torch.equal(net.generate(ids, max_new_tokens=6, int4=True), expected)
    text = generate(PROMPTS[0], gpt, max_new_tokens=6, bf16=False, int4=True)
    assert text == tok.decode(expected[0, ids.size(1) :].tolist())
    run = str(checkpoints["translation"])
    assert main(["translate", run, *SOURCES, "--int4", "--bf16", "false"]) == 0
    assert capsys.readouterr().out.splitlines() == translate(run, SOURCES, bf16=False, int4=True)
    assert main(["sample", gpt, "--prompt", "a", "--int4", "--max-new-tokens", "3"]) == 0


def test_int8_and_int4_together_are_refused_in_one_line(checkpoints, capsys):
    assert main(["generate", str(checkpoints["gpt"]), "a", "--max-new-tokens", "3", "--int8", "--int4"]) == 2
    err = capsys.readouterr().err
    assert "int8 and int4: ask for one of them" in err and "Traceback" not in err
