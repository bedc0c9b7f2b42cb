"""Continued pretraining (issue 40, item 4): `seq2bert pretrain FILES --init DIR` continues a checkpoint's own
objective with its own tokenizer — the masked LM of BERT, RoBERTa, ALBERT, DistilBERT and ELECTRA's
discriminator, the causal LM of GPT-2 — and `seq2bert train-lm --init` an LSTM LM; the held-out loss before
and after in results.json; the output read by `finetune --init` and `fill-mask`; the bad inputs refused in
one line."""

import dataclasses
import json
import logging
import math
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models import registry
from seq2bert.recipes.pretrain_data import with_end_of_text
from seq2bert.recipes.pretrain_init import TOKENIZER_FILES
from tests.models.small_configs import small_config

WORDS = "the a cat dog sat ran on under mat tree big small red green saw ate".split()


def sentences(rng, n):
    return [
        " ".join(WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(4, 10))).capitalize() + "."
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    """Twenty documents of four sentences, blank lines between them, and a held-out file of five."""
    root = tmp_path_factory.mktemp("text")
    rng = np.random.default_rng(0)
    (root / "train.txt").write_text("\n\n".join(" ".join(sentences(rng, 4)) for _ in range(20)) + "\n")
    (root / "valid.txt").write_text("\n\n".join(" ".join(sentences(rng, 4)) for _ in range(5)) + "\n")
    return root


def tokenizer_of(family, files):
    """A small tokenizer of the family's kind trained on ``files``."""
    if family.train_tokenizer is not None:  # RoBERTa's byte-level BPE, ALBERT's SentencePiece unigram
        return family.train_tokenizer(files, 300)
    kind = family.tokenizer if family.tokenizer == "bytelevel-bpe" else "wordpiece"
    tok = Tokenizer.train(
        files, kind=kind, vocab_size=300 if kind != "wordpiece" else 200, lowercase=kind == "wordpiece"
    )
    return with_end_of_text(tok) if family.kind == "decoder" else tok


def checkpoint(root, text, model_type, architecture):
    """A tiny checkpoint of ``architecture`` (random weights) with its tokenizer, as a released one is laid out."""
    family = registry.get(model_type)
    tok = tokenizer_of(family, [text / "train.txt"])
    cfg = small_config(family)
    names = {f.name for f in dataclasses.fields(cfg)}
    sizes = {"vocab_size": tok.vocab_size, "pad_token_id": tok.pad_token_id}
    cfg = dataclasses.replace(cfg, **{k: v for k, v in sizes.items() if k in names and v is not None})
    torch.manual_seed(0)
    path = root / f"{model_type}-{architecture}"
    family.make(cfg, architecture).save_pretrained(path, tokenizer=tok)
    return path


SHORT = [
    "--set", "data.max_seq_length=24", "--set", "data.batch_size=4", "--set", "data.valid_fraction=0.2",
    "--set", "train.max_steps=4", "--set", "train.warmup_steps=1", "--set", "train.lr=1e-3",
    "--set", "samples.max_new_tokens=0",
]  # fmt: skip


def run(command, files, init, out, *args):
    """The CLI's exit status for ``seq2bert COMMAND FILES --init INIT --out OUT ARGS…``."""
    return main([command, *map(str, files), "--init", str(init), "--out", str(out), *map(str, args)])


def weights(path):
    return load_file(str(path / "model.safetensors"))


def same_tokenizer_files(source, target):
    names = [n for n in TOKENIZER_FILES if (source / n).is_file()]
    assert names
    for name in names:
        assert (target / name).read_bytes() == (source / name).read_bytes(), name


MLM_TIED = ("mlm.", "word_embeddings.weight = mlm.decoder.weight")  # a new MLM head, its decoder tied
CASES = [  # (model_type, the checkpoint's class, the class continued, the head initialised, the loss metric)
    ("bert", "BertForPreTraining", "BertForPreTraining", None, "valid_nsp_loss"),
    ("roberta", "RobertaForMaskedLM", "RobertaForMaskedLM", None, "valid_mlm_loss"),
    ("albert", "AlbertModel", "AlbertForMaskedLM", MLM_TIED, "valid_mlm_loss"),
    ("distilbert", "DistilBertForMaskedLM", "DistilBertForMaskedLM", None, "valid_mlm_loss"),
    ("electra", "ElectraForPreTraining", "ElectraForMaskedLM", MLM_TIED, "valid_mlm_loss"),
    ("gpt2", "GPT2LMHeadModel", "GPT2LMHeadModel", None, "valid_perplexity"),
    (  # a fine-tuned XLNet continues the permutation LM, its LM head's bias new
        "xlnet",
        "XLNetForSequenceClassification",
        "XLNetLMHeadModel",
        ("lm_loss.bias", "word_embedding.weight = lm_loss.weight"),
        "valid_plm_loss",
    ),
]


