"""Issue 40, item 1: the generic tasks over a user's files (tasks/files.py) — text-classification, text-pair,
regression, multi-label, multiple-choice, question-answering — fine-tune a tiny BERT from CSV, TSV, JSON Lines
and Parquet files through the CLI, learn the plain rule of the data, record their labels in run.json, predict
--test with the best checkpoint; bad input is one line, exit 2, nothing in --out."""

import json

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.data.tables import TableWriter
from seq2bert.evaluation.tasks import best_threshold, multi_label_metrics
from seq2bert.models.bert.tasks import BertForSequenceClassification
from seq2bert.models.pretrained import init_task_model, write_hf_files
from seq2bert.models.registry import get
from seq2bert.pipelines import classify
from seq2bert.recipes.scoring import evaluate_checkpoint
from seq2bert.tasks.data import FinetuneDataConfig, read_task, task_examples, with_labels
from seq2bert.tasks.registry import TASKS
from tests.recipes.test_finetune import BAD, FILLER, GOOD, GRADES, PEOPLE, PLACES, init_dir  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def sentence(rng, *extra):
    words = list(rng.choice(FILLER, size=rng.integers(3, 7))) + list(extra)
    rng.shuffle(words)
    return " ".join(words)


def write(path, rows):
    with TableWriter(path) as out:
        out.write_all(rows)
    return path


def finetune(task, init, tmp_path, *extra, out="run"):
    argv = ["finetune", "--task", task, "--init", str(init), "--out", str(tmp_path / out)]
    fast = ["--set", "train.max_epochs=4", "--set", "train.lr=3e-3", "--set", "data.batch_size=16"]
    fast += ["--set", "train.bf16=false", "--set", "train.log_every=50"]
    return main(argv + fast + list(extra))


def sentiment(rng, n, names=("bad", "good")):
    out = []
    for _ in range(n):
        y = int(rng.integers(2))
        out.append({"text": sentence(rng, rng.choice(GOOD if y else BAD)), "label": names[y]})
    return out


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_text_classification_learns_from_a_file_and_predicts_the_test_file(init_dir, tmp_path, ext):  # noqa: F811
    rng = np.random.default_rng(0)
    train = write(tmp_path / f"train.{ext}", sentiment(rng, 200))
    dev = write(tmp_path / f"dev.{ext}", sentiment(rng, 40))
    test = write(tmp_path / f"test.{ext}", [{"text": r["text"]} for r in sentiment(rng, 10)])  # no labels
    argv = ["--train", str(train), "--valid", str(dev), "--test", str(test)]
    assert finetune("text-classification", init_dir, tmp_path, *argv) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_accuracy"] >= 90 and {"dev_f1", "dev_f1_macro", "dev_matthews"} <= set(results)
    run = json.loads((tmp_path / "run" / "best" / "run.json").read_text())
    assert run["data"]["labels"] == ["bad", "good"]  # found in train, sorted, recorded
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["id2label"] == {"0": "bad", "1": "good"}
    lines = [
        json.loads(line) for line in (tmp_path / "run" / "test_predictions.jsonl").read_text().splitlines()
    ]
    assert len(lines) == 10 and {line["prediction"] for line in lines} <= {"bad", "good"}
    assert all(line["label"] is None for line in lines) and not any(k.startswith("test_") for k in results)
    # evaluate RUN reads the run's own files and labels
    assert main(["evaluate", str(tmp_path / "run")]) == 0


def test_regression_and_a_labelled_test_file_scored(init_dir, tmp_path):  # noqa: F811
    rng = np.random.default_rng(1)

    def rows(
        n,
    ):  # the score is the grade of the one graded word in the second text (as test_finetune's STS-B)
        out = []
        for _ in range(n):
            g = int(rng.integers(len(GRADES)))
            out.append({"a": sentence(rng, GOOD[0]), "b": sentence(rng, GRADES[g]), "score": f"{g:.1f}"})
        return out

    train, dev, test = (
        write(tmp_path / f"{s}.tsv", rows(n)) for s, n in (("train", 300), ("dev", 40), ("t", 30))
    )
    argv = ["--train", str(train), "--valid", str(dev), "--test", str(test), "--text-column", "a"]
    argv += [
        "--pair-column",
        "b",
        "--label-column",
        "score",
        "--set",
        "train.max_epochs=20",
        "--set",
        "train.lr=2e-3",
    ]
    assert finetune("regression", init_dir, tmp_path, *argv) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_pearson"] > 80 and results["test_pearson"] > 80 and "test_spearman" in results


