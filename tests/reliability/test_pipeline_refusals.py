"""What the pipelines and the checkpoints they read refuse, in one line and without a traceback (issue 41,
items 4–6): on the command line with exit status 2, in Python as a UserError (a CheckpointError for a
checkpoint), never a TypeError or IndexError.

- `embed` of a translation run, and `embed` with no texts;
- a prompt far past the context of a left-to-right BERT (BertLMHeadModel, is_decoder) or a GPT-2 (`generate`,
  `sample`): cut to the context, its end kept, one warning for all the prompts cut;
- a checkpoint whose weights hold NaN (classify, tag, qa, embed, generate);
- a config.json that is not UTF-8, not JSON, not a JSON object, without a model_type, or whose values have the
  wrong types (named by key, with the type expected, for every family);
- a pytorch_model.bin that is a pickle asking to run code (never run), or not a state dict of tensors;
- arguments of the Python pipelines of the wrong type (None, one string for a list, items that are not
  strings) and empty questions or contexts; an empty list is a list, its results empty."""

import json
import logging
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import seq2bert
from seq2bert import pipelines
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import CheckpointError, UserError
from seq2bert.models import registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertLMHeadModel
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.gpt.config import gpt2_tiny
from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.pipelines.generation import prompt_ids
from tests.reliability.conftest import POSITIONS, WORDS, one_line, snapshot

LONG = " ".join(WORDS) * 5000  # about 100,000 characters


@pytest.fixture(autouse=True)
def nothing_kept():
    """Each test loads its directories afresh (the pipelines keep the models they loaded)."""
    pipelines._KEPT.clear()
    yield
    pipelines._KEPT.clear()


def feed(monkeypatch, text: str) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8"))


@pytest.fixture(scope="module")
def language_models(tmp_path_factory) -> dict[str, str]:
    """{"bert": a left-to-right BERT (BertLMHeadModel, is_decoder) with 16 positions, "gpt2": a GPT-2 with 24},
    each a directory with its tokenizer."""
    root = tmp_path_factory.mktemp("lm")
    corpus = root / "words.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    torch.manual_seed(0)
    wordpiece = Tokenizer.train([corpus], kind="wordpiece", vocab_size=80, lowercase=True)
    bert = BertLMHeadModel(
        BertConfig(
            vocab_size=wordpiece.vocab_size,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=16,
            is_decoder=True,
            max_position_embeddings=POSITIONS,
            eos_token_id=wordpiece.vocab_size - 1,
        )
    )
    save_bert(bert, root / "bert", wordpiece)
    bpe = Tokenizer.train([corpus], kind="bytelevel-bpe", vocab_size=300, min_frequency=1)
    eot = bpe.eos_token_id
    gpt2 = GPT2LMHeadModel(
        gpt2_tiny(vocab_size=bpe.vocab_size, bos_token_id=eot, eos_token_id=eot, n_positions=24)
    )
    gpt2.save_pretrained(root / "gpt2", tokenizer=bpe)
    return {"bert": str(root / "bert"), "gpt2": str(root / "gpt2")}


# --- embed


def test_embed_of_a_translation_run_is_one_line(translation_runs, capsys):
    run = translation_runs["transformer"]
    before = snapshot(run)
    assert main(["embed", str(run), "ein Hund"]) == 2
    line = one_line(capsys)
    assert f"{run} is a translation model (transformer, an encoder-decoder)" in line
    assert "expected an encoder" in line
    with pytest.raises(UserError, match="is a translation model"):
        seq2bert.embed(["ein Hund"], model=str(translation_runs["bahdanau"]))
    with pytest.raises(UserError, match="word_vectors: .* is a translation model"):
        pipelines.word_vectors(["ein Hund"], "Hund", model=str(run))
    assert snapshot(run) == before


def test_embed_without_texts_is_one_line(bert_runs, monkeypatch, capsys):
    feed(monkeypatch, "")
    assert main(["embed", str(bert_runs["pretrained"])]) == 2
    assert "embed: no texts; give them as arguments or one per line on stdin" in one_line(capsys)
    feed(monkeypatch, "\n  \n")
    assert main(["embed", str(bert_runs["pretrained"]), "--word", "film"]) == 2
    assert "no texts" in one_line(capsys)


# --- a prompt past the context


