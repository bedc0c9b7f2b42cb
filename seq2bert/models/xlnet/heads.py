"""XLNet fine-tuned (Yang et al. 2019, Sect. 3): the task heads on the bare model (model.py), with
transformers' class names, module names and outputs, so that a checkpoint loads there and back.

    sequence              s = tanh(W_s h_<cls> + b_s)         XLNet reads its LAST token, <cls> (the input is
                          p = softmax(W_y s)                   A <sep> B <sep> <cls>, padded on the left;
                                                               ours reads the last real token, so a row
                                                               padded on the right gives the same):
                                                               ``sequence_summary`` (transformers'
                                                               SequenceSummary, summary_type "last") then
                                                               ``logits_proj``; regression and multi-label as
                                                               BERT's (objectives/classification.py)
    tokens                p_i = softmax(W h_i)                 ``classifier`` on every final state
    question answering    P_i = softmax_i(S·h_i), E·h_j        ``qa_outputs`` (transformers'
                                                               …QuestionAnsweringSimple: BERT's span head)
    multiple choice       score_c = w · s_c, softmax over c    ``sequence_summary`` of each choice, then
                                                               ``logits_proj`` (one output)

The bare model already drops out its last states (the model's output dropout), so no head adds another
before its classifier — as transformers'. Each head takes the bare model's keywords (``mems``, ``perm_mask``,
``target_mapping``, ``use_mems``) and returns the new ``mems``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.pretrained import SavePretrained
from seq2bert.models.xlnet.config import XLNetConfig
from seq2bert.models.xlnet.model import XLNetModel, XLNetModelOutput, init_xlnet_weights
from seq2bert.objectives.classification import (
    problem_type_of,
    sequence_classification_loss,
    token_classification_loss,
)
from seq2bert.objectives.span_qa import span_qa_loss

SUMMARY_TYPES = ("last", "first", "mean")


@dataclass
class XLNetClassifierOutput:
    """transformers' XLNetForSequenceClassificationOutput / …TokenClassificationOutput / …MultipleChoiceOutput."""

    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, K) sequences, (B, T, K) tokens, (B, C) choices
    mems: tuple[torch.Tensor, ...] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class XLNetQuestionAnsweringOutput:
    """transformers' XLNetForQuestionAnsweringSimpleOutput."""

    loss: torch.Tensor | None
    start_logits: torch.Tensor  # (B, T)
    end_logits: torch.Tensor  # (B, T)
    mems: tuple[torch.Tensor, ...] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class SequenceSummary(nn.Module):
    """One vector of a sequence: its last (or first, or mean) state, through tanh(W_s · + b_s) when the config
    says so (``summary_use_proj``, ``summary_activation``), then dropout (``summary_last_dropout``)."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        if config.summary_type not in SUMMARY_TYPES:
            raise ValueError(f"summary_type: expected one of {SUMMARY_TYPES}, got {config.summary_type!r}")
        self.summary_type = config.summary_type
        self.summary = nn.Linear(config.d_model, config.d_model) if config.summary_use_proj else nn.Identity()
        self.activation = nn.Tanh() if config.summary_activation == "tanh" else nn.Identity()
        self.last_dropout = nn.Dropout(config.summary_last_dropout)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, d_model) → (B, d_model); "last" is the last real token (attention_mask (B, T): 1 on them),
        the last position when the rows are padded on the left, as XLNet's are."""
        if self.summary_type == "last":
            last = hidden.size(1) - 1
            if attention_mask is not None:  # T − 1 − (the padding after the last real token)
                last = last - attention_mask.flip(1).argmax(dim=1)  # (B,)
            pooled = hidden[torch.arange(hidden.size(0), device=hidden.device), last]
        elif self.summary_type == "first":
            pooled = hidden[:, 0]
        else:
            pooled = hidden.mean(dim=1)
        return self.last_dropout(self.activation(self.summary(pooled)))


class XLNetHeadModel(SavePretrained, nn.Module):
    """The bare model under ``transformer`` (transformers' prefix) and the forward arguments every head shares."""

    base_model_prefix = "transformer"

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.config = config
        self.transformer = XLNetModel(config)

    def encode(self, input_ids, attention_mask, token_type_ids, kwargs) -> XLNetModelOutput:
        return self.transformer(input_ids, attention_mask, token_type_ids=token_type_ids, **kwargs)


