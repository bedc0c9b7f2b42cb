"""Tests for seq2bert.evaluation.tasks: GLUE, NER and SQuAD metrics against values computed by hand."""

import math

import pytest

from seq2bert.data.squad import Answer, QAExample, read_squad
from seq2bert.evaluation.tasks import (
    glue_metrics,
    ner_metrics,
    normalize_answer,
    squad_exact_match,
    squad_f1,
    squad_metrics,
)

# ---------------------------------------------------------------------------------------------------------
# GLUE


def test_accuracy_and_f1():
    # TP = 2, FP = 1, FN = 0, TN = 1: accuracy 3/4; precision 2/3, recall 1, F1 = 2·(2/3)/(5/3) = 0.8
    scores = glue_metrics("mrpc", [1, 0, 1, 1], [1, 0, 0, 1])
    assert list(scores) == ["accuracy", "f1"]
    assert scores["accuracy"] == pytest.approx(75.0)
    assert scores["f1"] == pytest.approx(80.0)


def test_matthews():
    # TP = 1, FP = 1, TN = 2, FN = 0: (1·2 − 1·0) / √((1+1)(1+0)(2+1)(2+0)) = 2/√12 = 1/√3
    assert glue_metrics("cola", [1, 1, 0, 0], [1, 0, 0, 0]) == {"matthews": pytest.approx(100 / math.sqrt(3))}
    assert glue_metrics("cola", [1, 1, 1, 1], [1, 0, 0, 0]) == {"matthews": 0.0}  # one class predicted


def test_pearson_and_spearman():
    # deviations x: −1.5 −.5 .5 1.5, y: −1.75 −.75 .25 2.25 → Σxy = 6.5, Σx² = 5, Σy² = 8.75
    scores = glue_metrics("stsb", [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0])
    assert scores["pearson"] == pytest.approx(100 * 6.5 / math.sqrt(5 * 8.75))
    assert scores["spearman"] == pytest.approx(100.0)  # the same order
    # ranks differ by d = (−1, 1, −1, 1): ρ = 1 − 6·Σd² / (n(n²−1)) = 1 − 24/60 = 0.6
    assert glue_metrics("stsb", [1, 2, 3, 4], [2, 1, 4, 3])["spearman"] == pytest.approx(60.0)
    assert glue_metrics("stsb", [2.5, 2.5, 2.5], [1.0, 2.0, 3.0]) == {"pearson": 0.0, "spearman": 0.0}


def test_multiclass_accuracy_and_bad_input():
    assert glue_metrics("mnli", [0, 1, 2, 2, 1], [0, 1, 2, 0, 0]) == {"accuracy": pytest.approx(60.0)}
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        glue_metrics("sst2", [0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="no examples"):
        glue_metrics("sst2", [], [])


# ---------------------------------------------------------------------------------------------------------
# NER


def test_ner_entity_level_with_a_boundary_error():
    true = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG"]]
    pred = [["B-PER", "O", "O", "B-LOC", "O"], ["B-ORG", "I-ORG"]]  # "PER" is cut short: a wrong entity
    scores = ner_metrics(true, pred)
    # 3 true entities, 3 predicted, 2 right (LOC, ORG); 6 of 7 tokens right
    assert scores["precision"] == pytest.approx(200 / 3)
    assert scores["recall"] == pytest.approx(200 / 3)
    assert scores["f1"] == pytest.approx(200 / 3)
    assert scores["accuracy"] == pytest.approx(600 / 7)
    assert (scores["f1_PER"], scores["f1_LOC"], scores["f1_ORG"]) == (0.0, 100.0, 100.0)


def test_ner_type_error_and_conlleval_rules():
    # a right span with the wrong type counts as one false positive and one false negative
    scores = ner_metrics([["B-PER", "I-PER", "B-LOC"]], [["B-ORG", "I-ORG", "B-LOC"]])
    assert scores["f1"] == pytest.approx(50.0) and scores["f1_ORG"] == 0.0 and scores["f1_PER"] == 0.0
    # conlleval (seqeval's default mode): an I- after O starts an entity
    assert ner_metrics([["O", "B-PER", "I-PER"]], [["O", "I-PER", "I-PER"]])["f1"] == 100.0
    # nothing predicted: precision is 0, not an error
    assert ner_metrics([["B-PER"]], [["O"]])["precision"] == 0.0
    with pytest.raises(ValueError, match="sentence 0: 1 predicted tags for 2 tokens"):
        ner_metrics([["O", "O"]], [["O"]])


# ---------------------------------------------------------------------------------------------------------
# SQuAD


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("The  Cat!", "cat"),
        ("An apple, a day.", "apple day"),
        ("theatre Anthem", "theatre anthem"),  # articles only as whole words
        ("U.S. (1998)", "us 1998"),
        ("  the\tthe \n", ""),
        ("café—bar", "café—bar"),  # only ASCII punctuation is removed, as in the official scripts
    ],
)
def test_normalize_answer(raw, normalized):
    assert normalize_answer(raw) == normalized


