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

from seq2bert.models.bert.model import init_bert_weights
from seq2bert.models.bert.tasks import (
    BertForQuestionAnswering,
    BertForTokenClassification,
    ClassifierOutput,
    TaskModel,
    classifier_dropout,
    problem_type,
)
from seq2bert.models.electra.config import ElectraConfig
from seq2bert.models.electra.model import ElectraModel
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.objectives.classification import sequence_classification_loss


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


class ElectraForSequenceClassification(ElectraTask, TaskModel):
    """A K-way classifier (or a regressor, K = 1) on the discriminator's final [CLS] state."""

    def __init__(self, config: ElectraConfig):
        super().__init__(config, pooler=False)
        self.classifier = ClassificationHead(config)
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        *,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> ClassifierOutput:
        """As BertForSequenceClassification.forward."""
        out = self.encode(input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions)
        logits = self.classifier(out.last_hidden_state)  # (B, K)
        loss = None
        if labels is not None:
            loss = sequence_classification_loss(logits, labels, problem_type(self.config))
        return ClassifierOutput(loss, logits, out.hidden_states, out.attentions)


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


class ElectraForMultipleChoice(ElectraTask, TaskModel):
    """Each choice is [CLS] context [SEP] choice [SEP]; its score is w · summary(h_[CLS])."""

    def __init__(self, config: ElectraConfig):
        super().__init__(config, pooler=False)
        self.sequence_summary = ChoiceSummary(config)
        self.classifier = nn.Linear(config.hidden_size, 1)  # w
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        *,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> ClassifierOutput:
        """input_ids, attention_mask, token_type_ids (B, C, T): C choices per example; labels (B,)."""
        B, C, T = input_ids.shape

        def flat(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.reshape(B * C, T)  # (B·C, T)

        out = self.encode(flat(input_ids), flat(attention_mask), flat(token_type_ids), output_hidden_states,
                          output_attentions)  # fmt: skip
        logits = self.classifier(self.sequence_summary(out.last_hidden_state)).view(B, C)  # (B, C)
        loss = None
        if labels is not None:  # a softmax over the C choices' scores
            loss = sequence_classification_loss(logits, labels, "single_label_classification")
        return ClassifierOutput(loss, logits, out.hidden_states, out.attentions)


TASK_CLASSES: dict[str, type[TaskModel]] = {
    "ElectraForSequenceClassification": ElectraForSequenceClassification,
    "ElectraForTokenClassification": ElectraForTokenClassification,
    "ElectraForQuestionAnswering": ElectraForQuestionAnswering,
    "ElectraForMultipleChoice": ElectraForMultipleChoice,
}
