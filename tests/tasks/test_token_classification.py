"""`seq2bert finetune --task token-classification` over a user's files (issue 40, item 1): CoNLL columns with
the tag in any column, or JSON Lines; any label set; the tag scheme detected or given and every file checked
against it; scores in the scheme (entity F1, or token accuracy for tags of no scheme); --test predicted by
the best checkpoint; every bad input one line, exit 2, nothing written."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.evaluation.tasks import tagging_metrics
from seq2bert.recipes.scoring import evaluate_checkpoint
from seq2bert.tasks.data import FinetuneDataConfig, read_task
from seq2bert.tasks.registry import get
from tests.recipes import test_finetune
from tests.recipes.test_finetune import FILLER, PEOPLE, PLACES

init_dir = test_finetune.init_dir  # the fixture: a tiny BERT with a vocabulary of these words

POS = {w: ("DT", "IN", "VBZ")[i % 3] for i, w in enumerate(FILLER)}
TASK = "token-classification"


def tagged(rng, n: int) -> list[list[tuple[str, str, str]]]:
    """Sentences of (word, POS, NER IOB2): filler words, a place (B-LOC), a person (B-PER I-PER)."""
    out = []
    for _ in range(n):
        words = [(w, POS[w], "O") for w in rng.choice(FILLER, size=rng.integers(2, 5))]
        words.insert(int(rng.integers(len(words) + 1)), (str(rng.choice(PLACES)), "NNP", "B-LOC"))
        at = int(rng.integers(len(words) + 1))
        words[at:at] = [(str(rng.choice(PEOPLE)), "NNP", "B-PER"), ("smith", "NNP", "I-PER")]
        out.append(words)
    return out


def conll(path: Path, sentences, columns=(0, 1, 2)) -> Path:
    """A CoNLL file of the sentences' columns in the order given, -DOCSTART- first."""
    lines = ["-DOCSTART- -X- -X-"[: 0 if len(columns) < 3 else None] or "-DOCSTART- O", ""]
    for s in sentences:
        lines += [" ".join(token[c] for c in columns) for token in s] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path


def files(tmp_path: Path, seed: int = 0) -> dict[str, Path]:
    rng = np.random.default_rng(seed)
    return {
        split: conll(tmp_path / f"{split}.txt", tagged(rng, n))
        for split, n in (("train", 60), ("valid", 12), ("test", 8))
    }


def finetune(init: Path, out: Path, *flags) -> int:
    steps = ["--set", "train.max_steps=4", "--set", "train.eval_every=2", "--set", "data.batch_size=16"]
    return main(
        ["finetune", "--task", TASK, "--init", str(init), "--out", str(out), *steps, *map(str, flags)]
    )


def test_the_task_is_a_token_tagging_record_over_your_files():
    task = get(TASK)
    assert task.user_files and task.head == "tokens" and task.max_seq_length == 256
    assert task.decode is get("conll2003").decode and task.encode is get("conll2003").encode  # the same shape


def test_ner_from_your_files_with_a_test_file(init_dir, tmp_path, capsys):
    f = files(tmp_path)
    out = tmp_path / "run"
    assert finetune(init_dir, out, "--train", f["train"], "--valid", f["valid"], "--test", f["test"]) == 0
    results = json.loads((out / "results.json").read_text())
    # IOB2 detected: entity F1, strict, with conlleval's beside it; token accuracy always
    assert {"dev_f1", "dev_f1_conlleval", "dev_accuracy", "dev_f1_PER", "test_f1", "test_accuracy"} <= set(
        results
    )
    config = json.loads((out / "best" / "config.json").read_text())
    assert list(config["id2label"].values()) == ["O", "B-LOC", "B-PER", "I-PER"]  # label_list's order
    lines = [json.loads(line) for line in (out / "test_predictions.jsonl").read_text().splitlines()]
    gold = read_task(
        FinetuneDataConfig(task=TASK, train=str(f["train"]), valid=str(f["valid"]), test=str(f["test"]))
    )
    assert [(x["id"], x["label"]) for x in lines] == [(e.id, e.tags) for e in gold["test"]]
    assert all(
        len(x["prediction"]) == len(x["label"]) and set(x["prediction"]) <= set(config["id2label"].values())
        for x in lines
    )
    scores = tagging_metrics([x["label"] for x in lines], [x["prediction"] for x in lines], "IOB2")
    assert {f"test_{k}": v for k, v in scores.items()} == {
        k: v for k, v in results.items() if k[:5] == "test_"
    }
    assert results["best_step"] == best_step(out, "f1")
    # `seq2bert evaluate` of the run reads its files and scheme again from run.json
    assert {"dev_f1", "dev_f1_conlleval", "dev_accuracy"} <= set(evaluate_checkpoint(out))