def test_multi_label_trains_with_bce_tunes_its_threshold_and_keeps_it(init_dir, tmp_path):  # noqa: F811
    rng = np.random.default_rng(2)
    # one word of four groups, each with its set of labels (a tiny random BERT learns one word a text; two
    # independent words a text it does not: the first learned saturates its pooler, tanh, for the other)
    groups = [(GOOD, ["good"]), (PLACES, ["good", "place"]), (PEOPLE, ["place"]), (BAD, [])]

    def rows(n):
        out = []
        for _ in range(n):
            words, labels = groups[int(rng.integers(len(groups)))]
            out.append({"text": sentence(rng, rng.choice(words)), "topics": "|".join(labels)})
        return out

    train, dev = write(tmp_path / "train.csv", rows(240)), write(tmp_path / "dev.csv", rows(40))
    argv = ["--train", str(train), "--valid", str(dev), "--label-column", "topics", "--label-separator", "|"]
    assert finetune("multi-label", init_dir, tmp_path, *argv, "--set", "train.max_epochs=6") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_micro_f1"] > 90 and "dev_macro_f1" in results
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification"
    assert config["multi_label_threshold"] == results["dev_threshold"]
    line = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    assert set(line["scores"]) == {"good", "place"} and set(line["prediction"]) <= {"good", "place"}
    # the pipeline chooses by σ and the threshold kept: a place is good and a place, a bad word neither
    chosen = classify(
        [f"the film in {PLACES[0]}", f"the {BAD[0]} film", f"{GOOD[1]} film"], str(tmp_path / "run")
    )
    assert [sorted(c["label"] for c in labels) for labels in chosen] == [["good", "place"], [], ["good"]]
    every = classify("a film", str(tmp_path / "run"), top_k=None)
    assert sorted(c["label"] for c in every) == ["good", "place"] and all(0 < c["score"] < 1 for c in every)
    row = evaluate_checkpoint(tmp_path / "run")  # the threshold kept: the same scores
    assert row["dev_micro_f1"] == pytest.approx(results["dev_micro_f1"])
    assert row["dev_threshold"] == results["dev_threshold"]


