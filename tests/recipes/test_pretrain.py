"""`seq2bert pretrain` end to end on a tiny generated corpus: held-out MLM / NSP metrics, checkpoints that
transformers reads, and an exact resume from a checkpoint."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from seq2bert.cli import main
from seq2bert.config import apply_overrides
from seq2bert.data import masking
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.models.bert.pretrained import load_bert
from seq2bert.models.gpt.config import gpt2_mini
from seq2bert.nn.embeddings import sinusoidal_table
from seq2bert.precision import native_bf16
from seq2bert.recipes.pretrain import PretrainConfig, PretrainDataConfig, family_data, masking_config

WORDS = "the a cat dog sat ran on under mat tree big small red green saw ate".split()


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    root = tmp_path_factory.mktemp("books")
    rng = np.random.default_rng(0)
    for b in range(2):
        docs = []
        for _ in range(15):
            sents = [" ".join(WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(4, 10))).capitalize() + "."
                     for _ in range(rng.integers(3, 12))]  # fmt: skip
            docs.append(" ".join(sents))
        (root / f"book{b}.txt").write_text("\n\n".join(docs) + "\n")
    return root


TINY = [
    "--set", "model.hidden_size=32", "--set", "model.num_hidden_layers=2", "--set", "model.num_attention_heads=2",
    "--set", "model.intermediate_size=64", "--set", "data.vocab_size=80", "--set", "data.max_seq_length=32",
    "--set", "data.batch_size=4", "--set", "data.valid_fraction=0.2", "--set", "train.warmup_steps=2",
    "--set", "train.max_steps=6", "--set", "train.eval_every=3", "--set", "train.log_every=1",
    "--set", "train.lr=1e-3",
]  # fmt: skip


def test_pretrain_writes_hugging_face_checkpoints_and_resumes_exactly(books, tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    assert main(["pretrain", str(books), "--out", str(tmp_path / "a"), *TINY]) == 0
    assert "valid MLM acc %" in capsys.readouterr().out
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["steps"] == 6 and 0 <= results["valid_mlm_accuracy"] <= 100
    assert 0 <= results["valid_nsp_accuracy"] <= 100
    valid = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in valid if r["split"] == "valid"] == [3, 6]
    for r in (r for r in valid if r["split"] == "valid"):  # the valid loss is the objective: MLM + NSP
        assert r["nsp_loss"] > 0 and r["loss"] == pytest.approx(r["mlm_loss"] + r["nsp_loss"])
    assert (tmp_path / "a" / "curves.png").is_file()

    # the best checkpoint is a transformers directory with equal outputs
    ours, tok = load_bert(tmp_path / "a" / "best")
    theirs = transformers.BertForPreTraining.from_pretrained(tmp_path / "a" / "best").eval()
    enc = tok.encode_batch(["The cat sat on the mat.", "A dog ran."], padding="longest", return_tensors="pt")
    with torch.no_grad():
        expected = theirs(**dict(enc))
    got = ours(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    torch.testing.assert_close(got.prediction_logits, expected.prediction_logits, rtol=0, atol=1e-5)

    # a run that stopped after its checkpoint at step 3 and resumes ends where the uninterrupted run ended
    b = tmp_path / "b"
    assert main(["pretrain", str(books), "--out", str(b), *TINY]) == 0
    for name in ("checkpoint-6", "best", "results.json"):
        path = b / name
        if path.is_dir():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()
    assert main(["pretrain", "--out", str(b), "--resume"]) == 0  # everything else comes from run.json
    a6, b6 = (
        load_file(tmp_path / "a" / "checkpoint-6" / "model.safetensors"),
        load_file(b / "checkpoint-6" / "model.safetensors"),
    )
    assert a6.keys() == b6.keys()
    for k in a6:
        assert torch.equal(a6[k], b6[k]), k


@pytest.mark.parametrize("model_type", ["bert", "electra"])
def test_init_positions_sinusoidal_starts_the_learned_positions_from_sinusoids(books, tmp_path, model_type):
    out = tmp_path / model_type
    still = [
        "--set",
        "train.lr=1e-9",
        "--set",
        "train.warmup_steps=0",
        "--set",
        f"model.model_type={model_type}",
    ]
    assert (
        main(["pretrain", str(books), "--out", str(out), *TINY, *still, "--set", "init.positions=sinusoidal"])
        == 0
    )
    weights = load_file(out / "best" / "model.safetensors")
    (name,) = [k for k in weights if k.endswith("position_embeddings.weight")]  # ELECTRA's one shared table
    expected = sinusoidal_table(*weights[name].shape) * 0.02 * 2**0.5
    torch.testing.assert_close(weights[name], expected, rtol=0, atol=1e-6)  # lr 1e-9: as it started
    with pytest.raises(ConfigError, match="init.positions: normal or sinusoidal, got 'sine'"):
        apply_overrides(PretrainConfig(), ["init.positions=sine"])
    with pytest.raises(ConfigError, match="GPT2LMHeadModel has no learned position table"):
        apply_overrides(PretrainConfig(), ["init.positions=sinusoidal"]).init.apply(
            registry.FAMILIES["gpt2"].make(gpt2_mini(), "GPT2LMHeadModel"), 0.02
        )


def test_pretrain_needs_text(tmp_path):
    assert main(["pretrain", "--out", str(tmp_path / "x")]) == 2
    assert main(["pretrain", str(tmp_path / "missing"), "--out", str(tmp_path / "y")]) == 2


def test_data_whole_word_masking_and_data_masking_strategy_choose_the_strategy(monkeypatch):
    tok = Tokenizer.train(
        ["unbelievable extraordinary " + " ".join(WORDS)] * 10, kind="wordpiece", vocab_size=60
    )
    assert masking_config(PretrainDataConfig(), tok).strategy == "token"
    old_key = masking_config(PretrainDataConfig(whole_word_masking=True), tok)
    assert old_key.strategy == "whole_word" and old_key.continuation  # the "##" pieces of the vocabulary
    assert masking_config(PretrainDataConfig(masking_strategy="whole_word"), tok).whole_word_masking
    with pytest.raises(ConfigError, match="masking_strategy: expected one of token, whole_word, span, ngram"):
        PretrainDataConfig(masking_strategy="spans")
    monkeypatch.setitem(masking.STRATEGIES, "spans", masking.token_groups)
    assert masking_config(PretrainDataConfig(masking_strategy="spans"), tok).strategy == "spans"
    with pytest.raises(ConfigError, match="whole_word_masking: set, but masking_strategy is 'spans'"):
        PretrainDataConfig(whole_word_masking=True, masking_strategy="spans")


def test_span_ngram_and_knowledge_masking_and_their_parameters_come_from_the_data_section(tmp_path):
    tok = Tokenizer.train(
        ["unbelievable extraordinary " + " ".join(WORDS)] * 10, kind="wordpiece", vocab_size=60
    )
    span = masking_config(PretrainDataConfig(masking_strategy="span", span_p=0.3, span_max_words=5), tok)
    assert (span.strategy, span.span_p, span.span_max_words) == ("span", 0.3, 5)
    assert masking_config(PretrainDataConfig(masking_strategy="ngram", ngram_max=2), tok).ngram_max == 2
    (tmp_path / "entities.txt").write_text("big dog\nred tree\n\n")
    (tmp_path / "phrases.txt").write_text("sat on the mat\n")
    data = PretrainDataConfig(masking_strategy="knowledge", entities=str(tmp_path / "entities.txt"),
                              phrases=str(tmp_path / "phrases.txt"), knowledge_schedule=["word", "entity"],
                              masking="dynamic")  # fmt: skip
    knowledge = masking_config(data, tok)
    assert knowledge.entities == tuple(tuple(tok.ids_batch([e])[0]) for e in ("big dog", "red tree"))
    assert knowledge.phrases == (tuple(tok.ids_batch(["sat on the mat"])[0]),)
    assert (
        knowledge.for_pass(0).knowledge_level == "word" and knowledge.for_pass(4).knowledge_level == "entity"
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(span_p=1.5), r"span_p: must be in \(0, 1\], got 1.5"),
        (dict(ngram_max=0), "span_max_words and ngram_max: must be at least 1"),
        (
            dict(masking_strategy="knowledge", knowledge_level="topic"),
            "knowledge_level: expected one of word",
        ),
        (
            dict(entities="e.txt"),
            "phrases, entities, phrase_ngrams, knowledge_schedule: set, but masking_strategy is 'auto'",
        ),
        (
            dict(masking_strategy="knowledge", knowledge_schedule=["word"], masking="static"),
            "knowledge_schedule: needs masking=dynamic",
        ),
        (
            dict(masking_strategy="span", whole_word_masking=True),
            "whole_word_masking: set, but masking_strategy",
        ),
    ],
)
def test_bad_masking_settings_are_one_line_config_errors(bad, message):
    with pytest.raises(ConfigError, match=message) as e:
        PretrainDataConfig(**bad)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "model_type, expected",
    [
        ("bert", dict(masking_strategy="auto", mask_fraction="auto", sentence_task="auto")),
        ("albert", dict(masking_strategy="ngram")),  # Lan et al. Sect. 4.1
        ("spanbert", dict(masking_strategy="span")),
        ("electra", dict(mask_fraction=0.85, random_fraction=0.0)),  # the released generator input
        ("roberta", dict(sentence_task="full_sentences", masking="dynamic")),
    ],
)
def test_each_family_brings_its_own_data_defaults_for_auto(model_type, expected):
    cfg = apply_overrides(PretrainConfig(), [f"model.model_type={model_type}"])
    data = family_data(cfg.data, registry.family_of(cfg.model).pretraining_data)
    assert {k: getattr(data, k) for k in expected} == expected
    said = apply_overrides(cfg, ["data.masking_strategy=token", "data.mask_fraction=0.8"]).data
    assert family_data(said, registry.family_of(cfg.model).pretraining_data).masking_strategy == "token"


@pytest.mark.parametrize("model_type", ["spanbert", "electra"])
def test_full_sentences_is_refused_where_the_family_reads_one_document(books, tmp_path, capsys, model_type):
    short = [*TINY, "--set", "train.max_steps=1", "--set", f"model.model_type={model_type}",
             "--set", "data.sentence_task=full_sentences"]  # fmt: skip
    assert main(["pretrain", str(books), "--out", str(tmp_path / "r"), *short]) == 2
    err = capsys.readouterr().err.strip()
    assert "data.sentence_task: full_sentences is RoBERTa's packing" in err and "\n" not in err


def test_the_sentence_task_is_a_choice_of_the_data_section():
    assert apply_overrides(PretrainConfig(), ["data.sentence_task=sop"]).data.sentence_task == "sop"
    with pytest.raises(ConfigError, match="sentence_task"):
        apply_overrides(PretrainConfig(), ["data.sentence_task=order"])


@pytest.mark.parametrize("strategy, task", [("span", "sop"), ("ngram", "none"), ("knowledge", "nsp")])
def test_pretraining_with_span_or_ngram_masking_and_sop_or_no_sentence_task(
    books, tmp_path, capsys, strategy, task
):
    short = [*TINY, "--set", "train.max_steps=2", "--set", "train.eval_every=2", "--set", f"data.masking_strategy={strategy}",
             "--set", f"data.sentence_task={task}"]  # fmt: skip
    if strategy == "knowledge":
        short += ["--set", "data.phrase_ngrams=5"]
    assert main(["pretrain", str(books), "--out", str(tmp_path / "r"), *short]) == 0
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["steps"] == 2 and 0 <= results["valid_mlm_accuracy"] <= 100
    if task == "nsp":
        assert 0 <= results["valid_nsp_accuracy"] <= 100
    elif task == "sop":
        assert 0 <= results["valid_sop_accuracy"] <= 100 and "valid_nsp_accuracy" not in results
        assert results["valid_loss"] == pytest.approx(results["valid_mlm_loss"] + results["valid_sop_loss"])
    else:
        assert not any(k.startswith(("valid_nsp", "valid_sop")) for k in results)
        assert results["valid_loss"] == pytest.approx(results["valid_mlm_loss"])


@pytest.mark.slow
@pytest.mark.skipif(
    not native_bf16("cpu"),
    reason="bf16 is emulated on this CPU (no AVX-512 BF16 / AMX): the precision test runs where it is native",
)
def test_pretraining_under_bf16_autocast_reaches_the_fp32_validation_loss(books, tmp_path, capsys):
    """The same run (seed, batches) in fp32 and under bf16 autocast: the held-out MLM + NSP loss after 120
    steps differs by at most 0.05 nats plus 5 % (the tour's test states the same rule for translation)."""
    losses = {}
    for bf16 in ("false", "true"):
        longer = [*TINY, "--set", "train.max_steps=120", "--set", "train.eval_every=120", "--set", "train.lr=3e-3",
                  "--set", f"train.bf16={bf16}"]  # fmt: skip
        assert main(["pretrain", str(books), "--out", str(tmp_path / bf16), *longer]) == 0
        log = [json.loads(line) for line in (tmp_path / bf16 / "log.jsonl").read_text().splitlines()]
        losses[bf16] = [r["loss"] for r in log if r["split"] == "valid"][-1]
    capsys.readouterr()
    assert losses["false"] < 4.0  # it learned something (ln 80 ≈ 4.4 at the start, plus NSP's ln 2)
    assert abs(losses["true"] - losses["false"]) <= 0.05 + 0.05 * losses["false"], losses


def test_ltr_pretraining_trains_bert_left_to_right_and_fine_tuning_reads_it_both_ways(
    books, tmp_path, capsys, caplog
):
    """Devlin et al. (2018), Table 5, "LTR & No NSP": model.is_decoder=true pretrains a BertLMHeadModel on the
    causal LM's blocks (documents ended by the WordPiece vocabulary's [EOS]) — held-out perplexity, samples, a directory transformers
    reads; evaluate-lm reads it as a causal LM; a fine-tuning run from it reads the encoder both ways."""
    import math

    import seq2bert

    transformers = pytest.importorskip("transformers")
    short = [*TINY, "--set", "model.is_decoder=true", "--set", "train.max_steps=2", "--set", "train.eval_every=2",
             "--set", "samples.max_new_tokens=4"]  # fmt: skip
    assert main(["pretrain", str(books), "--out", str(tmp_path / "ltr"), *short]) == 0
    assert "valid ppl" in capsys.readouterr().out
    results = json.loads((tmp_path / "ltr" / "results.json").read_text())
    assert results["valid_perplexity"] == pytest.approx(math.exp(results["valid_loss"]))
    assert "valid_mlm_accuracy" not in results and len(results["samples"]) == 3
    best = tmp_path / "ltr" / "best"
    config, tok = json.loads((best / "config.json").read_text()), Tokenizer.load(best)
    assert config["architectures"] == ["BertLMHeadModel"] and config["is_decoder"] is True
    assert config["eos_token_id"] == tok.eos_token_id == tok.token_to_id("[EOS]")  # a document's end
    ours = seq2bert.from_pretrained(best)
    theirs = transformers.BertLMHeadModel.from_pretrained(best).eval()
    ids = torch.tensor([tok.ids_batch(["The cat sat on the mat."])[0]])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids).logits, theirs(ids).logits, rtol=0, atol=1e-5)

    assert isinstance(seq2bert.generate("The cat", best, max_new_tokens=3), str)  # the text pipeline too
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat. A dog ran under the tree.\n")
    assert main(["evaluate-lm", str(best), str(text), "--bptt", "8"]) == 0

    sst2 = tmp_path / "sst2"
    sst2.mkdir()
    for split in ("train", "dev"):
        rows = [f"{'the big cat sat' if i % 2 else 'a small dog ran'} on the mat\t{i % 2}" for i in range(16)]
        (sst2 / f"{split}.tsv").write_text("\n".join(["sentence\tlabel", *rows]) + "\n")
    with caplog.at_level("INFO"):
        assert main(["finetune", "--task", "sst2", "--init", str(best), "--data", str(sst2), "--out",
                     str(tmp_path / "ft"), "--set", "train.max_steps=2", "--set", "data.batch_size=8"]) == 0  # fmt: skip
    assert "reads it as a bidirectional encoder" in caplog.text
    tuned = json.loads((tmp_path / "ft" / "best" / "config.json").read_text())
    assert tuned["architectures"] == ["BertForSequenceClassification"] and tuned["is_decoder"] is False


@pytest.mark.parametrize(
    "setting, message",
    [
        ("data.sentence_task=nsp", "data.sentence_task: nsp needs a bidirectional model (model.is_decoder)"),
        ("model.model_type=roberta", "model.is_decoder: roberta has no left-to-right LM to pretrain"),
    ],
)
def test_ltr_pretraining_refuses_a_sentence_task_and_a_family_without_the_lm(books, tmp_path, capsys, setting,
                                                                            message):  # fmt: skip
    args = ["--set", setting, "--set", "model.is_decoder=true"]
    assert main(["pretrain", str(books), "--out", str(tmp_path / "x"), *TINY, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_no_training_instance_is_a_one_line_error_naming_the_files(books, tmp_path, capsys, monkeypatch):
    from seq2bert.data import pretraining

    monkeypatch.setattr(pretraining, "instance_table", lambda *a, **kw: np.zeros((0, 5), np.int32))
    assert main(["pretrain", str(books), "--out", str(tmp_path / "x"), *TINY]) == 2  # before: zero steps
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bar
    assert err == f"seq2bert: error: {books}: no training instances of data.sentence_task=nsp in 24 documents"
