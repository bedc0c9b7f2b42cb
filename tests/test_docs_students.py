"""docs/students.py, the runs and student table of "Students of all-MiniLM-L6-v2", on hand-made runs."""

import json

import pytest

from tests.conftest import load_script


@pytest.fixture
def students(monkeypatch, tmp_path):
    module = load_script("docs/students.py")
    monkeypatch.setattr(module, "minilm", lambda: tmp_path / "minilm")
    return module


def test_a_tasks_runs_are_the_teacher_then_its_students_then_their_int8_copies(students, tmp_path, capsys):
    teacher, *rest = students.commands("sst2", tmp_path)
    assert teacher[1:3] == ["finetune", "--init"] and teacher[teacher.index("--out") + 1] == str(
        tmp_path / "teacher-sst2"
    )
    assert "train.lr=3e-5" in teacher and "train.bf16=auto" in teacher
    distills, quantizes = rest[:5], rest[5:]
    assert all(
        c[1] == "distill" and c[c.index("--teacher") + 1] == str(tmp_path / "teacher-sst2" / "best")
        for c in distills
    )
    assert [c[c.index("--out") + 1] for c in distills] == [
        str(tmp_path / f"sst2-{s}") for s in ("l3", "l3-none", "tiny4", "tiny4-none", "mobile")
    ]
    assert f"student.init={tmp_path}/tiny4-general/best" in distills[2] and "method=tinybert" in distills[2]
    assert "method=none" in distills[3]  # the same start, without a teacher
    assert "method=mobilebert" in distills[4] and "mobilebert.layer_steps=350" in distills[4]
    assert [c[1] for c in quantizes] == ["quantize"] * 6 and quantizes[0][2] == str(
        tmp_path / "teacher-sst2" / "best"
    )
    assert (
        students.commands("conll", tmp_path)[0][students.commands("conll", tmp_path)[0].index("--task") + 1]
        == "conll2003"
    )
    (general,) = students.commands("general", tmp_path)
    assert "--corpus" in general and "student.hidden_size=256" in general
    # a finished run is not run again
    (tmp_path / "teacher-sst2").mkdir()
    assert not students.done(teacher)
    (tmp_path / "teacher-sst2" / "results.json").write_text("{}")
    assert students.done(teacher)
    students.run("sst2", tmp_path, dry=True, extra=["train.seed=3"], record=tmp_path / "none.json")
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 12  # the teacher, 5 students, 6 int8 copies
    # --set: one more setting for every training command, none for the int8 copies
    assert ["train.seed=3" in line for line in printed] == [True] * 6 + [False] * 6
    # a task's own settings for its students (CoNLL-2003: 6 epochs), not for its teacher
    conll = students.commands("conll", tmp_path)
    assert ["train.max_epochs=6" in c for c in conll[:6]] == [False, True, True, True, True, True]
    assert "train.max_steps=1200" in general  # general distillation: a step budget
    # one student's settings on one task: SST-2's TinyBERT-4 has one epoch of stage 1, the others nothing
    sst2 = students.commands("sst2", tmp_path)
    assert ["tinybert.intermediate_epochs=1" in c for c in sst2[:6]] == [
        False,
        False,
        False,
        True,
        False,
        False,
    ]


def test_collect_keeps_measured_rows_and_the_table_gives_the_share_of_the_teacher(students, tmp_path):
    runs = tmp_path / "runs"
    for name, record in {
        "teacher-sst2": {"dev_accuracy": 90.0, "params": 22_700_000, "dev_loss": 0.3},
        "sst2-l3": {"dev_accuracy": 88.2, "params": 17_400_000, "method": "distilbert"},
    }.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "results.json").write_text(json.dumps(record))
    (runs / "sst2-l3-int8").mkdir()
    (runs / "sst2-l3-int8" / "config.json").write_text("{}")
    (runs / "sst2-l3-int8" / "results.json").write_text(json.dumps({"dev_accuracy": 87.9}))  # scored before
    record = tmp_path / "students.json"
    record.write_text(json.dumps({"conll-l3": {"dev_f1": 85.0, "params": 17_000_000}}))
    rows = students.collect(runs, record)
    assert rows["conll-l3"] == {"dev_f1": 85.0, "params": 17_000_000}  # not found here: kept
    assert rows["sst2-l3"] == {
        "dev_accuracy": 88.2,
        "params": 17_400_000,
        "method": "distilbert",
        "int8": {"dev_accuracy": 87.9},
    }
    assert "dev_loss" in rows["teacher-sst2"] and json.loads(record.read_text()) == rows
    lines = students.table(rows).splitlines()
    assert lines[2].startswith("| teacher-sst2 (sst2 accuracy) | 90.00 | 100.0 | – | 22.7 M |")
    assert lines[3].startswith("| sst2-l3 (sst2 accuracy) | 88.20 | 98.0 | 87.90 | 17.4 M |")
    assert lines[4].startswith("| conll-l3 (conll2003 f1) | 85.00 | – | – | 17.0 M |")  # no teacher recorded


def test_run_skips_what_the_record_keeps_and_the_teacher_only_when_no_student_needs_it(
    students, tmp_path, capsys
):
    record = tmp_path / "students.json"
    kept = {f"sst2-{s}": {"dev_accuracy": 80.0, "int8": {}} for s in ("l3", "l3-none", "tiny4", "tiny4-none")}
    kept["teacher-sst2"] = {"dev_accuracy": 90.0, "int8": {"dev_accuracy": 89.0}}
    record.write_text(json.dumps(kept))
    students.run("sst2", tmp_path, dry=True, extra=[], record=record)
    outs = [line.split("--out ")[1].split()[0] for line in capsys.readouterr().out.splitlines()]
    # the MobileBERT student is new: its teacher runs again (gone with its machine), the others do not
    assert [o.rsplit("/", 1)[1] for o in outs] == ["teacher-sst2", "sst2-mobile", "sst2-mobile-int8"]
