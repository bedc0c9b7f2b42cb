"""A tiny family of one's own, as docs/architecture.md describes adding one: a config dataclass and three
classes composed from the shared blocks (nn/stack.py, nn/layers.py, objectives/), and its ``Family`` record.
Nothing here registers it: tests/models/tiny_plugin.py does (the module $SEQ2BERT_PLUGINS names to the CLI),
and test_adding_a_family.py for one test.

Its one idea of its own: ALBERT's cross-layer sharing — one Transformer layer applied N times."""

from dataclasses import dataclass, field
from types import SimpleNamespace as ModelOutput  # a dataclass in a real family

import torch
from torch import nn

from seq2bert.models.family import Family
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.layers import transformer_layer
from seq2bert.nn.stack import TransformerStack
from seq2bert.objectives.classification import problem_type_of, sequence_classification_loss
from seq2bert.objectives.masked_lm import masked_lm_loss
from seq2bert.objectives.next_sentence import next_sentence_loss


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