class XLNetForSequenceClassification(XLNetHeadModel):
    """A K-way classifier (or a regressor, K = 1) on the summary of the last token, <cls>."""

    def __init__(self, config: XLNetConfig):
        super().__init__(config)
        self.sequence_summary = SequenceSummary(config)
        self.logits_proj = nn.Linear(config.d_model, config.num_labels)
        init_xlnet_weights(self, config)

    def forward(
        self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **kwargs
    ) -> XLNetClassifierOutput:
        """input_ids … (B, T); labels (B,) class ids, (B,) floats for regression, (B, K) 0/1 for multi-label;
        ``kwargs``: the bare model's (mems, perm_mask, target_mapping, use_mems, output_*)."""
        out = self.encode(input_ids, attention_mask, token_type_ids, kwargs)
        logits = self.logits_proj(self.sequence_summary(out.last_hidden_state, attention_mask))  # (B, K)
        loss = None
        if labels is not None:
            kind = problem_type_of(self.config.problem_type, self.config.num_labels)
            loss = sequence_classification_loss(logits, labels, kind)
        return XLNetClassifierOutput(loss, logits, out.mems, out.hidden_states, out.attentions)


class XLNetForTokenClassification(XLNetHeadModel):
    """A K-way classifier on every final state."""

    def __init__(self, config: XLNetConfig):
        super().__init__(config)
        self.classifier = nn.Linear(config.d_model, config.num_labels)
        init_xlnet_weights(self, config)

    def forward(
        self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **kwargs
    ) -> XLNetClassifierOutput:
        """labels (B, T): a tag id on each word's first piece, −100 elsewhere (ignored)."""
        out = self.encode(input_ids, attention_mask, token_type_ids, kwargs)
        logits = self.classifier(out.last_hidden_state)  # (B, T, K)
        loss = None if labels is None else token_classification_loss(logits, labels)
        return XLNetClassifierOutput(loss, logits, out.mems, out.hidden_states, out.attentions)


class XLNetForQuestionAnsweringSimple(XLNetHeadModel):
    """A start vector S and an end vector E: the score of a span i … j is S·h_i + E·h_j (BERT's span head)."""

    def __init__(self, config: XLNetConfig):
        super().__init__(config)
        self.qa_outputs = nn.Linear(config.d_model, 2)  # [S; E]
        init_xlnet_weights(self, config)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        start_positions=None,
        end_positions=None,
        **kwargs,
    ) -> XLNetQuestionAnsweringOutput:
        """start_positions, end_positions (B,): the answer's token indices (beyond T: ignored)."""
        out = self.encode(input_ids, attention_mask, token_type_ids, kwargs)
        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).unbind(dim=-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_qa_loss(start_logits, end_logits, start_positions, end_positions)
        return XLNetQuestionAnsweringOutput(
            loss,
            start_logits.contiguous(),
            end_logits.contiguous(),
            out.mems,
            out.hidden_states,
            out.attentions,
        )


class XLNetForMultipleChoice(XLNetHeadModel):
    """Each choice a sequence (context <sep> choice <sep> <cls>), scored w · s_c from its summary; a softmax
    over the C choices."""

    def __init__(self, config: XLNetConfig):
        super().__init__(config)
        self.sequence_summary = SequenceSummary(config)
        self.logits_proj = nn.Linear(config.d_model, 1)  # w
        init_xlnet_weights(self, config)

    def forward(
        self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **kwargs
    ) -> XLNetClassifierOutput:
        """input_ids, attention_mask, token_type_ids (B, C, T): C choices per example; labels (B,)."""
        B, C, T = input_ids.shape

        def flat(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.reshape(B * C, T)  # (B·C, T)

        out = self.encode(flat(input_ids), flat(attention_mask), flat(token_type_ids), kwargs)
        summary = self.sequence_summary(out.last_hidden_state, flat(attention_mask))
        logits = self.logits_proj(summary).view(B, C)  # (B, C)
        loss = None
        if labels is not None:
            loss = sequence_classification_loss(logits, labels, "single_label_classification")
        return XLNetClassifierOutput(loss, logits, out.mems, out.hidden_states, out.attentions)


TASK_CLASSES: dict[str, type[XLNetHeadModel]] = {
    cls.__name__: cls
    for cls in (
        XLNetForSequenceClassification,
        XLNetForTokenClassification,
        XLNetForQuestionAnsweringSimple,
        XLNetForMultipleChoice,
    )
}
