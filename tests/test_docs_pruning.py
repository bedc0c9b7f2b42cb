"""docs/pruning.py: the heads a directory keeps, and the table and plot of a record."""

import json

from tests.conftest import load_script


def test_heads_table_and_plot(tmp_path):
    pruning = load_script("docs/pruning.py")
    (tmp_path / "config.json").write_text(
        json.dumps(
            {"num_hidden_layers": 6, "num_attention_heads": 12, "pruned_heads": {"0": [1, 2], "5": [0]}}
        )
    )
    assert pruning.heads_of(tmp_path) == 72 - 3
    record = {
        "sst2": {
            "heads": {
                "0.0": {"dev": 90.0, "heads": 72, "speedup": 1.0},
                "0.5": {"dev": 85.5, "heads": 36, "speedup": 1.4},
            },
            "sparsity": {"0.0": {"dev": 90.0, "heads": 72}, "0.5": {"dev": 88.25, "heads": 72}},
        }
    }
    lines = pruning.table(record).splitlines()
    assert "| sst2 | 50% | 36 | accuracy 85.50 | 1.40× | accuracy 88.25 |" in lines
    assert "| sst2 | 10% | — | — | — | — |" in lines
    pruning.plot(record, tmp_path / "pruning.png")
    assert (tmp_path / "pruning.png").stat().st_size > 1000
