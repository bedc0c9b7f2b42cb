"""`seq2bert variations`: the rows of Table 3 (A: heads at constant compute, B: smaller d_k) are trained and
tabulated; a second call reuses the finished rows."""

import json

from seq2bert.cli import main
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.recipes.variations import variation_rows

TINY = [
    "--task", "reverse",
    "--set", "data.num_train=200", "--set", "data.num_valid=20", "--set", "data.num_test=20",
    "--set", "data.max_len=6", "--set", "data.num_symbols=6",
    "--set", "model.d_model=16", "--set", "model.encoder_ffn_dim=16", "--set", "model.decoder_ffn_dim=16",
    "--set", "model.encoder_layers=1", "--set", "model.decoder_layers=1",
    "--set", "train.max_steps=3", "--set", "train.eval_every=3",
]  # fmt: skip


def test_rows_follow_the_paper():
    rows = variation_rows(TransformerConfig(d_model=256, encoder_attention_heads=4), ["A", "B"])
    assert [r.name for r in rows] == ["base", "A-h1", "A-h8", "A-h16", "B-dk32", "B-dk16"]
    a16 = rows[3].overrides
    assert "model.encoder_attention_heads=16" in a16 and "model.d_k=0" in a16  # d_k = d_model / h
    assert rows[4].overrides == ["model.d_k=32", "model.d_v=64"]  # d_v stays d_model / h


def test_variations_command_trains_and_tabulates(tmp_path, capsys):
    assert main(["variations", *TINY, "--rows", "A", "B", "--out", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    results = json.loads((tmp_path / "variations.json").read_text())
    assert [r["name"] for r in results] == ["base", "A-h1", "A-h8", "A-h16", "B-dk2", "B-dk1"]
    by_name = {r["name"]: r for r in results}
    assert by_name["A-h8"]["d_k"] == 2 and by_name["B-dk1"]["d_k"] == 1 and by_name["B-dk1"]["d_v"] == 4
    assert by_name["A-h1"]["params_M"] == by_name["A-h16"]["params_M"]  # constant compute, same parameters
    assert by_name["B-dk1"]["params_M"] < by_name["base"]["params_M"]
    assert all(r["steps"] == 3 and r["dev_ppl"] > 1 for r in results)
    assert table.count("\n") == len(results) + 2 and "| (A) | 1 | 16 | 16 | 16 |" in table
    (tmp_path / "base" / "variation.json").write_text(json.dumps({**by_name["base"], "dev_bleu": 99.0}))
    assert main(["variations", *TINY, "--rows", "A", "--out", str(tmp_path)]) == 0
    assert "| 99.0 |" in capsys.readouterr().out  # the finished row was reused, not retrained
    capsys.readouterr()
    changed = [*TINY[:-4], "--set", "train.max_steps=4", "--set", "train.eval_every=4"]
    assert main(["variations", *changed, "--rows", "A", "--out", str(tmp_path)]) == 2  # other settings
    assert "base: trained with train.max_steps=3, not 4" in capsys.readouterr().err
