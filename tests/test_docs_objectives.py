"""docs/objectives.py, the table, plot and position diagnosis of "Which pretraining objective pays on a CPU",
on hand-made run directories."""

import importlib.util
import json

import pytest
import torch
from safetensors.torch import save_file

from seq2bert.nn.embeddings import sinusoidal_table
from tests.conftest import REPO


def load():
    spec = importlib.util.spec_from_file_location("objectives", REPO / "docs" / "objectives.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path, record):
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps(record))


@pytest.fixture
def runs(tmp_path):
    write(
        tmp_path / "ltr",
        {"train_seconds": 2700, "steps": 3000, "tokens_per_s": 4400, "valid_perplexity": 86.5},
    )
    (tmp_path / "ltr" / "log.jsonl").write_text("\n".join(json.dumps(
        {"split": "train", "step": step, "train_seconds": 0.9 * step}) for step in (1000, 2000, 3000)))  # fmt: skip
    scores = {"random": (81.65, 81.22, 68.38, 55.78), "ltr": (82.0, 82.04, 71.57, 57.62)}
    for name, (sst2, mrpc_f1, mrpc_acc, conll) in scores.items():
        write(tmp_path / f"ft-{name}-sst2", {"dev_accuracy": sst2})
        write(tmp_path / f"ft-{name}-mrpc", {"dev_f1": mrpc_f1, "dev_accuracy": mrpc_acc})
        write(tmp_path / f"ft-{name}-conll", {"dev_f1": conll})
    write(tmp_path / "ft-ltr@1000-sst2", {"dev_accuracy": 81.0})  # an earlier checkpoint's point
    return tmp_path


def test_the_table_has_a_row_per_finished_run_and_the_plot_its_points(runs, tmp_path):
    objectives = load()
    lines = objectives.table(runs, {}).splitlines()
    assert len(lines) == 4  # header, rule, random initialisation, LTR: the rows not run are left out
    assert lines[2].startswith("| random initialisation | none | 81.65 | 81.22 / 68.38 | 55.78 |")
    assert "| 45.0 min, 3,000 steps; ppl 86.5 | 82.00 | 82.04 / 71.57 | 57.62 |" in lines[3]
    # with its quiet rate the budget is its steps at that rate; the measured minutes said when they differ
    (runs / "rates.txt").write_text("ltr 0.5 steps/s\nltr 1.0 steps/s\nsop 3.35 steps/s\n")
    rates = objectives.read_rates(runs / "rates.txt")
    assert rates == {"ltr": 1.0, "sop": 3.35}  # the last of a name wins
    row = objectives.table(runs, rates).splitlines()[3]
    assert "| 50.0 min (45.0 measured, shared): 3,000 steps at 1.00/s; ppl 86.5 |" in row
    assert (
        "| 45.0 min: 3,000 steps at 1.11/s;" in objectives.table(runs, {"ltr": 3000 / 2700}).splitlines()[3]
    )
    assert objectives.points(runs, "ltr", "ltr", "sst2") == [(15.0, 81.0), (45.0, 82.0)]  # measured minutes
    at_rate = objectives.points(runs, "ltr", "ltr", "sst2", rate=1.0)  # at the quiet rate: steps / rate
    assert at_rate == [(pytest.approx(1000 / 60), 81.0), (50.0, 82.0)]
    objectives.plot(runs, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 10_000


def test_neighbour_cosine_tells_an_ordered_position_table_from_a_random_one(tmp_path):
    objectives = load()
    for name, table in {"ordered": sinusoidal_table(512, 64), "random": torch.randn(512, 64)}.items():
        (tmp_path / name).mkdir()
        save_file(
            {"bert.embeddings.position_embeddings.weight": table}, tmp_path / name / "model.safetensors"
        )
    assert objectives.neighbour_cosine(tmp_path / "ordered") > 0.9
    assert abs(objectives.neighbour_cosine(tmp_path / "random")) < 0.1
