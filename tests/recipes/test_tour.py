"""`seq2bert tour` at a tiny budget: one row per model whose numbers are those of its run, a length plot and
one attention map per attention model that are real pictures, and a second call that reuses the runs."""

import json

import numpy as np
import pytest
from PIL import Image

from seq2bert.cli import main
from seq2bert.recipes import tour


@pytest.fixture(scope="module")
def small_tour(tmp_path_factory, monkeypatch_module):
    out = tmp_path_factory.mktemp("tour")
    monkeypatch_module.setattr(tour, "SYNTHETIC", (*tour.SYNTHETIC[:1], "data.num_train=300", "data.num_valid=20",
                                                   "data.num_test=40", "data.min_len=3", "data.max_len=24",
                                                   "data.max_tokens=600"))  # fmt: skip
    return out, tour.run_tour(out, budget=0.01, seed=0)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def picture(path):
    image = np.asarray(Image.open(path).convert("L"), dtype=float)
    return image.shape, image.std()


def test_one_row_per_model_from_its_run(small_tour):
    out, result = small_tour
    assert [r["model"] for r in result.rows] == [m.name for m in tour.MODELS]
    for model, row in zip(tour.MODELS, result.rows, strict=True):
        saved = json.loads((out / model.slug / "results.json").read_text())
        assert row["steps"] == saved["steps"] == 20  # 2000 steps × budget 0.01
        assert row["test_bleu"] == saved["test_bleu"] and row["params"] == saved["params"] > 0
    table = tour.format_tour(result)
    assert all(m.name in table for m in tour.MODELS)
    assert all(f"{row['test_bleu']:.2f}" in table for row in result.rows)
    summary = json.loads((out / "tour.json").read_text())
    assert [r["model"] for r in summary["rows"]] == [m.name for m in tour.MODELS]


def test_plots_are_real_pictures(small_tour):
    _, result = small_tour
    shape, spread = picture(result.length_plot)
    assert shape == (400, 650) and spread > 10  # 6.5 × 4 inches at 100 dpi, not blank
    assert set(result.attention_maps) == {m.name for m in tour.MODELS if m.attention}
    for path in result.attention_maps.values():
        shape, spread = picture(path)
        assert min(shape) > 200 and spread > 10


def test_the_cli_prints_the_table_and_reuses_finished_runs(small_tour, capsys):
    out, result = small_tour
    before = {m.slug: (out / m.slug / "results.json").stat().st_mtime_ns for m in tour.MODELS}
    assert main(["tour", "--out", str(out), "--budget", "0.01"]) == 0
    printed = capsys.readouterr().out
    assert "Transformer" in printed and "quality by source length" in printed
    assert {m.slug: (out / m.slug / "results.json").stat().st_mtime_ns for m in tour.MODELS} == before
    assert main(["tour", "--out", str(out), "--budget", "0"]) == 2
    capsys.readouterr()
    assert main(["tour", "--out", str(out), "--budget", "0.02"]) == 2  # not the stale rows of budget 0.01
    err = capsys.readouterr().err
    assert "seq2seq: trained with train.max_steps=20, not 40" in err and err.count("\n") == 1


def test_results_are_reproducible_from_the_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(tour, "SYNTHETIC", (*tour.SYNTHETIC[:1], "data.num_train=200", "data.num_valid=20",
                                            "data.num_test=20", "data.min_len=3", "data.max_len=12",
                                            "data.max_tokens=400"))  # fmt: skip
    monkeypatch.setattr(
        tour, "MODELS", tuple(m for m in tour.MODELS if m.slug in ("bahdanau", "transformer"))
    )
    a, b, other = (tour.run_tour(tmp_path / name, budget=0.005, seed=seed) for name, seed in
                   (("a", 1), ("b", 1), ("c", 2)))  # fmt: skip
    for key in ("valid_perplexity", "test_token_accuracy", "test_bleu", "params"):
        assert [r[key] for r in a.rows] == [r[key] for r in b.rows], key
    assert [r["valid_perplexity"] for r in a.rows] != [r["valid_perplexity"] for r in other.rows]


def test_some_models_with_settings_of_every_run(tmp_path, monkeypatch, capsys):
    """`seq2bert tour --models … --set …`: the comparison of docs/results.md in one line."""
    monkeypatch.setattr(tour, "SYNTHETIC", (*tour.SYNTHETIC[:1], "data.num_train=200", "data.num_valid=20",
                                            "data.num_test=20", "data.min_len=3", "data.max_len=12",
                                            "data.max_tokens=400"))  # fmt: skip
    setting = "train.scheduled_sampling.schedule=inverse_sigmoid"
    args = [
        "tour",
        "--out",
        str(tmp_path),
        "--budget",
        "0.005",
        "--models",
        "seq2seq,bahdanau",
        "--set",
        setting,
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"settings: {setting}" in printed and "Transformer" not in printed
    summary = json.loads((tmp_path / "tour.json").read_text())
    assert [r["model"] for r in summary["rows"]] == ["Seq2Seq (fixed vector)", "Bahdanau attention"]
    assert summary["overrides"] == [setting]
    for slug in ("seq2seq", "bahdanau"):
        run = json.loads((tmp_path / slug / "run.json").read_text())
        assert run["train"]["scheduled_sampling"]["schedule"] == "inverse_sigmoid"
    assert main(args[:-2]) == 2  # the same folder without the setting: not these runs
    assert (
        "trained with train.scheduled_sampling.schedule='inverse_sigmoid', not 'none'"
        in capsys.readouterr().err
    )


def test_hard_attention_is_a_row_beside_soft_when_asked(tmp_path, monkeypatch, capsys):
    """`seq2bert tour --models bahdanau,bahdanau-hard`: Xu et al.'s hard attention, its own row and map."""
    monkeypatch.setattr(tour, "SYNTHETIC", (*tour.SYNTHETIC[:1], "data.num_train=200", "data.num_valid=20",
                                            "data.num_test=20", "data.min_len=3", "data.max_len=12",
                                            "data.max_tokens=400"))  # fmt: skip
    assert "bahdanau-hard" not in [m.slug for m in tour.select_models(None)]  # not in the default tour
    args = ["tour", "--out", str(tmp_path), "--budget", "0.005", "--models", "bahdanau-hard,bahdanau"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "tour.json").read_text())
    assert [r["model"] for r in summary["rows"]] == [
        "Bahdanau attention",
        "Bahdanau attention, hard (Xu et al.)",
    ]
    run = json.loads((tmp_path / "bahdanau-hard" / "run.json").read_text())
    assert run["model"]["attention_type"] == "hard"
    assert len(summary["attention_maps"]) == 2 and (tmp_path / "attention-bahdanau-hard.png").is_file()