@pytest.mark.parametrize("model_type,architecture,continued,new_head,metric", CASES)
def test_pretraining_continues_the_checkpoints_objective_with_its_own_vocabulary(
    text, tmp_path, caplog, model_type, architecture, continued, new_head, metric
):
    source = checkpoint(tmp_path, text, model_type, architecture)
    out = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="seq2bert.recipes.pretrain"):
        assert run("pretrain", [text / "train.txt"], source, out, *SHORT) == 0
    # a directory of the same family, the class of the objective continued, the tokenizer's files as they were
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["model_type"] == model_type and config["architectures"] == [continued]
    for directory in (out / "best", out / "checkpoint-4"):
        same_tokenizer_files(source, directory)
    assert not (out / "tokenizer").exists()  # no vocabulary trained
    # the encoder's weights (a pooler's kept as they were) are the checkpoint's, moved by training
    before, _ = registry.load(source, head="base")
    after, _ = registry.load(out / "checkpoint-4", head="base")
    b, a = before.state_dict(), after.state_dict()
    assert b.keys() == a.keys() and all(b[k].shape == a[k].shape for k in b)
    assert any(not torch.equal(b[k], a[k]) for k in b)
    if (
        "ForPreTraining" not in continued
    ):  # a masked LM has no pooler: the checkpoint's is kept (NSP trains it)
        assert all(torch.equal(b[k], a[k]) for k in b if k.startswith("pooler."))
    # the held-out loss of the checkpoint as given, and at the end
    results = json.loads((out / "results.json").read_text())
    assert results["init"] == str(source.resolve()) and results["steps"] == 4
    for key in ("valid_loss", metric):
        assert math.isfinite(results[key]) and math.isfinite(results[key.replace("valid_", "valid_before_")])
    assert results["valid_before_loss"] != results["valid_loss"]
    initialised = [r.getMessage() for r in caplog.records if "has no" in r.getMessage()]
    assert bool(initialised) == bool(new_head)
    if new_head:  # the LM head is new, its decoder the input embeddings
        assert f"initialised {new_head[0]}" in initialised[0] and new_head[1] in initialised[0]


def test_the_loss_before_is_the_checkpoints_own(text, tmp_path):
    """At lr 1e-12 the weights do not move: the loss measured before the first step equals the one at the
    end, and the continued checkpoint's weights are the source's (a BertForPreTraining: its heads kept)."""
    source = checkpoint(tmp_path, text, "bert", "BertForPreTraining")
    out = tmp_path / "run"
    assert run("pretrain", [text / "train.txt"], source, out, *SHORT, "--set", "train.lr=1e-12") == 0
    results = json.loads((out / "results.json").read_text())
    assert results["valid_before_loss"] == pytest.approx(results["valid_loss"], rel=1e-6)
    assert results["valid_before_mlm_accuracy"] == pytest.approx(results["valid_mlm_accuracy"])
    src, got = weights(source), weights(out / "best")
    assert src.keys() == got.keys()
    for k in src:
        torch.testing.assert_close(got[k], src[k], rtol=0, atol=1e-9)


def test_a_continued_run_resumes_exactly_with_its_loss_before(text, tmp_path):
    source = checkpoint(tmp_path, text, "bert", "BertModel")
    args = [*SHORT, "--set", "train.eval_every=2"]
    assert run("pretrain", [text / "train.txt"], source, tmp_path / "a", *args) == 0
    b = tmp_path / "b"
    assert run("pretrain", [text / "train.txt"], source, b, *args) == 0
    for name in ("checkpoint-4", "best"):  # killed after its step-2 checkpoint
        shutil.rmtree(b / name)
    (b / "results.json").unlink()
    assert run("pretrain", [text / "train.txt", "--resume"], source, b, *args) == 0
    ours, uninterrupted = (json.loads((d / "results.json").read_text()) for d in (b, tmp_path / "a"))
    for key in ("valid_before_loss", "valid_loss", "valid_mlm_accuracy", "steps"):
        assert ours[key] == uninterrupted[key], key
    torch.testing.assert_close(weights(b / "checkpoint-4"), weights(tmp_path / "a" / "checkpoint-4"))


