"""BERT fine-tuned: one small output layer on the pretrained encoder (Devlin et al. 2018, Sect. 3.2, Figure 4).

"For each task, we simply plug in the task-specific inputs and outputs into BERT and fine-tune all the
parameters end-to-end." The four shapes of Figure 4, and multiple choice (Sect. 4.4, SWAG):

    (a) sentence pair, (b) single sentence  p = softmax(C Wᵀ)        C = pooled [CLS], W ∈ R^{K×H}
        — regression (STS-B): one output, squared error
    (c) span question answering             P_i = softmax_i(S · T_i), end with E · T_i      Sect. 4.2
                                            (one matrix [S; E] ∈ R^{2×H}: ``qa_outputs``)
    (d) tagging                             p_i = softmax(T_i Wᵀ) at each token; a word is labelled by its
                                            first sub-token, the others are ignored (labels −100)   Sect. 5.3
    multiple choice                         "the only task-specific parameters … a vector whose dot product
                                            with the [CLS] token representation C denotes a score for each
                                            choice which is normalized with a softmax layer"   Sect. 4.4

Names, checkpoint layout and outputs are transformers' (BertForSequenceClassification, …): the encoder under
``bert.``, the head as ``classifier`` (or ``qa_outputs``); dropout before the classifier is
``classifier_dropout`` (default: hidden_dropout_prob). Any BERT checkpoint initialises them: pretrained.py
``init_task_model`` loads the encoder and names what it had to initialise new.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertHeadModel, BertModelOutput, init_bert_weights
from seq2bert.objectives.classification import (
    problem_type_of,
    sequence_classification_loss,
    token_classification_loss,
)
from seq2bert.objectives.span_qa import span_qa_loss


@dataclass
class ClassifierOutput:
    """transformers' SequenceClassifierOutput / TokenClassifierOutput / MultipleChoiceModelOutput."""

    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, K) sequences, (B, T, K) tokens, (B, C) choices
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class QuestionAnsweringOutput:
    """transformers' QuestionAnsweringModelOutput."""

    loss: torch.Tensor | None
    start_logits: torch.Tensor  # (B, T)
    end_logits: torch.Tensor  # (B, T)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


def classifier_dropout(c: BertConfig) -> nn.Dropout:
    return nn.Dropout(c.hidden_dropout_prob if c.classifier_dropout is None else c.classifier_dropout)


def problem_type(c: BertConfig) -> str:
    """transformers' rule: one output is regression, more are single-label classification unless set."""
    return problem_type_of(c.problem_type, c.num_labels)


class TaskModel(BertHeadModel):
    """The encoder and the common forward arguments of every head."""

    def encode(self, input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions):
        return self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )


class BertForSequenceClassification(TaskModel):
    """Figure 4 (a), (b): a K-way classifier — or a regressor, K = 1 — on the pooled [CLS] state C."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=True)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)  # W ∈ R^{K×H}
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
        """input_ids … (B, T); labels (B,) class ids, (B,) floats for regression, (B, K) 0/1 for multi-label."""
        out = self.encode(input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions)
        logits = self.scores(out)  # (B, K)
        loss = None
        if labels is not None:
            loss = sequence_classification_loss(logits, labels, problem_type(self.config))
        return ClassifierOutput(loss, logits, out.hidden_states, out.attentions)

    def scores(self, out: BertModelOutput) -> torch.Tensor:
        """The encoder's output → the logits (B, K): C Wᵀ (a variant reads another state, another head)."""
        return self.classifier(self.dropout(out.pooler_output))


class BertForTokenClassification(TaskModel):
    """Figure 4 (d): a K-way classifier on every final token state T_i (no pooler)."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=False)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
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
        """labels (B, T): a tag id on each word's first sub-token, −100 elsewhere (ignored)."""
        out = self.encode(input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, K)
        loss = None
        if labels is not None:
            loss = token_classification_loss(logits, labels)
        return ClassifierOutput(loss, logits, out.hidden_states, out.attentions)


class BertForQuestionAnswering(TaskModel):
    """Figure 4 (c): a start vector S and an end vector E; the score of a span i … j is S·T_i + E·T_j."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)  # [S; E] ∈ R^{2×H} (with a bias, as released)
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        *,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> QuestionAnsweringOutput:
        """start_positions, end_positions (B,): token indices of the answer (0, the [CLS], for none).

        Loss: the mean of the start and end log-likelihoods (Sect. 4.2: "the training objective is the sum
        of the log-likelihoods of the correct start and end positions"; halved as released). Positions
        outside the sequence are clamped to T and ignored, as transformers does."""
        out = self.encode(input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions)
        start_logits, end_logits = self.spans(out).unbind(dim=-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_qa_loss(start_logits, end_logits, start_positions, end_positions)
        return QuestionAnsweringOutput(
            loss, start_logits.contiguous(), end_logits.contiguous(), out.hidden_states, out.attentions
        )

    def spans(self, out: BertModelOutput) -> torch.Tensor:
        """The encoder's output → the start and end scores (B, T, 2): [S; E] T_i (a variant drops out first)."""
        return self.qa_outputs(out.last_hidden_state)


class BertForMultipleChoice(TaskModel):
    """Sect. 4.4: each choice is a sequence [CLS] context [SEP] choice [SEP]; its score is C · w."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=True)
        self.dropout = classifier_dropout(config)
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

        out = self.encode(
            flat(input_ids),
            flat(attention_mask),
            flat(token_type_ids),
            output_hidden_states,
            output_attentions,
        )
        logits = self.scores(out).view(B, C)  # one score per choice: (B, C)
        loss = None
        if labels is not None:  # a softmax over the C choices' scores
            loss = sequence_classification_loss(logits, labels, "single_label_classification")
        return ClassifierOutput(loss, logits, out.hidden_states, out.attentions)

    def scores(self, out: BertModelOutput) -> torch.Tensor:
        """The encoder's output over the B·C choices → a score each (B·C, 1): C · w."""
        return self.classifier(self.dropout(out.pooler_output))


TASK_CLASSES: dict[str, type[TaskModel]] = {
    "BertForSequenceClassification": BertForSequenceClassification,
    "BertForTokenClassification": BertForTokenClassification,
    "BertForQuestionAnswering": BertForQuestionAnswering,
    "BertForMultipleChoice": BertForMultipleChoice,
}
