import pytest
import torch

from seq2bert.viz.attention import plot_alignment, plot_bleu_by_length


def test_alignment_plot_is_written_atomically(tmp_path):
    out = plot_alignment(
        ["ein", "Hund"],
        ["a", "dog", "[EOS]"],
        torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]),
        tmp_path / "a.png",
    )
    assert out.stat().st_size > 1000
    assert [p.name for p in tmp_path.iterdir()] == ["a.png"]  # no temporary file left behind


def test_alignment_plot_checks_the_shape(tmp_path):
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        plot_alignment(["ein", "Hund"], ["a", "dog", "[EOS]"], torch.ones(2, 2), tmp_path / "a.png")


def test_bleu_by_length_plot(tmp_path):
    results = {
        "seq2seq": {"1-5": {"bleu_lowercase": 30.0}, "6-10": {"bleu_lowercase": 20.0}},
        "bahdanau": {"1-5": {"bleu_lowercase": 40.0}, "6-10": {"bleu_lowercase": 38.0}},
    }
    assert plot_bleu_by_length(results, tmp_path / "b.png").stat().st_size > 1000


def test_bleu_by_length_plot_with_different_buckets(tmp_path):
    results = {"a": {"1-5": {"bleu_lowercase": 30.0}}, "b": {"6-10": {"bleu_lowercase": 20.0}}}
    assert plot_bleu_by_length(results, tmp_path / "c.png").stat().st_size > 1000
