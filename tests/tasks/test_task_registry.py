"""The task registry: every built-in task is a record of its shape with the data it had before the registry
(the head, length, labels, metrics, files and GPT-1 transformation of each), and a record's shape-generic
behaviour reads, decodes, scores and writes as the task says."""

import json

import pytest
import torch

from seq2bert.data.glue import GLUE_TASKS
from seq2bert.data.gpt_finetuning import TASK_SHAPES
from seq2bert.data.squad import Answer, QAExample
from seq2bert.errors import ConfigError
from seq2bert.evaluation.tasks import glue_metrics
from seq2bert.tasks.data import FinetuneDataConfig
from seq2bert.tasks.registry import TASKS, get

SHAPES = {  # the closed table finetune.py had: task → (head, default max_seq_length)
    **{name: ("sequence", 128) for name in GLUE_TASKS},
    "conll2003": ("tokens", 256),
    "squad": ("qa", 384),
    "squad_v2": ("qa", 384),
    "swag": ("choice", 128),
}
USER_FILES = {  # issue 40: the tasks over a user's files (--train, --valid)
    "sentence-embedding": ("embedding", 128),  # a bi-encoder, no head (tasks/embedding_files.py)
    "text-classification": ("sequence", 128),
    "text-pair": ("sequence", 128),
    "regression": ("sequence", 128),
    "multi-label": ("sequence", 128),
    "multiple-choice": ("choice", 128),
    "question-answering": ("qa", 384),
    "token-classification": ("tokens", 256),  # tasks/tagging_files.py
}
# GPT-1's input transformation of each generic task (a decoder fine-tunes on them as on GLUE and SWAG), and
# tagging's running text (CoNLL-2003 and a user's tagged files)
GENERIC_SHAPES = {"text-classification": "classification", "text-pair": "entailment", "regression": "similarity",
                  "multiple-choice": "choice", "token-classification": "tokens", "conll2003": "tokens"}  # fmt: skip


def test_the_built_in_tasks_and_their_heads_lengths_and_decoder_shapes():
    assert [name for name, t in TASKS.items() if not t.user_files] == list(SHAPES)  # the named ones
    assert [name for name, t in TASKS.items() if t.user_files] == list(USER_FILES)
    for name, (head, length) in {**SHAPES, **USER_FILES}.items():
        task = get(name)
        assert (task.head, task.max_seq_length) == (head, length), name
        assert FinetuneDataConfig(task=name).kind == head
        assert FinetuneDataConfig(task=name, max_seq_length=64).seq_length == 64
        assert task.decoder_shape == {**TASK_SHAPES, **GENERIC_SHAPES}.get(name), name  # GLUE, SWAG, generic
    assert get("mnli").extra_dev.task == "mnli_mismatched"
    assert [t.name for t in TASKS.values() if t.extra_dev is not None] == ["mnli"]


@pytest.mark.parametrize("name", list(GLUE_TASKS))
def test_a_glue_task_is_its_spec(name):
    spec, task = GLUE_TASKS[name], get(name)
    assert task.main_metric == spec.main_metric and task.files["dev"] == (spec.dev_file,)
    if spec.labels is None:  # STS-B: one output, a regression
        assert task.id2label([]) == {0: "score"} and task.problem_type == "regression"
    else:
        assert task.id2label([]) == dict(enumerate(spec.labels))
        assert task.problem_type == "single_label_classification"
    examples = [
        type("E", (), {"label": y})() for y in ([0.5, 2.0, 4.5] if spec.labels is None else [0, 1, 1])
    ]
    predictions = [1.0, 2.5, 4.0] if spec.labels is None else [0, 1, 0]
    assert task.metrics(examples, predictions) == glue_metrics(name, predictions, [e.label for e in examples])


def test_unknown_task_names_the_key_and_the_known_ones():
    with pytest.raises(
        ConfigError,
        match=r"data.task: expected one of cola, sst2, .*swag, .*, got 'nope'",
    ):
        FinetuneDataConfig(task="nope")


def test_classification_decodes_argmax_writes_label_names_and_regression_writes_values(tmp_path):
    outputs = [torch.tensor([0.1, 2.0]), torch.tensor([3.0, -1.0])]
    sst2 = get("sst2")
    examples = [type("E", (), {"id": str(i), "label": y})() for i, y in enumerate([1, 1])]
    preds = sst2.predictions(outputs, examples, [], {0: "0", 1: "1"}, None)
    assert preds == [1, 0] and sst2.metrics(examples, preds) == {"accuracy": 50.0}
    sst2.write_predictions(tmp_path / "p.jsonl", examples, preds, {0: "neg", 1: "pos"})
    lines = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert lines == [
        {"id": "0", "prediction": "pos", "label": "pos"},
        {"id": "1", "prediction": "neg", "label": "pos"},
    ]
    stsb = get("stsb")
    assert stsb.predictions([torch.tensor([2.5])], examples[:1], [], {0: "score"}, None) == [2.5]
    assert stsb.written(examples[0], 2.5, {0: "score"}) == {"id": "0", "prediction": 2.5, "label": 1}


def test_squad_writes_the_official_predictions_file_beside_the_lines(tmp_path):
    examples = [
        QAExample("q1", "t", "in Rome", "where?", [Answer("Rome", 3)]),
        QAExample("q2", "t", "in Oslo", "where?", [Answer("Oslo", 3)]),
    ]
    squad = get("squad")
    assert squad.metrics(examples, ["Rome", "Paris"]) == {"exact_match": 50.0, "f1": 50.0}
    squad.write_predictions(tmp_path / "predictions.jsonl", examples, ["Rome", "Paris"], None)
    assert json.loads((tmp_path / "predictions.json").read_text()) == {"q1": "Rome", "q2": "Paris"}
    first = json.loads((tmp_path / "predictions.jsonl").read_text().splitlines()[0])
    assert first == {"id": "q1", "prediction": "Rome", "label": ["Rome"]}


def test_tags_are_found_in_the_examples_and_decoded_per_word():
    conll = get("conll2003")
    sentences = [type("S", (), {"tags": ["B-PER", "O", "B-LOC"]})(), type("S", (), {"tags": ["I-PER"]})()]
    assert conll.id2label(sentences) == {0: "O", 1: "B-LOC", 2: "B-PER", 3: "I-PER"}
    logits = torch.tensor([[9.0, 0, 0], [0, 9.0, 0], [0, 0, 9.0], [9.0, 0, 0]])  # (T, K)
    feature = {"word_ids": [-1, 0, 1, -1], "num_words": 3}  # the third word cut by max_seq_length
    assert conll.predictions([logits], sentences[:1], [feature], {0: "O", 1: "B-PER", 2: "I-PER"}, None) == [
        ["B-PER", "I-PER", "O"]
    ]
