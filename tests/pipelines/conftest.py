"""Tiny checkpoint directories of every shape ``seq2bert predict`` reads: the server's (tests/serve/conftest.py:
a classifier, a tagger, a QA model, a pretraining run's encoder, a Transformer translation run, a GPT-2
language model) and three more BERT heads made here with the same tokenizer — a regression, a multi-label
classifier with a threshold in its config.json, and a multiple-choice model."""

import json

import pytest
import torch

from seq2bert.models import registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import BertForMultipleChoice, BertForSequenceClassification
from tests.serve.conftest import WORDS
from tests.serve.conftest import checkpoints as served_checkpoints

MULTI_LABEL_THRESHOLD = 0.45
checkpoints = served_checkpoints  # the server's fixture, shared
SERVED = {"classify": "sequence", "tag": "tokens", "qa": "qa", "embed": "pretrained",
          "translate": "translation", "generate": "gpt"}  # fmt: skip
__all__ = ["MULTI_LABEL_THRESHOLD", "WORDS"]


@pytest.fixture(scope="session")
def shapes(checkpoints, tmp_path_factory) -> dict:
    """{shape: checkpoint directory} for every shape of pipelines/predict.py."""
    root = tmp_path_factory.mktemp("predict")
    sequence, tok = registry.load(checkpoints["sequence"])
    size = {k: getattr(sequence.config, k) for k in ("vocab_size", "hidden_size", "num_hidden_layers",
                                                     "num_attention_heads", "intermediate_size",
                                                     "max_position_embeddings")}  # fmt: skip
    torch.manual_seed(1)
    labels = {0: "sport", 1: "film", 2: "city", 3: "food"}
    models = {
        "regression": BertForSequenceClassification(BertConfig(**size, id2label={0: "score"})),
        "multi-label": BertForSequenceClassification(
            BertConfig(**size, id2label=labels, problem_type="multi_label_classification")
        ),
        "choice": BertForMultipleChoice(BertConfig(**size)),
    }
    torch.nn.init.normal_(models["multi-label"].classifier.weight, std=3.0)  # probabilities far from 0.5
    out = {shape: checkpoints[name] for shape, name in SERVED.items()}
    for name, model in models.items():
        save_bert(model, root / name, tok)
        out[name] = root / name
    config = json.loads((root / "multi-label" / "config.json").read_text())  # a tuned threshold, by hand
    (root / "multi-label" / "config.json").write_text(
        json.dumps({**config, "multi_label_threshold": MULTI_LABEL_THRESHOLD})
    )
    return out
