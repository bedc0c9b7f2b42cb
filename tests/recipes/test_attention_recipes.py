"""The translation recipe with every encoder-decoder: training, beam-search evaluation, BLEU by length,
alignments, and the evaluate / translate / align / compare commands."""

import json
import subprocess
import sys

import pytest
import torch

from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.models.registry import TRANSLATION_FAMILIES
from seq2bert.recipes.translation import (
    BEAM5,
    GREEDY,
    Decoding,
    TranslationConfig,
    align,
    evaluate,
    load,
    load_pairs,
    train,
    translate,
)

MODELS = {f.model_type: (f.config_class, f.architectures[f.base_architecture]) for f in TRANSLATION_FAMILIES}

TINY = [
    "data.task=reverse",
    "data.num_train=300",
    "data.num_valid=40",
    "data.num_test=40",
    "data.min_len=2",
    "data.max_len=5",
    "data.num_symbols=8",
    "data.max_tokens=200",
    "model.dropout=0.0",
    "train.lr=3e-3",
    "train.max_steps=12",
    "train.eval_every=6",
    "train.log_every=6",
]


SIZES = {
    "transformer": ["model.d_model=16", "model.encoder_ffn_dim=24", "model.decoder_ffn_dim=24",
                    "model.encoder_layers=1", "model.decoder_layers=1"],
}  # fmt: skip
RECURRENT_SIZE = ["model.embedding_dim=16", "model.hidden_size=24"]


def tiny_config(model_type: str, *extra: str) -> TranslationConfig:
    size = SIZES.get(model_type, RECURRENT_SIZE)
    return C.build(TranslationConfig, overrides=[f"model.model_type={model_type}", *TINY, *size, *extra])


@pytest.mark.parametrize("model_type", list(MODELS))
def test_every_model_trains_and_reports_greedy_beam_and_length_buckets(model_type, tmp_path):
    cfg = tiny_config(model_type)
    assert cfg.model.model_type == model_type
    row = train(cfg, tmp_path / model_type, progress_bar=False)
    assert row["model"].startswith(model_type)
    saved = json.loads((tmp_path / model_type / "results.json").read_text())
    for key in ("test_bleu", "test_bleu_lowercase", "test_bleu_beam5", "test_bleu_lowercase_beam5"):
        assert 0.0 <= saved[key] <= 100.0
    buckets = saved["test_bleu_by_length"]
    assert list(buckets) == ["1-5"]  # sources of 2–5 words
    assert buckets["1-5"]["sentences"] == 40
    assert buckets["1-5"]["bleu"] == pytest.approx(saved["test_bleu"])
    model, _, run = load(tmp_path / model_type)
    assert run.model.model_type == model_type and type(model) is MODELS[model_type][1]


@pytest.fixture(scope="module")
def bahdanau_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "bahdanau"
    train(tiny_config("bahdanau", "train.max_steps=150", "train.lr=1e-2"), out, progress_bar=False)
    return out


def test_beam_one_is_greedy_and_beam_five_differs_only_in_search(bahdanau_run):
    loaded = load(bahdanau_run)
    pairs = load_pairs(loaded[2].data)["test"]
    greedy = evaluate(loaded, pairs)
    beam1 = evaluate(loaded, pairs, decoding=Decoding(num_beams=1, length_penalty=0.0))
    beam5 = evaluate(loaded, pairs, decoding=BEAM5)
    for key in ("bleu", "exact_match", "token_accuracy"):
        assert beam1[key] == greedy[key]
    assert beam5["perplexity"] == pytest.approx(greedy["perplexity"])  # teacher forcing does not search
    texts = [s for s, _ in pairs]
    assert translate(loaded[0], texts, tokenizer=loaded[1]) == translate(
        loaded[0], texts, tokenizer=loaded[1], decoding=GREEDY
    )
    assert len(translate(loaded[0], texts, tokenizer=loaded[1], decoding=BEAM5)) == len(texts)