def best_step(out: Path, metric: str) -> int:
    """The step of the first best evaluation by ``metric`` (each evaluation at steps 2 and 4 scores it)."""
    evals = [
        r for r in map(json.loads, (out / "log.jsonl").read_text().splitlines()) if r["split"] == "valid"
    ]
    assert [r["step"] for r in evals] == [2, 4] and all(metric in r for r in evals)
    return max(evals, key=lambda r: (r[metric], -r["step"]))["step"]


def test_pos_tags_of_column_1_are_scored_by_token_accuracy(init_dir, tmp_path):
    f = files(tmp_path)
    out = tmp_path / "pos"
    assert finetune(init_dir, out, "--train", f["train"], "--valid", f["valid"], "--label-column", "1") == 0
    results = json.loads((out / "results.json").read_text())
    assert "dev_accuracy" in results and not any(k.startswith("dev_f1") for k in results)
    assert results["best_step"] == best_step(out, "accuracy")  # the main metric: token accuracy
    config = json.loads((out / "best" / "config.json").read_text())
    assert list(config["id2label"].values()) == ["DT", "IN", "NNP", "VBZ"]  # sorted: no O, no entity types
    data = FinetuneDataConfig(task=TASK, train=str(f["train"]), valid=str(f["valid"]), label_column="1")
    assert get(TASK).main_metric_for(data) == "accuracy"
    assert get(TASK).main_metric_for(FinetuneDataConfig(task=TASK, train=str(f["train"]))) == "f1"
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    right = sum(p == g for x in predictions for p, g in zip(x["prediction"], x["label"], strict=True))
    assert results["dev_accuracy"] == pytest.approx(100 * right / sum(len(x["label"]) for x in predictions))


def test_json_lines_given_labels_and_scheme(init_dir, tmp_path):
    rng = np.random.default_rng(1)
    paths = {}
    for split, n in (("train", 40), ("valid", 8)):
        rows = [{"tokens": [w for w, _, _ in s], "tags": [t for _, _, t in s]} for s in tagged(rng, n)]
        paths[split] = tmp_path / f"{split}.jsonl"
        paths[split].write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    labels = "B-PER,I-PER,B-LOC,I-LOC,O"  # an order of one's own, and a tag the files lack
    flags = ["--train", paths["train"], "--valid", paths["valid"], "--labels", labels, "--tag-scheme", "IOB1"]
    # IOB2 files are not IOB1 (B- after O): refused, naming the line
    assert finetune(init_dir, out, *flags) == 2
    assert not out.exists()
    assert finetune(init_dir, out, *flags[:-1], "IOB2") == 0
    config = json.loads((out / "best" / "config.json").read_text())
    assert ",".join(config["id2label"].values()) == labels


