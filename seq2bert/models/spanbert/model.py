"""SpanBERT: Improving Pre-training by Representing and Predicting Spans (Joshi et al. 2019, arXiv:1907.10529v3).

SpanBERT is BERT's encoder and masked-LM head (models/bert/model.py) pretrained differently:

    span masking            contiguous spans of whole words, ℓ ~ Geo(0.2) clipped at 10, masked as units
                            (data/masking.py, ``data.masking_strategy=span``)                   Sect. 3.1
    span-boundary objective each span token predicted from the span's boundary states and its relative
                            position (objectives/span_boundary.py), added to the MLM loss       Sect. 3.2
    single segments         one contiguous segment of up to 512 tokens, no NSP
                            (``data.sentence_task=none``)                                        Sect. 3.3

How it plugs in — a family, not a model option: ``--set model.model_type=spanbert`` picks the small family
record of pretrained.py, whose config is BERT's plus the SBO's position table and whose pretraining model is
``SpanBertForPreTraining`` below; the family's defaults are span masking and no sentence task. A flag on
BERT's config would have put a pretraining-only head into BERT's checkpoints and config; a family keeps
BERT untouched and lets the record say how its checkpoints are written. They are BERT's: config.json says
``"model_type": "bert"`` and ``BertForMaskedLM`` (the SBO head is used only in pretraining, as in the
released models), and the SBO head's weights are kept beside, in span_boundary.safetensors, for resuming.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from seq2bert.models.bert.model import BertHeadModel, init_bert_weights, masked_lm
from seq2bert.models.spanbert.config import SpanBertConfig
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.span_boundary import SpanBoundaryHead, span_boundary_loss


@dataclass
class SpanBertForPreTrainingOutput:
    loss: torch.Tensor | None
    prediction_logits: torch.Tensor  # (B, T, V); (N, V) at the N labelled positions with sparse_prediction
    sbo_logits: torch.Tensor | None = None  # (N, V) at the N span tokens
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    mlm_loss: torch.Tensor | None = None
    sbo_loss: torch.Tensor | None = None


class SpanBertForPreTraining(BertHeadModel):
    """BERT's encoder (no pooler: nothing reads [CLS] without NSP), the MLM head and the SBO head, both
    scoring with the same output embedding (tied to the input embeddings); loss = L_MLM + L_SBO (Eq. 3)."""

    def __init__(self, config: SpanBertConfig):
        super().__init__(config, pooler=False)
        self.mlm = self.masked_lm_head()
        self.sbo = SpanBoundaryHead(
            config.hidden_size, config.span_positions, layer_norm_eps=config.layer_norm_eps
        )
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        span_left: torch.Tensor | None = None,
        span_right: torch.Tensor | None = None,
        span_position: torch.Tensor | None = None,
        *,
        sparse_prediction: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> SpanBertForPreTrainingOutput:
        """labels (B, T): the original token at masked positions, −100 elsewhere; span_left, span_right,
        span_position (B, T): at each masked position the positions s − 1 and e + 1 of its span and i − s
        (objectives/span_boundary.py, ``boundary_targets``). The encoder runs at every position (the SBO
        reads the boundaries, which are not predicted); ``sparse_prediction``: the MLM head at the labelled
        positions only."""
        out = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        hidden = out.last_hidden_state  # (B, T, H)
        logits, mlm_loss = masked_lm(self.mlm, hidden, labels, sparse_prediction)
        sbo_logits = sbo_loss = None
        if labels is not None and span_left is not None:
            where = labels.ne(IGNORE_INDEX)  # (B, T): the span tokens x_i
            row = where.nonzero()[:, 0]  # (N,): the instance of each
            left = hidden[row, span_left[where]]  # (N, H): x_{s−1}
            right = hidden[row, span_right[where]]  # (N, H): x_{e+1}
            y = self.sbo(left, right, span_position[where])  # Eq. 2: (N, H)
            sbo_logits = self.mlm.decoder(y)  # (N, V): the output embedding, as the MLM head's
            sbo_loss = span_boundary_loss(sbo_logits, labels[where])
        losses = [x for x in (mlm_loss, sbo_loss) if x is not None]  # Eq. 3
        return SpanBertForPreTrainingOutput(
            loss=sum(losses) if losses else None,
            prediction_logits=logits,
            sbo_logits=sbo_logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
            mlm_loss=mlm_loss,
            sbo_loss=sbo_loss,
        )
