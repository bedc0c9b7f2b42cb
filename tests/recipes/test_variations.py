"""`seq2bert variations`: the rows of Table 3 (A: heads at constant compute, B: smaller d_k, C: model size, D:
dropout and label smoothing, E: learned positions) are trained and tabulated; a second call reuses the
finished rows."""

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


def test_rows_c_to_e_take_the_papers_ratios_to_its_base():
    base = TransformerConfig(
        d_model=256, encoder_layers=3, decoder_layers=3, encoder_ffn_dim=1024, dropout=0.1
    )
    rows = variation_rows(base, ["C", "D", "E"], label_smoothing=0.1)
    names = [r.name for r in rows]
    # N: 1, 2, 4 of 3 (the paper's 2, 4, 8 of 6); d_model and d_ff halved and doubled
    assert names == ["base", "C-N1", "C-N2", "C-N4", "C-d128", "C-d512", "C-ff512", "C-ff2048",
                     "D-drop0", "D-drop0.2", "D-ls0", "D-ls0.2", "E-learned"]  # fmt: skip
    by_name = {r.name: r.overrides for r in rows}
    assert by_name["C-N4"] == ["model.encoder_layers=4", "model.decoder_layers=4"]
    assert by_name["C-d512"] == ["model.d_model=512", "model.d_k=0", "model.d_v=0"]
    assert by_name["D-ls0.2"] == ["train.label_smoothing=0.2"]
    assert by_name["E-learned"] == ["model.position_embedding=learned"]


def test_rows_c_to_e_train_and_tabulate_from_a_comma_list(tmp_path, capsys):
    smoothed = [*TINY, "--set", "train.label_smoothing=0.1"]
    assert main(["variations", *smoothed, "--rows", "D,E", "--out", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    results = {r["name"]: r for r in json.loads((tmp_path / "variations.json").read_text())}
    assert list(results) == ["base", "D-drop0", "D-drop0.2", "D-ls0", "D-ls0.2", "E-learned"]
    assert results["D-drop0.2"]["P_drop"] == 0.2 and results["D-ls0"]["eps_ls"] == 0.0
    assert results["E-learned"]["positions"] == "learned" and results["base"]["positions"] == "sinusoidal"
    # learned positions add a table per side (shared embeddings: the positions are not)
    assert results["E-learned"]["params_M"] > results["base"]["params_M"]
    assert "| (E) learned positions |" in table and "| (D) |" in table


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