def test_words_cut_by_the_length_are_o_or_not_predicted():
    """A word past max_seq_length keeps no entity ("O") or, in a label set without O, no tag (None)."""
    task = get(TASK)
    feature = {"word_ids": [-1, 0, -1], "num_words": 3}
    logits = torch.tensor([[0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    assert task.predictions([logits], [None], [feature], {0: "O", 1: "B-LOC"}, None) == [["B-LOC", "O", "O"]]
    assert task.predictions([logits], [None], [feature], {0: "NN", 1: "VB"}, None) == [["VB", None, None]]


# --- bad input: one line, exit 2, nothing written
GOOD = "EU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\nBlackburn NNP I-PER\n"


@pytest.mark.parametrize(
    "case, train, valid, flags, says",
    [
        ("fewer columns than --label-column", GOOD, GOOD, ["--label-column", "3"],
         "train.txt:1: expected at least 4 space-separated columns (word … tag in column 3), got 3: 'EU NNP B-ORG'"),
        ("a ragged sentence", GOOD, "EU NNP B-ORG\nrejects O\n", [],
         "valid.txt:2: expected 3 space-separated columns as on line 1 (word … tag), got 2: 'rejects O'"),
        ("tokens and tags of different lengths", GOOD, '{"tokens": ["EU", "x"], "tags": ["B-ORG"]}\n', [],
         "valid.jsonl:1: 2 tokens and 1 tags (expected one tag per token)"),
        ("a JSON line without tags", GOOD, '{"tokens": ["EU"]}\n', [], "valid.jsonl:1: no 'tags' field (the line has tokens)"),
        ("an empty file", "", GOOD, [], "train.txt: no sentences (expected CoNLL columns"),
        ("an empty JSON Lines file", GOOD, "\n", [], "valid.jsonl: no sentences (expected JSON Lines of tokens and tags)"),
        ("a tag unseen in training", GOOD, "Paris NNP B-LOC\n", [],
         "valid.txt:1: tag 'B-LOC' is not a tag of {train} (O, B-ORG, B-PER, I-PER)"),
        ("a tag not among --labels", GOOD, GOOD, ["--labels", "O,B-PER,I-PER"],
         "train.txt:1: tag 'B-ORG' is not one of --labels (O, B-PER, I-PER)"),
        ("a file breaking the detected scheme", GOOD, "Paris NNP O\nBlackburn NNP I-PER\n", [],
         "valid.txt:2: tag 'I-PER' is not IOB2 (the scheme of {train}): I-PER after O: in IOB2 every entity starts with B-"),
        ("a file breaking the given scheme", GOOD, GOOD, ["--tag-scheme", "IOBES"],
         "train.txt:1: tag 'B-ORG' is not IOBES (as --tag-scheme says): B-ORG is not continued (O follows)"),
        ("a scheme of no name", GOOD, GOOD, ["--tag-scheme", "BIO"],
         "data.tag_scheme: expected one of IOB1, IOB2, IOBES, none, got 'BIO'"),
        ("tags with and without a scheme", GOOD + "\nLondon NNP LOC\n", GOOD, [],
         "train.txt:7: tag 'LOC' has no scheme prefix while 'B-ORG' (/"),
        ("a CSV file", GOOD, "text,label\n", [], "valid.csv: a .csv file; token classification reads CoNLL columns"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2_nothing_written(
    init_dir, tmp_path, capsys, case, train, valid, flags, says
):
    suffix = {"{": ".jsonl", "t": ".csv"}.get(valid[:1], ".jsonl" if valid == "\n" else ".txt")
    paths = {"train": tmp_path / "train.txt", "valid": tmp_path / f"valid{suffix}"}
    paths["train"].write_text(train)
    paths["valid"].write_text(valid)
    out = tmp_path / "run"
    capsys.readouterr()
    assert finetune(init_dir, out, "--train", paths["train"], "--valid", paths["valid"], *flags) == 2, case
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert says.format(train=paths["train"]) in err, case
    assert not out.exists()


def test_a_bad_test_file_is_refused_before_training(init_dir, tmp_path, capsys):
    f = files(tmp_path)
    f["test"].write_text("Paris NNP B-GPE\n")
    out = tmp_path / "run"
    capsys.readouterr()
    assert finetune(init_dir, out, "--train", f["train"], "--valid", f["valid"], "--test", f["test"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{f['test']}:1: tag 'B-GPE' is not a tag of {f['train']} (O, B-LOC, B-PER, I-PER)")
    assert len(err.splitlines()) == 1 and not out.exists()