def test_the_multi_label_loss_is_transformers_bce_with_logits(init_dir):  # noqa: F811
    """problem_type multi_label_classification: our head's loss is transformers' on the same weights."""
    transformers = pytest.importorskip("transformers")
    id2label = {0: "a", 1: "b", 2: "c"}
    ours, _, _ = init_task_model(
        get("bert"), init_dir, "BertForSequenceClassification", id2label=id2label,
        problem_type="multi_label_classification",
    )  # fmt: skip
    assert isinstance(ours, BertForSequenceClassification)
    folder = init_dir.parent / "multi"
    folder.mkdir(exist_ok=True)
    write_hf_files(get("bert"), ours, folder)
    theirs = transformers.BertForSequenceClassification.from_pretrained(folder).eval()
    assert theirs.config.problem_type == "multi_label_classification"
    ours.eval()
    ids = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 14, 3, 0]])
    mask = (ids != 0).long()
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    with torch.no_grad():
        a, b = ours(ids, mask, labels=labels), theirs(input_ids=ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(a.loss, b.loss, atol=1e-5, rtol=0)
    expected = torch.nn.functional.binary_cross_entropy(torch.sigmoid(b.logits), labels)  # −mean[y log σ + …]
    torch.testing.assert_close(a.loss, expected, atol=1e-5, rtol=0)


def test_multiple_choice_from_columns_with_the_answer_by_index_or_text(init_dir, tmp_path):  # noqa: F811
    rng = np.random.default_rng(3)

    def rows(n, by_text):
        out = []
        for _ in range(n):
            right = int(rng.integers(3))
            choices = [rng.choice(GOOD) if i == right else rng.choice(BAD) for i in range(3)]
            answer = choices[right] if by_text else right
            out.append(
                {
                    "question": sentence(rng),
                    "a": choices[0],
                    "b": choices[1],
                    "c": choices[2],
                    "answer": answer,
                }
            )
        return out

    train, dev = (
        write(tmp_path / "train.jsonl", rows(200, False)),
        write(tmp_path / "dev.csv", rows(40, True)),
    )
    argv = [
        "--train",
        str(train),
        "--valid",
        str(dev),
        "--text-column",
        "question",
        "--choice-columns",
        "a,b,c",
    ]
    assert finetune("multiple-choice", init_dir, tmp_path, *argv, "--label-column", "answer") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_accuracy"] >= 90


def squad(path, rng, n, unanswerable=False):
    paragraphs = []
    for i in range(n):
        person, place = rng.choice(PEOPLE), rng.choice(PLACES)
        context = f"{sentence(rng)} {person} lives in {place} . {sentence(rng)}"
        answer = {"text": place, "answer_start": context.index(f"in {place}") + 3}
        qas = [{"id": f"q{i}", "question": f"what {person} ?", "answers": [answer], "is_impossible": False}]
        if unanswerable and i % 3 == 0:
            qas[0].update(answers=[], is_impossible=True, question="what answer ?")
        paragraphs.append({"context": context, "qas": qas})
    path.write_text(json.dumps({"version": "x", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return path


def test_question_answering_reads_squad_json_of_any_name_and_unanswerable_questions(tmp_path):
    rng = np.random.default_rng(4)
    train, dev = (
        squad(tmp_path / "mine.json", rng, 12),
        squad(tmp_path / "other.json", rng, 9, unanswerable=True),
    )
    data = FinetuneDataConfig(task="question-answering", train=str(train), valid=str(dev))
    train_examples, dev_examples = task_examples(data, 0)
    assert len(train_examples) == 12 and sum(e.is_impossible for e in dev_examples) == 3
    task = TASKS["question-answering"]
    assert task.head == "qa" and task.main_metric == "f1"
    perfect = [a.answers[0].text if a.answers else "" for a in dev_examples]
    scores = task.metrics(dev_examples, perfect)
    assert scores["f1"] == 100 and scores["NoAns_total"] == 3  # v2.0 scoring: the file has unanswerable ones


def test_question_answering_fine_tunes(init_dir, tmp_path):  # noqa: F811
    rng = np.random.default_rng(5)
    train, dev = squad(tmp_path / "a.json", rng, 150), squad(tmp_path / "b.json", rng, 20)
    argv = [
        "--train",
        str(train),
        "--valid",
        str(dev),
        "--set",
        "data.max_seq_length=64",
        "--set",
        "data.doc_stride=32",
    ]
    assert finetune("question-answering", init_dir, tmp_path, *argv) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert {"dev_exact_match", "dev_f1"} <= set(results)


def test_labels_are_sorted_numerically_when_integers_and_given_labels_keep_their_order(tmp_path):
    train = write(tmp_path / "t.csv", [{"text": "a b", "label": str(y)} for y in (10, 2, 1, 2)])
    data = FinetuneDataConfig(task="text-classification", train=str(train), valid=str(train))
    assert with_labels(data).labels == ["1", "2", "10"]
    given = FinetuneDataConfig(
        task="text-classification", train=str(train), valid=str(train), labels=["10", "2", "1"]
    )
    assert [e.label for e in read_task(given, ("train",))["train"]] == [0, 1, 2, 1]
    assert TASKS["text-classification"].id2label([], with_labels(given)) == {0: "10", 1: "2", 2: "1"}


def test_the_threshold_is_the_one_maximising_micro_f1():
    rng = np.random.default_rng(6)
    gold = rng.integers(0, 2, size=(50, 4))
    probs = np.clip(gold * 0.3 + rng.random((50, 4)) * 0.6, 0, 1)
    t = best_threshold(gold, probs)
    f1 = {
        s: multi_label_metrics(gold, (probs >= s).astype(int))["micro_f1"] for s in np.arange(0.01, 1.0, 0.01)
    }
    assert multi_label_metrics(gold, (probs >= t).astype(int))["micro_f1"] == pytest.approx(max(f1.values()))


def test_generic_binary_f1_is_of_the_second_label_and_macro_for_more():
    task = TASKS["text-classification"]
    ex = [type("E", (), {"label": y})() for y in (0, 1, 1, 0)]
    assert task.metrics(ex, [0, 1, 0, 0])["f1"] == pytest.approx(100 * 2 / 3)  # P = 1, R = 1/2
    ex3 = [type("E", (), {"label": y})() for y in (0, 1, 2, 2)]
    scores = task.metrics(ex3, [0, 1, 2, 0])
    assert scores["f1"] == scores["f1_macro"] == pytest.approx(100 * (2 / 3 + 1 + 2 / 3) / 3)


def sequence_families():
    from seq2bert.models.registry import FAMILIES

    return [t for t, f in FAMILIES.items() if "sequence" in f.heads]


@pytest.mark.parametrize("model_type", sequence_families())
def test_every_sequence_head_trains_multi_label_with_bce_on_its_logits(model_type):
    """problem_type multi_label_classification: L = −mean_k [y_k log σ(z_k) + (1 − y_k) log(1 − σ(z_k))] of the
    head's own logits, for every family with a sequence head."""
    from dataclasses import replace

    from tests.models.small_configs import small_config

    family = get(model_type)
    config = replace(
        small_config(family), id2label={0: "a", 1: "b", 2: "c"}, problem_type="multi_label_classification"
    )
    if getattr(config, "pad_token_id", 0) is None:  # GPT's: the last real token of each row is found by it
        config = replace(config, pad_token_id=0)
    torch.manual_seed(0)
    model = family.make(config, family.architecture_for("sequence")).eval()
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels)
    z = out.logits.float()
    expected = -(labels * torch.log(torch.sigmoid(z)) + (1 - labels) * torch.log(1 - torch.sigmoid(z))).mean()
    torch.testing.assert_close(out.loss, expected, atol=1e-6, rtol=1e-5)