@pytest.mark.parametrize("kind, positions", [("bert", POSITIONS), ("gpt2", 24)])
def test_a_prompt_past_the_context_keeps_its_end_with_one_warning(kind, positions, language_models, caplog):
    path = language_models[kind]
    net, tok = registry.load(path, head="causal_lm")
    ids = tok.ids_batch([LONG])[0]
    assert len(ids) > 10 * positions
    with caplog.at_level(logging.WARNING, logger="seq2bert.pipelines"):
        rows = prompt_ids(net, tok, [LONG, "the film", LONG[:3000]], max_new_tokens=4)
    assert rows[0] == ids[-(positions - 4) :]  # its end, the room the new tokens leave
    assert rows[1] == tok.ids_batch(["the film"])[0]  # a short prompt as it is
    assert len(rows[2]) == positions - 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"prompts 1, 3: up to {len(ids)} tokens, but the context holds {positions} positions, 4 of them for "
        f"new tokens: kept the last {positions - 4} tokens"
    ]
    texts = seq2bert.generate([LONG[:3000], "the film"], model=path, max_new_tokens=4, bf16=False)
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    assert seq2bert.generate(LONG[:3000], model=path, max_new_tokens=4, bf16=False) == texts[0]


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
@pytest.mark.parametrize("command", ["generate", "sample"])
def test_a_100k_character_prompt_on_the_command_line(command, kind, language_models, capsys, caplog):
    prompt = [LONG, "--bf16", "false"] if command == "generate" else ["--prompt", LONG]
    with caplog.at_level(logging.WARNING):
        assert main([command, language_models[kind], *prompt, "--max-new-tokens", "3"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and out.endswith("\n")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "kept the last" in warnings[0]  # warned once


# --- non-finite weights


def poisoned(source, tmp_path, key=None):
    """A copy of the checkpoint ``source`` (a run directory's best/) with one weight set to NaN."""
    copy = tmp_path / source.name / "best"
    shutil.copytree(source / "best", copy)
    weights = load_file(copy / "model.safetensors")
    key = key or next(k for k in weights if "encoder.layer.0.output.dense.weight" in k)
    weights[key][0, 0] = float("nan")
    save_file(weights, copy / "model.safetensors", metadata={"format": "pt"})
    return copy


@pytest.mark.parametrize(
    "run, argv",
    [
        ("sequence", ["classify", "{dir}", "a great film"]),
        ("tokens", ["tag", "{dir}", "john lives in paris"]),
        ("qa", ["qa", "{dir}", "--question", "who", "--context", "john lives in paris"]),
        ("pretrained", ["embed", "{dir}", "a film", "a story"]),
        ("pretrained", ["fill-mask", "{dir}", "the [MASK] film"]),
    ],
    ids=["classify", "tag", "qa", "embed", "fill-mask"],
)
def test_nan_weights_are_refused(run, argv, bert_runs, tmp_path, capsys):
    path = poisoned(bert_runs[run], tmp_path)
    assert main([a.format(dir=path) for a in argv]) == 2
    line = one_line(capsys)
    assert f"{path}: non-finite weights (1 NaN or infinite values in " in line and "not used" in line
    assert "nan" not in capsys.readouterr().out


def test_nan_weights_in_python_and_for_generate(bert_runs, language_models, tmp_path, capsys):
    path = poisoned(bert_runs["sequence"], tmp_path)
    with pytest.raises(CheckpointError, match="non-finite weights"):
        seq2bert.classify(["a great film"], model=str(path))
    lm = tmp_path / "lm"
    shutil.copytree(language_models["gpt2"], lm)
    weights = load_file(lm / "model.safetensors")
    weights[next(k for k in weights if k.endswith("h.0.mlp.c_fc.weight"))][0, 0] = float("inf")
    save_file(weights, lm / "model.safetensors", metadata={"format": "pt"})
    assert main(["generate", str(lm), "the film"]) == 2
    assert (
        "non-finite weights (1 NaN or infinite values in transformer.layers.0.feed_forward.w_1.weight); not used"
        in one_line(capsys)
    )


# --- config.json


def with_config(source, tmp_path, damage):
    copy = tmp_path / "model"
    shutil.copytree(source, copy)
    damage(copy / "config.json")
    return copy


def edited(**changes):
    def damage(path):
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))

    return damage


def written(content: bytes):
    return lambda path: path.write_bytes(content)