def test_a_continued_bert_lowers_its_held_out_loss_and_fine_tunes(text, tmp_path):
    """A tiny BERT continued on the text for 30 steps (held out: --valid) predicts it better than before, and
    the result starts a fine-tuning run (finetune --init) and answers fill-mask."""
    source = checkpoint(tmp_path, text, "bert", "BertModel")
    out = tmp_path / "run"
    longer = ["--set", "train.max_steps=30", "--set", "data.masking=dynamic", "--set", "train.lr=3e-3"]
    assert (
        run("pretrain", [text / "train.txt", "--valid", text / "valid.txt"], source, out, *SHORT, *longer)
        == 0
    )
    results = json.loads((out / "results.json").read_text())
    assert results["valid_mlm_loss"] < results["valid_before_mlm_loss"] - 0.5
    valid = json.loads((out / "valid-corpus" / "corpus.json").read_text())
    assert valid["documents"] == 5  # the held-out file, all of it
    sst2 = tmp_path / "sst2"
    sst2.mkdir()
    rows = "".join(f"{s}\t{i % 2}\n" for i, s in enumerate(sentences(np.random.default_rng(1), 16)))
    for name in ("train.tsv", "dev.tsv"):
        (sst2 / name).write_text("sentence\tlabel\n" + rows)
    finetune = ["--task", "sst2", "--data", sst2, "--set", "train.max_steps=2"]
    assert run("finetune", finetune, out / "best", tmp_path / "ft") == 0
    assert json.loads((tmp_path / "ft" / "results.json").read_text())["steps"] == 2
    assert main(["fill-mask", str(out / "best"), "the cat [MASK] on the mat ."]) == 0


