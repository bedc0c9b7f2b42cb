"""ELECTRA fine-tuned: the discriminator's encoder with a task head (Clark et al. 2020, Sect. 3.1: "we
fine-tune the discriminator"; "we add simple linear classifiers on top of ELECTRA").

BERT's heads (models/bert/tasks.py) on ElectraModel, under ``electra.`` as transformers keeps it:

    tokens, span QA          BERT's: a linear layer on every final state T_i
    sequences                on the final [CLS] state h: out_proj(dropout(GELU(dense(dropout(h)))))
                             — ELECTRA has no pooler; its classifier has its own hidden layer (the released
                             code's, with GELU where BERT's pooler has tanh)
    multiple choice          each choice's [CLS] state summarised: dropout(act(summary h)), then w · that

Class names, outputs and layout are transformers' (ElectraForSequenceClassification, …).
"""

from __future__ import annotations

import torch
from torch import nn

from seq2bert.models.bert.model import BertModelOutput, init_bert_weights
from seq2bert.models.bert.tasks import (
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    TaskModel,
    classifier_dropout,
)
from seq2bert.models.electra.config import ElectraConfig
from seq2bert.models.electra.model import ElectraModel
from seq2bert.nn.feed_forward import ACTIVATIONS


class ElectraTask:
    """What turns a BERT task model into ELECTRA's: the encoder (no pooler), kept under ``electra``."""

    base_model_prefix = "electra"
    encoder_class = ElectraModel


class ClassificationHead(nn.Module):
    """[CLS] state (B, T, H) → (B, K): out_proj(dropout(GELU(dense(dropout(h_[CLS])))))."""

    def __init__(self, c: ElectraConfig):
        super().__init__()
        self.dropout = classifier_dropout(c)
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.act = ACTIVATIONS["gelu"]
        self.out_proj = nn.Linear(c.hidden_size, c.num_labels)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        x = self.dropout(hidden[:, 0])  # the final [CLS] state: (B, H)
        return self.out_proj(self.dropout(self.act(self.dense(x))))


class ElectraForSequenceClassification(ElectraTask, BertForSequenceClassification):
    """A K-way classifier (or a regressor, K = 1) on the discriminator's final [CLS] state: BERT's forward,
    another head."""

    def __init__(self, config: ElectraConfig):
        super(BertForSequenceClassification, self).__init__(config, pooler=False)  # TaskModel's: no pooler
        self.classifier = ClassificationHead(config)
        init_bert_weights(self, config)

    def scores(self, out: BertModelOutput) -> torch.Tensor:
        return self.classifier(out.last_hidden_state)  # (B, K)


class ElectraForTokenClassification(ElectraTask, BertForTokenClassification):
    """BERT's tagger (Figure 4 (d)) on the discriminator."""


class ElectraForQuestionAnswering(ElectraTask, BertForQuestionAnswering):
    """BERT's span start / end vectors (Figure 4 (c)) on the discriminator."""


class ChoiceSummary(nn.Module):
    """A choice's [CLS] state (B, T, H) → (B, H): dropout(act(summary h_[CLS])) — transformers'
    sequence summary of type "first" (summary_use_proj, summary_activation, summary_last_dropout)."""

    def __init__(self, c: ElectraConfig):
        super().__init__()
        self.summary = nn.Linear(c.hidden_size, c.hidden_size) if c.summary_use_proj else nn.Identity()
        self.act = ACTIVATIONS[c.summary_activation] if c.summary_activation else nn.Identity()
        self.dropout = nn.Dropout(c.summary_last_dropout)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.act(self.summary(hidden[:, 0])))


class ElectraForMultipleChoice(ElectraTask, BertForMultipleChoice):
    """Each choice is [CLS] context [SEP] choice [SEP]; its score is w · summary(h_[CLS]): BERT's forward."""

    def __init__(self, config: ElectraConfig):
        super(BertForMultipleChoice, self).__init__(config, pooler=False)  # TaskModel's: no pooler
        self.sequence_summary = ChoiceSummary(config)
        self.classifier = nn.Linear(config.hidden_size, 1)  # w
        init_bert_weights(self, config)

    def scores(self, out: BertModelOutput) -> torch.Tensor:
        return self.classifier(self.sequence_summary(out.last_hidden_state))  # (B·C, 1)


TASK_CLASSES: dict[str, type[TaskModel]] = {
    "ElectraForSequenceClassification": ElectraForSequenceClassification,
    "ElectraForTokenClassification": ElectraForTokenClassification,
    "ElectraForQuestionAnswering": ElectraForQuestionAnswering,
    "ElectraForMultipleChoice": ElectraForMultipleChoice,
}