CONFIGS = {
    "not UTF-8": (written(b'{"model_type": "bert", "x": "\xff"}'), "config.json:1: invalid UTF-8"),
    "binary": (written(bytes(range(256))), "invalid UTF-8"),
    "not JSON": (written(b"{hidden_size: 32"), "config.json:1: invalid JSON"),
    "a list": (written(b"[1, 2, 3]"), "config.json: a JSON list, expected a JSON object {…} of keys"),
    "a number": (written(b"42"), "config.json: a JSON number, expected a JSON object"),
    "no model_type": (written(b"{}"), "config.json: no model_type (expected one of "),
    "layers a string": (edited(num_hidden_layers="4"), "config.json: num_hidden_layers: expected an integer, got '4'"),
    "dropout a word": (edited(hidden_dropout_prob="high"), "hidden_dropout_prob: expected a number, got 'high'"),
    "is_decoder a string": (edited(is_decoder="false"), "is_decoder: expected true or false, got 'false'"),
    "hidden_act a number": (edited(hidden_act=3), "hidden_act: expected a string, got 3"),
    "id2label a number": (edited(id2label=2), "id2label: expected a mapping, got 2"),
}  # fmt: skip


@pytest.mark.parametrize("damage, says", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_bad_config_json_names_the_file_and_its_problem(damage, says, bert_runs, tmp_path, capsys):
    path = with_config(bert_runs["sequence"] / "best", tmp_path, damage)
    assert main(["classify", str(path), "a great film"]) == 2
    line = one_line(capsys)
    assert says in line and str(path / "config.json") in line
    assert "not supported between" not in line and "model_type None" not in line
    with pytest.raises(CheckpointError, match="config.json"):
        seq2bert.embed(["a film"], model=str(path))


def test_wrong_types_are_named_for_every_family(language_models, tmp_path):
    """The check reads the family's config dataclass: GPT-2's own names, in the same one place."""
    path = with_config(language_models["gpt2"], tmp_path, edited(n_layer="2", n_positions=24.0))
    with pytest.raises(CheckpointError, match=r"config.json: n_layer: expected an integer, got '2'$"):
        registry.load(path)
    path = with_config(language_models["gpt2"], tmp_path / "b", edited(n_positions=24.0))
    assert registry.load(path)[0].config.n_positions == 24  # an integral number is an integer


# --- pytorch_model.bin


class RunsCode:
    """A pickle that calls os.system when it is unpickled: what a malicious checkpoint holds."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def with_bin(source, tmp_path, content):
    copy = tmp_path / "model"
    shutil.copytree(source, copy)
    (copy / "model.safetensors").unlink()
    torch.save(content, copy / "pytorch_model.bin")
    return copy


def test_a_malicious_pytorch_model_bin_is_one_line_and_never_runs(bert_runs, tmp_path, capsys):
    marker = tmp_path / "ran"
    state = load_file(bert_runs["sequence"] / "best" / "model.safetensors")
    path = with_bin(bert_runs["sequence"] / "best", tmp_path, {**state, "x": RunsCode(marker)})
    assert main(["classify", str(path), "a great film"]) == 2
    line = one_line(capsys)
    assert f"{path / 'pytorch_model.bin'}: not a plain tensor archive (it asks for " in line
    assert "system); not loaded (no code in it was run)" in line
    assert "weights_only" not in line
    with pytest.raises(CheckpointError, match="not a plain tensor archive"):
        registry.load(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content, says",
    [
        ([1, 2, 3], "expected a state dict of named tensors"),
        ({"a": 1}, "expected a state dict of named tensors"),
    ],
    ids=["a list", "not tensors"],
)
def test_a_pytorch_model_bin_without_tensors_is_one_line(content, says, bert_runs, tmp_path, capsys):
    path = with_bin(bert_runs["sequence"] / "best", tmp_path, content)
    assert main(["classify", str(path), "a great film"]) == 2
    assert f"{path / 'pytorch_model.bin'}: {says}" in one_line(capsys)


def test_a_truncated_pytorch_model_bin_is_one_line(bert_runs, tmp_path, capsys):
    path = with_bin(
        bert_runs["sequence"] / "best",
        tmp_path,
        load_file(bert_runs["sequence"] / "best" / "model.safetensors"),
    )
    data = (path / "pytorch_model.bin").read_bytes()
    (path / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    assert main(["classify", str(path), "a great film"]) == 2
    line = one_line(capsys)
    assert "pytorch_model.bin: truncated or not a torch archive" in line and "weights_only" not in line


# --- the Python pipelines' arguments

ARGUMENTS = {
    "answer, contexts a list": (lambda m: seq2bert.answer("who", [], model=m["qa"]),
                                "answer: context: expected a string, got list []"),
    "answer, empty context": (lambda m: seq2bert.answer("who", "  ", model=m["qa"]), "answer: context: empty"),
    "answer, no question": (lambda m: seq2bert.answer(None, "john", model=m["qa"]),
                            "answer: question: expected a string, got None"),
    "answer, empty question": (lambda m: seq2bert.answer("", "john", model=m["qa"]), "answer: question: empty"),
    "classify None": (lambda m: seq2bert.classify(None, model=m["sequence"]),
                      "classify: texts: expected a list of strings or (text, pair) tuples, got None"),
    "classify a number": (lambda m: seq2bert.classify(["a film", 3], model=m["sequence"]),
                          "classify: texts[1]: expected a string or a (text, pair) tuple of strings, got int 3"),
    "classify a bad pair": (lambda m: seq2bert.classify([("a film", None)], model=m["sequence"]),
                            "classify: texts[0]: expected a string or a (text, pair) tuple"),
    "tag None": (lambda m: seq2bert.tag(None, model=m["tokens"]), "tag: text (a string, or a list of them): expected"),
    "tag a None item": (lambda m: seq2bert.tag(["john", None], model=m["tokens"]), "tag: text (a string, or a list of them)[1]: expected a string, got None"),
    "embed None": (lambda m: seq2bert.embed(None, model=m["pretrained"]), "embed: texts: expected a list of strings, got None"),
    "embed a string": (lambda m: seq2bert.embed("a film", model=m["pretrained"]), "embed: texts: expected a list of strings, got str 'a film'"),
    "embed bytes": (lambda m: seq2bert.embed([b"a film"], model=m["pretrained"]), "embed: texts[0]: expected a string, got bytes b'a film'"),
    "fill_mask a list": (lambda m: seq2bert.fill_mask(["the [MASK]"], model=m["pretrained"]),
                         "fill_mask: text: expected a string, got list"),
    "word_vectors no word": (lambda m: pipelines.word_vectors(["a film"], None, model=m["pretrained"]),
                             "word_vectors: word: expected a string, got None"),
    "generate None": (lambda m: seq2bert.generate(None, model=m["pretrained"]), "generate: prompts (a string, or a list of them): expected"),
    "generate a number": (lambda m: seq2bert.generate(["once", 7], model=m["pretrained"]), "generate: prompts (a string, or a list of them)[1]: expected a string, got int 7"),
    "translate None": (lambda m: seq2bert.translate(None, model=m["translation"]), "translate: texts (a string, or a list of them): expected"),
    "translate a number": (lambda m: seq2bert.translate(["ein Hund", 1.5], model=m["translation"]), "[1]: expected a string, got float 1.5"),
    "translate, arguments swapped": (lambda m: seq2bert.translate(m["translation"], ["ein Hund"]),
                                     "model: expected a checkpoint directory or a (model, tokenizer) pair, got list"),
    "classify, model None": (lambda m: seq2bert.classify(["a film"], model=None),
                             "model: expected a checkpoint directory or a (model, tokenizer) pair, got None"),
}  # fmt: skip


@pytest.mark.parametrize("call, says", ARGUMENTS.values(), ids=ARGUMENTS.keys())
def test_wrong_arguments_to_the_python_pipelines_are_user_errors(call, says, bert_runs, translation_runs):
    models = {name: str(run) for name, run in bert_runs.items()} | {
        "translation": str(translation_runs["bahdanau"])
    }
    with pytest.raises(UserError) as raised:
        call(models)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_an_empty_list_gives_empty_results(bert_runs, translation_runs, language_models):
    assert seq2bert.classify([], model=str(bert_runs["sequence"])) == []
    assert seq2bert.tag([], model=str(bert_runs["tokens"])) == []
    assert seq2bert.embed([], model=str(bert_runs["pretrained"])).shape == (0, 16)
    assert seq2bert.embed((t for t in ["a film"]), model=str(bert_runs["pretrained"])).shape == (1, 16)
    assert pipelines.word_vectors([], "film", model=str(bert_runs["pretrained"])).shape == (0, 16)
    assert seq2bert.generate([], model=language_models["gpt2"], max_new_tokens=4) == []
    assert seq2bert.translate([], model=str(translation_runs["bahdanau"])) == []
