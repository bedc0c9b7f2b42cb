"""docs/objectives.py, the runs, record, table, plot and position diagnosis of "Which pretraining objective
pays on a CPU", on hand-made run directories."""

import json
from dataclasses import replace

import pytest
import torch
from safetensors.torch import save_file

from seq2bert.nn.embeddings import sinusoidal_table
from tests.conftest import load_script


def load():
    return load_script("docs/objectives.py")


def write(path, record):
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps(record))


@pytest.fixture
def runs(tmp_path):
    runs = tmp_path / "runs"
    write(
        runs / "ltr", {"train_seconds": 2700, "steps": 3000, "tokens_per_s": 4400, "valid_perplexity": 86.5}
    )
    (runs / "ltr" / "log.jsonl").write_text("\n".join(json.dumps(
        {"split": "train", "step": step, "train_seconds": 0.9 * step}) for step in (1000, 2000, 3000)))  # fmt: skip
    scores = {"random": (81.65, 81.22, 68.38, 55.78), "ltr": (82.0, 82.04, 71.57, 57.62)}
    for name, (sst2, mrpc_f1, mrpc_acc, conll) in scores.items():
        write(runs / f"ft-{name}-sst2", {"dev_accuracy": sst2, "dev_loss": 0.4})
        write(runs / f"ft-{name}-mrpc", {"dev_f1": mrpc_f1, "dev_accuracy": mrpc_acc})
        write(runs / f"ft-{name}-conll", {"dev_f1": conll})
    write(runs / "ft-ltr@1000-sst2", {"dev_accuracy": 81.0})  # an earlier checkpoint's point
    write(runs / "span", {"train_seconds": 2000, "steps": 4450})  # pretrained, not fine-tuned: no row yet
    # a row without a quiet rate: its minutes are those its log measured
    write(runs / "knowledge", {"train_seconds": 2000, "steps": 2000, "valid_mlm_accuracy": 20.0})
    (runs / "knowledge" / "log.jsonl").write_text(
        json.dumps({"split": "train", "step": 500, "train_seconds": 480})
    )
    write(runs / "ft-knowledge-sst2", {"dev_accuracy": 83.0})
    write(runs / "ft-knowledge@500-sst2", {"dev_accuracy": 82.0})
    return runs


