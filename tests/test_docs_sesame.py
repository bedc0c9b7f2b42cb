"""docs/sesame.py, the runs, record and table of "SesameBERT" in docs/results.md, on hand-made run directories."""

import json
import statistics

from tests.conftest import load_script


def test_the_commands_the_record_and_the_table(tmp_path):
    sesame = load_script("docs/sesame.py")
    runs = tmp_path / "runs"
    cmd = sesame.command(runs, "rte", "sesame", 2)
    assert cmd[1:3] == ["finetune", "--task"] and cmd[cmd.index("--out") + 1] == str(
        runs / "rte-sesame-seed2"
    )
    assert "sesame.gaussian_blur=true" in cmd and "train.seed=2" in cmd
    assert "sesame.gaussian_blur=true" not in sesame.command(runs, "rte", "bert", 2)
    rte = {("bert", 0): 60.0, ("bert", 1): 62.0, ("sesame", 0): 63.0}
    for (arm, seed), accuracy in rte.items():
        out = sesame.run_dir(runs, "rte", arm, seed)
        out.mkdir(parents=True)
        (out / "results.json").write_text(
            json.dumps({"dev_accuracy": accuracy, "train_seconds": 120, "best_step": 7})
        )
    (sesame.run_dir(runs, "rte", "sesame", 1)).mkdir()  # cut short: no figures yet
    record = tmp_path / "sesame.json"
    rows = sesame.collect(runs, record)
    assert rows == json.loads(record.read_text()) and len(rows) == 3
    assert rows["rte-bert-seed1"] == {"task": "rte", "arm": "bert", "seed": 1, "accuracy": 62.0,
                                      "train_minutes": 2.0, "best_step": 7}  # fmt: skip
    line = next(line for line in sesame.table(rows).splitlines() if line.startswith("| RTE"))
    assert f"61.00 ± {statistics.stdev([60.0, 62.0]):.2f} (60.00, 62.00)" in line
    assert "| 63.00 (63.00) |" in line and line.endswith("+2.00 |")
    assert "| MRPC | f1 | — | — | — |" in sesame.table(rows)


def test_run_skips_the_cells_the_record_keeps(tmp_path, capsys):
    sesame = load_script("docs/sesame.py")
    record = tmp_path / "sesame.json"
    record.write_text(json.dumps({"rte-bert-seed0": {"task": "rte", "arm": "bert", "seed": 0}}))
    sesame.run(tmp_path / "runs", ["rte"], [0], dry=True, record=record)
    printed = capsys.readouterr().out
    assert "rte-sesame-seed0" in printed and "rte-bert-seed0" not in printed
