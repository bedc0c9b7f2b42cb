"""Adding a family, as docs/architecture.md describes it: a tiny family written here — a config dataclass
and three classes composed from the shared blocks (nn/stack.py, nn/layers.py, objectives/) — is
registered, then pretrained by the pretraining recipe, saved, loaded by ``seq2bert.from_pretrained``,
fine-tuned by the fine-tuning recipe and used by a pipeline, without a line of generic code knowing it.

Its one idea of its own: ALBERT's cross-layer sharing — one Transformer layer applied N times."""

from dataclasses import dataclass, field
from types import SimpleNamespace as ModelOutput  # a dataclass in a real family

import numpy as np
import pytest
import torch
from torch import nn

import seq2bert
from seq2bert.models import registry
from seq2bert.models.family import Family
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.layers import transformer_layer
from seq2bert.nn.stack import TransformerStack
from seq2bert.objectives.classification import problem_type_of, sequence_classification_loss
from seq2bert.objectives.masked_lm import masked_lm_loss
from seq2bert.objectives.next_sentence import next_sentence_loss
from seq2bert.recipes.finetune import FinetuneConfig, FinetuneDataConfig, finetune
from seq2bert.recipes.pretrain import PretrainConfig, PretrainDataConfig, pretrain
from seq2bert.training.config import TrainConfig


# --- the family: a config (Hugging Face field names) …
@dataclass
class TinyConfig:
    model_type: str = "tiny-shared"
    vocab_size: int = 100
    hidden_size: int = 32
    num_hidden_layers: int = 3  # applied by one shared layer
    num_attention_heads: int = 2
    intermediate_size: int = 64
    max_position_embeddings: int = 64
    pad_token_id: int = 0
    id2label: dict[int, str] = field(default_factory=lambda: {0: "LABEL_0", 1: "LABEL_1"})
    problem_type: str | None = None

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    def validate(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError("num_attention_heads must divide hidden_size")


# … and models composed from the shared blocks
class TinyEmbeddings(nn.Module):
    def __init__(self, c: TinyConfig):
        super().__init__()
        self.tokens = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.positions = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.segments = nn.Embedding(2, c.hidden_size)

    def forward(self, input_ids, token_type_ids=None, *, offset=0):
        positions = torch.arange(offset, offset + input_ids.size(1), device=input_ids.device)
        segments = self.segments(token_type_ids) if token_type_ids is not None else 0
        return self.tokens(input_ids) + self.positions(positions) + segments


class TinyModel(SavePretrained, TransformerStack):
    def __init__(self, c: TinyConfig):
        layer = transformer_layer(
            c.hidden_size, c.num_attention_heads, c.intermediate_size, activation="gelu"
        )
        super().__init__(TinyEmbeddings(c), [layer], num_layers=c.num_hidden_layers)
        self.config = c

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **kw):
        return super().forward(input_ids, attention_mask, token_type_ids=token_type_ids, **kw)


class TinyForPreTraining(SavePretrained, nn.Module):
    def __init__(self, c: TinyConfig):
        super().__init__()
        self.config, self.tiny = c, TinyModel(c)
        self.mlm, self.nsp = nn.Linear(c.hidden_size, c.vocab_size), nn.Linear(c.hidden_size, 2)

    def forward(
        self, input_ids, attention_mask=None, token_type_ids=None, labels=None, next_sentence_label=None
    ):
        h = self.tiny(input_ids, attention_mask, token_type_ids).last_hidden_state
        logits, nsp = self.mlm(h), self.nsp(h[:, 0])
        mlm_loss = None if labels is None else masked_lm_loss(logits, labels)
        nsp_loss = None if next_sentence_label is None else next_sentence_loss(nsp, next_sentence_label)
        loss = None if mlm_loss is None else mlm_loss + (0 if nsp_loss is None else nsp_loss)
        return ModelOutput(loss=loss, prediction_logits=logits, seq_relationship_logits=nsp, mlm_loss=mlm_loss,
                           nsp_loss=nsp_loss)  # fmt: skip