def test_exact_match_and_f1():
    assert squad_exact_match("The  Cat!", "cat") == 1.0
    assert squad_exact_match("a cat", "cats") == 0.0
    # pred {big, red, cat}, gold {red, cat, sat}: 2 shared, P = R = 2/3
    assert squad_f1("the big red cat", "a red cat sat") == pytest.approx(2 / 3)
    # bags: "cat" is shared once; P = 1/3, R = 1, F1 = 2·(1/3)/(4/3) = 0.5
    assert squad_f1("cat cat cat", "cat") == pytest.approx(0.5)
    assert squad_f1("dog", "cat") == 0.0
    # an answer empty after normalisation: v2.0 scores "no answer" vs "no answer" 1, v1.1 scores it 0
    assert squad_f1("The", "") == 1.0
    assert squad_f1("", "", version="1.1") == 0.0
    assert squad_f1("", "cat") == 0.0


def example(id_: str, *answers: str, impossible: bool = False) -> QAExample:
    return QAExample(id_, "t", "c", "q?", [Answer(text, 0) for text in answers], impossible)


def test_squad_v1_metrics_take_the_best_reference():
    examples = [
        example("a", "Denver Broncos", "The Denver Broncos"),
        example("b", "Saint Bernadette Soubirous"),
        example("c", "France"),  # no prediction: counts as "", scores 0
    ]
    predictions = {"a": "denver broncos.", "b": "Bernadette", "other": "ignored"}
    scores = squad_metrics(predictions, examples)
    # EM: 1, 0, 0; F1: 1, (P 1, R 1/3 → 0.5), 0
    assert scores == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(50.0)}


def test_squad_v2_metrics_split_has_and_no_answer():
    examples = [
        example("a", "France"),
        example("b", impossible=True),
        example("c", impossible=True),
        example("d", "Normandy"),
    ]
    scores = squad_metrics({"a": "in France", "b": "", "c": "Rollo"}, examples)
    # a: EM 0, F1 2/3 (P 1/2, R 1); b: "" on no answer, 1; c: an answer to no answer, 0; d: missing, 0
    assert scores == {
        "exact_match": pytest.approx(25.0),
        "f1": pytest.approx(100 * (2 / 3 + 1) / 4),
        "HasAns_exact": 0.0,
        "HasAns_f1": pytest.approx(100 / 3),
        "HasAns_total": 2.0,
        "NoAns_exact": pytest.approx(50.0),
        "NoAns_f1": pytest.approx(50.0),
        "NoAns_total": 2.0,
    }
    with pytest.raises(ValueError, match="no examples"):
        squad_metrics({}, [])


# ---------------------------------------------------------------------------------------------------------
# The real SQuAD dev sets


@pytest.mark.data
def test_real_squad_v2_no_answer_baseline(shared_data):
    path = shared_data / "squad" / "dev-v2.0.reconstructed.json.gz"
    if not path.exists():
        pytest.skip(f"needs {path} (absent on this machine)")
    examples = read_squad(path)
    scores = squad_metrics({e.id: "" for e in examples}, examples)
    # the known "always no answer" baseline of evaluate-v2.0.py: 5945 / 11873
    assert round(scores["exact_match"], 4) == 50.0716
    assert round(scores["f1"], 4) == 50.0716
    assert (scores["HasAns_total"], scores["NoAns_total"]) == (5928, 5945)
    assert scores["NoAns_exact"] == 100.0 and scores["HasAns_f1"] == 0.0


@pytest.mark.data
def test_real_squad_v1_references_score_100(shared_data):
    path = shared_data / "squad" / "dev-v1.1.json.gz"
    if not path.exists():
        pytest.skip(f"needs {path} (absent on this machine)")
    examples = read_squad(path)
    first = {e.id: e.answers[0].text for e in examples}
    assert squad_metrics(first, examples) == {"exact_match": 100.0, "f1": 100.0}
    scores = squad_metrics({e.id: e.question for e in examples}, examples)  # answering with the question
    assert scores["exact_match"] == 0.0 and 0.0 < scores["f1"] < 20.0