def test_collect_measures_the_rows_found_and_keeps_the_recorded_others(runs, tmp_path):
    objectives = load()
    # a row without a quiet rate (the knowledge row here, whatever ROWS says): its minutes are its log's
    objectives.ROWS = [replace(r, rate=None) if r.name == "knowledge" else r for r in objectives.ROWS]
    record = tmp_path / "objectives.json"
    kept = {"pretraining": {"steps": 10, "train_seconds": 120.0, "valid_mlm_accuracy": 39.0},
            "finetune": {"sst2": {"dev_accuracy": 83.03}}, "points": {"sst2": [[1.0, 83.03]]}}  # fmt: skip
    record.write_text(json.dumps({"mlm-only": kept, "ltr": {"stale": True}}))
    rows = objectives.collect(runs, record)
    assert json.loads(record.read_text()) == rows
    assert rows["mlm-only"] == kept  # no run of it here: kept as measured
    assert rows["ltr"]["pretraining"] == {"steps": 3000, "train_seconds": 2700, "valid_perplexity": 86.5}
    assert rows["ltr"]["finetune"]["sst2"] == {"dev_accuracy": 82.0}  # the kept figures only
    # minutes at the row's quiet rate (1.08 steps/s), the earlier checkpoint's included
    assert rows["ltr"]["points"]["sst2"] == [
        [round(1000 / 1.08 / 60, 2), 81.0],
        [round(3000 / 1.08 / 60, 2), 82.0],
    ]
    assert rows["knowledge"]["points"]["sst2"] == [
        [8.0, 82.0],
        [33.33, 83.0],
    ]  # no quiet rate: its log's minutes
    assert rows["random"]["pretraining"] is None and rows["random"]["points"]["conll"] == [[0.0, 55.78]]
    assert "span" not in rows

    lines = objectives.table(rows).splitlines()
    assert (
        len(lines) == 6
    )  # header, rule, random initialisation, MLM only, knowledge, LTR: in the order of ROWS
    assert lines[2].startswith("| random initialisation, the vocabulary trained again")
    assert lines[2].endswith("| none | 81.65 | 81.22 / 68.38 | 55.78 |")
    # minutes at the quiet rate, and those measured when they differ by more than one
    assert lines[3].endswith("| 10 steps, 0.0 min (3.72/s, 2.0 measured); MLM acc 39.0 % | 83.03 | – | – |")
    assert lines[4].endswith("| 2,000 steps, 33.3 min (1.00/s); MLM acc 20.0 % | 83.00 | – | – |")
    assert (
        "| 3,000 steps, 46.3 min (1.08/s, 45.0 measured); ppl 86.5 | 82.00 | 82.04 / 71.57 | 57.62 |"
        in lines[5]
    )
    objectives.plot(rows, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 10_000


def test_a_rows_commands_pretrain_it_then_fine_tune_each_task(tmp_path, capsys):
    objectives = load()
    span = objectives.BY_NAME["span"]
    pretrain, *finetunes = objectives.commands(span, tmp_path)
    assert pretrain[1:4] == ["pretrain", "../shared/data/corpus", "--out"] and pretrain[4] == str(
        tmp_path / "span"
    )
    settings = [pretrain[i + 1] for i, a in enumerate(pretrain) if a == "--set"]
    assert f"data.tokenizer={tmp_path}/wp16k-cased/tokenizer.json" in settings
    assert settings[-2:] == ["train.max_steps=4450", "model.model_type=spanbert"]  # the row's settings last
    assert [c[c.index("--task") + 1] for c in finetunes] == ["sst2", "mrpc", "conll2003"]
    assert all(c[c.index("--init") + 1] == "LAST" for c in finetunes)
    # at an earlier step: that checkpoint, and runs named for it
    at = objectives.commands(span, tmp_path, at=3000)[1]
    assert at[at.index("--init") + 1] == str(tmp_path / "span" / "checkpoint-3000")
    assert at[at.index("--out") + 1] == str(tmp_path / "ft-span@3000-sst2")
    # the floor: no pretraining, BERT-mini's architecture with fresh weights
    floor = objectives.commands(objectives.BY_NAME["random"], tmp_path)
    assert len(floor) == 3 and all("--random-init" in c for c in floor)
    # the last checkpoint is the numerically last one
    for step in (500, 4000, 10000):
        (tmp_path / "span" / f"checkpoint-{step}").mkdir(parents=True)
    assert objectives.last_checkpoint(tmp_path / "span").name == "checkpoint-10000"
    objectives.run(span, tmp_path, None, dry=True)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 4 and all(line.startswith("$ ") for line in printed)
    assert f"--init {tmp_path}/span/checkpoint-10000 " in printed[1]


def test_the_bilstm_row_fine_tunes_the_ltr_rows_checkpoint_with_a_bilstm_on_top(tmp_path, capsys):
    objectives = load()
    row = objectives.BY_NAME["ltr-bilstm"]
    finetunes = objectives.commands(row, tmp_path)
    assert len(finetunes) == 3 and all(c[1] == "finetune" and "--random-init" not in c for c in finetunes)
    assert all("bilstm_top.enabled=true" in c for c in finetunes)
    assert not any(
        "bilstm_top.enabled=true" in c for c in objectives.commands(objectives.BY_NAME["ltr"], tmp_path)
    )
    (tmp_path / "ltr" / "checkpoint-3000").mkdir(parents=True)
    objectives.run(row, tmp_path, None, dry=True)
    printed = capsys.readouterr().out.splitlines()
    assert all(f"--init {tmp_path}/ltr/checkpoint-3000 " in line for line in printed)
    assert f"--out {tmp_path}/ft-ltr-bilstm-sst2 " in printed[0]


def test_neighbour_cosine_tells_an_ordered_position_table_from_a_random_one(tmp_path):
    objectives = load()
    for name, table in {"ordered": sinusoidal_table(512, 64), "random": torch.randn(512, 64)}.items():
        (tmp_path / name).mkdir()
        save_file(
            {"bert.embeddings.position_embeddings.weight": table}, tmp_path / name / "model.safetensors"
        )
    assert objectives.neighbour_cosine(tmp_path / "ordered") > 0.9
    assert abs(objectives.neighbour_cosine(tmp_path / "random")) < 0.1


def test_the_record_holds_every_measured_row_with_its_figures():
    objectives = load()
    rows = json.loads(objectives.RECORD.read_text())
    assert set(rows) <= set(objectives.BY_NAME)
    for name, figures in rows.items():
        assert set(figures["finetune"]) == set(objectives.TASKS), name
        assert (figures["pretraining"] is None) == (not objectives.BY_NAME[name].pretraining), name
    objectives.table(rows)  # every recorded row renders