class TinyForSequenceClassification(SavePretrained, nn.Module):
    def __init__(self, c: TinyConfig):
        super().__init__()
        self.config, self.tiny = c, TinyModel(c)
        self.classifier = nn.Linear(c.hidden_size, c.num_labels)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        logits = self.classifier(self.tiny(input_ids, attention_mask, token_type_ids).last_hidden_state[:, 0])
        kind = problem_type_of(self.config.problem_type, self.config.num_labels)
        return ModelOutput(loss=None if labels is None else sequence_classification_loss(logits, labels, kind),
                           logits=logits)  # fmt: skip


TINY = Family(
    model_type="tiny-shared",
    config_class=TinyConfig,
    architectures={
        "TinyModel": TinyModel,
        "TinyForPreTraining": TinyForPreTraining,
        "TinyForSequenceClassification": TinyForSequenceClassification,
    },
    heads={
        "base": "TinyModel",
        "pretraining": "TinyForPreTraining",
        "sequence": "TinyForSequenceClassification",
    },
    base_model_prefix="tiny",
    tokenizer="wordpiece",
    head_modules=("mlm", "nsp", "classifier"),
)


@pytest.fixture
def tiny_family(monkeypatch):
    monkeypatch.setattr(registry, "FAMILIES", dict(registry.FAMILIES))  # registered for this test only
    return registry.register(TINY)


WORDS = "the a film movie was is great fine awful dull plot cast story so very".split()


def write_text(tmp_path):
    rng = np.random.default_rng(0)
    docs = [" ".join(" ".join(rng.choice(WORDS, 6)).capitalize() + "." for _ in range(6)) for _ in range(20)]
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "a.txt").write_text("\n\n".join(docs) + "\n")
    (tmp_path / "sst2").mkdir()
    for split, n in (("train", 64), ("dev", 16)):
        rows = ["sentence\tlabel"]
        for i in range(n):
            rows.append(
                f"the film was {'great' if i % 2 else 'awful'} {' '.join(rng.choice(WORDS, 3))}\t{i % 2}"
            )
        (tmp_path / "sst2" / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def test_a_tiny_family_pretrains_saves_loads_and_finetunes_through_the_generic_code(tiny_family, tmp_path):
    write_text(tmp_path)
    train = dict(warmup_steps=1, eval_every=4, log_every=2, lr=1e-3, device="cpu")
    cfg = PretrainConfig(
        model=TinyConfig(),
        data=PretrainDataConfig(
            files=[str(tmp_path / "books")],
            vocab_size=60,
            max_seq_length=24,
            batch_size=4,
            valid_fraction=0.2,
            dupe_factor=2,
        ),  # fmt: skip
        train=TrainConfig(max_steps=8, metric="mlm_accuracy", **train),
    )
    row = pretrain(cfg, tmp_path / "pre", progress_bar=False)
    assert (
        row["steps"] == 8 and row["model"].startswith("tiny-shared") and 0 <= row["valid_mlm_accuracy"] <= 100
    )

    # saved as a directory of its own family; loaded back by the generic entry point
    best = tmp_path / "pre" / "best"
    assert registry.family_at(best) is TINY
    model = seq2bert.from_pretrained(best)
    assert type(model) is TinyForPreTraining and len(model.tiny.layers) == 1 and model.tiny.num_layers == 3
    ids = torch.tensor([[2, 7, 9, 3]])
    again = seq2bert.from_pretrained(best)
    torch.testing.assert_close(model(ids).prediction_logits, again(ids).prediction_logits, rtol=0, atol=0)

    # fine-tuned by the fine-tuning recipe: the family names the class with a "sequence" head
    ft = FinetuneConfig(init=str(best), data=FinetuneDataConfig(task="sst2", path=str(tmp_path / "sst2"), batch_size=8),
                        train=TrainConfig(max_epochs=6, metric="main", **train))  # fmt: skip
    result = finetune(ft, tmp_path / "ft", progress_bar=False)
    assert result["dev_accuracy"] >= 75.0  # "great" / "awful" decide the label
    classifier = seq2bert.from_pretrained(tmp_path / "ft" / "best")
    assert type(classifier) is TinyForSequenceClassification
    torch.testing.assert_close(
        classifier.tiny.embeddings.tokens.weight.shape, model.tiny.embeddings.tokens.weight.shape
    )
    labels = seq2bert.classify(
        ["the film was great", "the film was awful"], model=str(tmp_path / "ft" / "best")
    )
    assert [p["label"] for p in labels] == ["1", "0"]
    assert seq2bert.embed(["the film was great"], model=str(best)).shape == (1, 32)