def test_all_minilm_without_an_mlm_head_gets_one_initialised_and_tied(minilm_dir, text, tmp_path, caplog):
    out = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="seq2bert.recipes.pretrain"):
        args = [*SHORT, "--set", "train.max_steps=2", "--set", "train.lr=1e-4"]
        assert run("pretrain", [text / "train.txt"], minilm_dir, out, *args) == 0
    said = [r.getMessage() for r in caplog.records if "has no masked_lm head" in r.getMessage()]
    assert len(said) == 1 and "(BertModel)" in said[0]
    assert "bert.embeddings.word_embeddings.weight = mlm.decoder.weight" in said[0]
    assert json.loads((out / "best" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    same_tokenizer_files(minilm_dir, out / "best")
    model, _ = registry.load(out / "best", head="masked_lm")
    assert model.mlm.decoder.weight is model.bert.embeddings.word_embeddings.weight
    src, got = weights(minilm_dir), weights(out / "best")  # the pooler a sentence task reads, kept
    assert torch.equal(got["bert.pooler.dense.weight"], src["pooler.dense.weight"])
    results = json.loads((out / "results.json").read_text())
    assert results["valid_before_mlm_loss"] > 0 and math.isfinite(results["valid_mlm_loss"])


def test_a_fine_tuned_classifier_continues_its_encoders_masked_lm(text, tmp_path):
    source = checkpoint(tmp_path, text, "bert", "BertForSequenceClassification")
    out = tmp_path / "run"
    assert run("pretrain", [text / "train.txt"], source, out, *SHORT) == 0
    assert json.loads((out / "best" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]


LM = ["--set", "data.documents=blank_line", "--set", "data.batch_size=2", "--set", "data.bptt=8"]
NEW_LM = ["--set", "data.vocab_size=100", "--set", "model.embedding_dim=16", "--set", "model.hidden_size=16"]


def test_train_lm_continues_an_lstm_language_model(text, tmp_path):
    first, second = tmp_path / "lm", tmp_path / "lm2"
    files = [text / "train.txt", "--valid", text / "valid.txt"]
    assert (
        main(["train-lm", *map(str, files), "--out", str(first), *LM, *NEW_LM, "--set", "train.max_steps=3"])
        == 0
    )
    assert run("train-lm", files, first, second, *LM, "--set", "train.max_steps=3") == 0
    assert (second / "best" / "tokenizer.json").read_bytes() == (
        first / "best" / "tokenizer.json"
    ).read_bytes()
    ours = json.loads((second / "results.json").read_text())
    # the same held-out text: the continued run starts where the first one ended
    assert ours["valid_before_perplexity"] == pytest.approx(
        json.loads((first / "results.json").read_text())["valid_perplexity"], rel=1e-5
    )
    assert ours["valid_perplexity"] != ours["valid_before_perplexity"]
    a, b = weights(first / "best"), weights(second / "checkpoint-3")
    assert a.keys() == b.keys() and any(not torch.equal(a[k], b[k]) for k in a)


def test_the_text_of_a_table_column_and_of_a_conll_file(tmp_path):
    """--text-column: a TSV's named column, each row a document; a CoNLL file's word column, its sentences
    joined and -DOCSTART- between documents; data.documents=line: each line a document."""
    from seq2bert.data.pretraining import prepare_corpus
    from seq2bert.data.text_columns import column_paragraphs

    tsv = tmp_path / "train.tsv"
    tsv.write_text("sentence\tlabel\nhide new secretions \t0\n\nthe end\t1\n")
    assert list(column_paragraphs(tsv, "sentence")) == ["hide new secretions", None, "the end", None]
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text('{"text": "a good film", "label": 1}\n{"text": "a bad one", "label": 0}\n')
    assert list(column_paragraphs(jsonl, "text")) == ["a good film", None, "a bad one", None]
    conll = tmp_path / "train.txt"
    conll.write_text(
        "-DOCSTART- -X- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\nU.S. NNP B-LOC\nArmy NNP O\n\nPeter NNP B-PER\n\n"
        "-DOCSTART- -X- -X- O\n\nBRUSSELS NNP B-LOC\n"
    )
    assert list(column_paragraphs(conll, "0")) == ["EU rejects", "U.S. Army", "Peter", None, "BRUSSELS", None]
    assert list(column_paragraphs(conll, "1")) == ["NNP VBZ", "NNP NNP", "NNP", None, "NNP", None]
    lines = tmp_path / "lines.txt"
    lines.write_text("one line\nanother one\n\nthird\n")
    tok = Tokenizer.train([lines, conll], kind="wordpiece", vocab_size=100, lowercase=True)
    info = prepare_corpus([lines], tok, tmp_path / "c1", documents="line", progress=False)
    assert (info["documents"], info["sentences"]) == (3, 3)
    info = prepare_corpus([conll], tok, tmp_path / "c2", text_column="0", progress=False)
    assert (info["documents"], info["sentences"]) == (2, 4)  # "U.S. Army": one sentence, as the file has it


def test_pretrain_reads_a_tsv_column(text, tmp_path):
    source = checkpoint(tmp_path, text, "bert", "BertForMaskedLM")
    tsv = tmp_path / "train.tsv"
    rows = "".join(f"{s.lower()}\t1\n" for s in sentences(np.random.default_rng(2), 30))
    tsv.write_text("sentence\tlabel\n" + rows)
    out = tmp_path / "run"
    args = ["--text-column", "sentence", *SHORT, "--set", "train.max_steps=1"]
    assert run("pretrain", [tsv], source, out, *args) == 0
    assert json.loads((out / "corpus" / "corpus.json").read_text())["documents"] == 30


@pytest.mark.parametrize(
    "setting,message",
    [
        ("data.vocab_size=100", "data.vocab_size: --init continues the checkpoint with its own tokenizer"),
        ("data.lowercase=true", "data.lowercase: --init continues the checkpoint with its own tokenizer"),
        (
            "data.tokenizer=vocab.txt",
            "data.tokenizer: --init continues the checkpoint with its own tokenizer",
        ),
        ("model.hidden_size=32", "model: --init continues the checkpoint's own model"),
        ("data.sentence_task=nsp", "data.sentence_task: nsp needs the pretraining model's sentence head"),
        ("init.positions=sinusoidal", "init.positions: the positions of an --init checkpoint are its own"),
    ],
)
def test_init_refuses_a_new_vocabulary_or_model_in_one_line(text, tmp_path, capsys, setting, message):
    source = checkpoint(tmp_path, text, "bert", "BertModel")
    out = tmp_path / "run"
    assert run("pretrain", [text / "train.txt"], source, out, *SHORT, "--set", setting) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (out / "corpus").exists()


def test_init_refuses_what_is_not_a_language_model_checkpoint(text, tmp_path, capsys):
    def refused(command, init, message, *args):
        assert run(command, [text / "train.txt"], init, tmp_path / "r", *args) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err, err

    refused("pretrain", tmp_path / "missing", "no such checkpoint or run directory", *SHORT[:2])
    refused("pretrain", text, "not a checkpoint", *SHORT[:2])  # a folder of text
    family = registry.get("transformer")  # a translation model: no language-model objective
    translation = tmp_path / "translation"
    tok = tokenizer_of(registry.get("bert"), [text / "train.txt"])
    family.make(small_config(family)).save_pretrained(translation, tokenizer=tok)
    refused("pretrain", translation, "has no language-model objective to continue", *SHORT[:2])
    lm = tmp_path / "lm"
    short = ["--set", "train.max_steps=1", "--set", "data.valid_fraction=0.2"]
    assert main(["train-lm", str(text / "train.txt"), "--out", str(lm), *LM, *NEW_LM, *short]) == 0
    capsys.readouterr()
    refused("pretrain", lm, "continue it with seq2bert train-lm FILES --init", *SHORT[:2])
    bert = checkpoint(tmp_path, text, "bert", "BertModel")
    refused("train-lm", bert, "not a language model of train-lm (pretrain --init)")
    refused("train-lm", lm, "data.vocab_size: --init continues the checkpoint with its own vocabulary",
            "--set", "data.vocab_size=50")  # fmt: skip
    refused("pretrain", bert, "a CoNLL file's columns are numbered", "--text-column", "text", *SHORT[:2])
    tsv = tmp_path / "train.tsv"
    tsv.write_text("sentence\tlabel\na film\t1\n")
    assert run("pretrain", [tsv, "--text-column", "text"], bert, tmp_path / "r4", *SHORT) == 2
    err = capsys.readouterr().err.strip()
    assert "no column 'text' (given by data.text_column); the file's columns: sentence, label" in err
    assert "\n" not in err


def test_init_takes_a_model_name_from_the_hub_cache(text, tmp_path, monkeypatch):
    """--init by name (models/hub.py): the checkpoint in huggingface_hub's cache, offline; the run records
    the name as given."""
    from huggingface_hub import constants

    from seq2bert.models import hub
    from tests.models.hub_cache import put_in_cache

    source = checkpoint(tmp_path, text, "bert", "BertForMaskedLM")
    cache = tmp_path / "hf" / "hub"
    snapshot = put_in_cache(cache, "seq2bert-tests/tiny-bert", source, "4" * 40)
    for key, value in (("HF_HOME", cache.parent), ("HF_HUB_CACHE", cache), ("HF_HUB_OFFLINE", "1")):
        monkeypatch.setenv(key, str(value))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "_RESOLVED", {})
    out = tmp_path / "run"
    assert run("pretrain", [text / "train.txt"], "seq2bert-tests/tiny-bert", out, *SHORT) == 0
    assert (
        json.loads((out / "best" / "run.json").read_text())["init"]["checkpoint"]
        == "seq2bert-tests/tiny-bert"
    )
    assert json.loads((out / "results.json").read_text())["init"] == str(snapshot)
    same_tokenizer_files(source, out / "best")


def test_an_electra_run_with_its_generator_continues_replaced_token_detection(text, tmp_path):
    """A checkpoint of `seq2bert pretrain`'s ELECTRA keeps its generator (generator/): the pair continues, and
    the held-out loss before is where the first run ended (the same held-out text and replacements)."""
    first, second = tmp_path / "electra", tmp_path / "more"
    small = ["--set", "model.hidden_size=32", "--set", "model.num_hidden_layers=2", "--set", "model.intermediate_size=64",
             "--set", "model.num_attention_heads=2", "--set", "model.embedding_size=16"]  # fmt: skip
    new = ["--out", str(first), "--set", "model.model_type=electra", *small, "--set", "data.vocab_size=120"]
    assert main(["pretrain", str(text / "train.txt"), *new, *SHORT, "--set", "train.max_steps=2"]) == 0
    assert run("pretrain", [text / "train.txt"], first, second, *SHORT) == 0
    ours, before = (json.loads((d / "results.json").read_text()) for d in (second, first))
    assert ours["valid_before_disc_loss"] == pytest.approx(before["valid_disc_loss"], rel=1e-6)
    assert ours["valid_disc_loss"] != ours["valid_before_disc_loss"]
    assert json.loads((second / "best" / "config.json").read_text())["architectures"] == [
        "ElectraForPreTraining"
    ]
    a, b = weights(first / "best" / "generator"), weights(second / "checkpoint-4" / "generator")
    assert a.keys() == b.keys() and any(not torch.equal(a[k], b[k]) for k in a)  # the generator trained too
