"""Training curves: a panel per validation metric that changes."""

import json

from seq2bert.viz.curves import changing_metrics, plot_training_curves


def test_a_constant_metric_gets_no_panel_and_the_figure_is_written(tmp_path):
    valid = [
        {
            "split": "valid",
            "step": s,
            "epoch": 0,
            "loss": 5 - s / 100,
            "perplexity": 150 - s,
            "tokens": 130048,
        }
        for s in (10, 20)
    ]
    assert changing_metrics(valid) == ["perplexity"]
    assert changing_metrics(valid[:1]) == [
        "perplexity",
        "tokens",
    ]  # one evaluation: nothing is known to be constant
    log = tmp_path / "log.jsonl"
    train = [{"split": "train", "step": s, "loss": 6 - s / 50, "lr": 1e-3} for s in (5, 10, 15, 20)]
    log.write_text("".join(json.dumps(r) + "\n" for r in train + valid))
    out = plot_training_curves(log, tmp_path / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