def test_alignment_has_one_distribution_per_target_token(bahdanau_run):
    a = align(bahdanau_run, "s1 s2 s3 s4")
    assert a.weights.shape == (len(a.target_tokens), len(a.source_tokens))
    assert a.source_tokens == ["s1", "s2", "s3", "s4"]
    assert a.target_tokens[-1] == "[EOS]"
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(len(a.target_tokens)))
    assert (
        a.translation == translate(bahdanau_run, ["s1 s2 s3 s4"], bf16=False)[0]
    )  # align: the model as given


def test_evaluate_translate_align_compare_commands(bahdanau_run, tmp_path, capsys):
    assert main(["evaluate", str(bahdanau_run), "--beam", "5", "--by-length"]) == 0
    out = capsys.readouterr().out
    assert "(beam 5, float32)" in out and "source words" in out and "1-5" in out
    assert main(["translate", str(bahdanau_run), "--beam", "3", "s1 s2 s3"]) == 0
    assert capsys.readouterr().out.strip() == translate(bahdanau_run, ["s1 s2 s3"], decoding=Decoding(3))[0]
    png = tmp_path / "align.png"
    assert main(["align", str(bahdanau_run), "s1 s2 s3", "--out", str(png)]) == 0
    assert png.stat().st_size > 1000
    plot = tmp_path / "lengths.png"
    assert main(["compare", str(bahdanau_run), "--out", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "bahdanau" in out and "test BLEU beam 5" in out
    assert plot.stat().st_size > 1000


def one_line_error(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "seq2bert.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.strip()


def test_command_errors_are_one_line(bahdanau_run, tmp_path):
    assert "--beam" in one_line_error("translate", str(bahdanau_run), "--beam", "0", "s1")
    assert "results.json" in one_line_error("compare", str(tmp_path))
    seq2seq = tmp_path / "s2s"
    train(tiny_config("seq2seq", "train.max_steps=2"), seq2seq, progress_bar=False)
    assert "no attention" in one_line_error("align", str(seq2seq), "s1 s2", "--out", str(tmp_path / "a.png"))


def test_rescore_rebuilds_the_results_row(bahdanau_run, capsys):
    path = bahdanau_run / "results.json"
    before = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in before.items() if not k.startswith("test_")}))
    assert main(["evaluate", str(bahdanau_run), "--rescore"]) == 0
    after = json.loads(path.read_text())
    for key in ("test_bleu", "test_bleu_beam5", "test_exact_match", "valid_perplexity"):
        assert after[key] == pytest.approx(before[key]), key
    assert after["test_bleu_by_length"] == before["test_bleu_by_length"]
    assert after["train_seconds"] == before["train_seconds"]  # training columns are kept
    assert "test BLEU beam 5" in capsys.readouterr().out


def test_top_level_translate_with_beams(bahdanau_run):
    import seq2bert

    texts = ["s1 s2 s3", "s4 s5"]
    assert seq2bert.translate(texts, model=bahdanau_run, num_beams=1) == translate(bahdanau_run, texts)
    assert seq2bert.translate(texts, model=bahdanau_run, num_beams=4) == translate(
        bahdanau_run, texts, decoding=Decoding(num_beams=4)
    )


def test_rescore_needs_the_run_directory_and_no_other_options(bahdanau_run):
    assert "run directory" in one_line_error("evaluate", str(bahdanau_run / "best"), "--rescore")
    assert "--rescore" in one_line_error("evaluate", str(bahdanau_run), "--rescore", "--beam", "5")


def test_alignment_cut_at_the_maximum_length_has_no_eos(bahdanau_run):
    full = align(bahdanau_run, "s1 s2 s3 s4")
    n = len(full.target_tokens) - 1  # the translation's tokens before [EOS]
    assert n >= 1, full  # the fixture's model says something
    cut = align(bahdanau_run, "s1 s2 s3 s4", decoding=Decoding(max_len_a=0.0, max_len_b=n))
    assert cut.target_tokens == full.target_tokens[:-1]  # n tokens, [EOS] never generated
    torch.testing.assert_close(cut.weights, full.weights[:-1])
