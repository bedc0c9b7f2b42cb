"""RoBERTa: A Robustly Optimized BERT Pretraining Approach (Liu et al., 2019; arXiv:1907.11692).

RoBERTa keeps BERT's architecture (models/bert/model.py) and changes how it is trained: dynamic masking
(Sect. 4.1), no next-sentence prediction — inputs are full sentences packed up to 512 tokens (Sect. 4.2) —,
large batches (Sect. 4.3) and a byte-level BPE of 50K units (Sect. 4.4). What that leaves in the network,
and all this module adds to BERT's:

    input     E = LayerNorm(E_token + E_position + E_type), one token type (no segments: no NSP)
              positions count the real tokens only, past the padding index p (fairseq's numbering):
              pos_i = p + Σ_{j ≤ i} [x_j ≠ p] on real tokens, p on padding — so a left-padded row has
              the same positions as the unpadded one
    MLM head  E_tokenᵀ LayerNorm(GELU(W T_i + b)) + b_out, GELU whatever the encoder's activation
    classify  on the final state of <s>, a hidden layer of its own instead of the pooler:
              logits = W_out tanh(W h_<s> + b) + b_out, dropout before each linear map (fairseq's
              classification head); no pooler, which RoBERTa never trained

The encoder is BertModel with these embeddings; the heads are BERT's (BertHeadModel) keeping the encoder
under ``roberta``, as transformers' RobertaFor* classes do, so their checkpoints map by renaming
(convert.py). Multiple choice keeps the pooler (transformers' RobertaForMultipleChoice does).
"""

from __future__ import annotations

import torch
from torch import nn

from seq2bert.models.bert.model import (
    BertEmbeddings,
    BertForMaskedLM,
    BertModel,
    BertModelOutput,
    init_bert_weights,
)
from seq2bert.models.bert.tasks import (
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    classifier_dropout,
)
from seq2bert.models.roberta.config import RobertaConfig


class RobertaEmbeddings(BertEmbeddings):
    """BERT's input layer with positions numbered past the padding index, and a padding row in the position
    table (it is the position of every pad)."""

    def __init__(self, c: RobertaConfig):
        super().__init__(c)
        self.padding_idx = c.pad_token_id
        self.position_embeddings = nn.Embedding(
            c.max_position_embeddings, c.hidden_size, padding_idx=c.pad_token_id
        )

    def position_ids(self, input_ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """(B, T) → (B, T): p + offset + 1, p + offset + 2, … on the real tokens in order, p on padding."""
        real = input_ids.ne(self.padding_idx).long()  # (B, T): 1 on real tokens
        return (real.cumsum(dim=1) + offset) * real + self.padding_idx


class RobertaModel(BertModel):
    """The encoder: BERT's stack of post-norm layers over RobertaEmbeddings, and (optionally) the pooler."""

    def __init__(self, config: RobertaConfig, add_pooling_layer: bool = True):
        super().__init__(config, add_pooling_layer, embeddings=RobertaEmbeddings(config))


class RobertaHeads:
    """What every RoBERTa head model changes in BERT's: the encoder (RobertaModel, kept under ``roberta``)
    and the masked-LM transform's activation (GELU, as fairseq's RobertaLMHead)."""

    base_model_prefix = "roberta"
    encoder_class = RobertaModel
    mlm_activation = "gelu"


class RobertaForMaskedLM(RobertaHeads, BertForMaskedLM):
    """RoBERTa with its masked-LM head (the whole pretraining objective: no NSP, Sect. 4.2)."""


class RobertaClassificationHead(nn.Module):
    """A hidden tanh layer and the K outputs on the final state of <s>: W_out tanh(W h + b) + b_out."""

    def __init__(self, c: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)  # W, b
        self.dropout = classifier_dropout(c)
        self.out_proj = nn.Linear(c.hidden_size, c.num_labels)  # W_out, b_out

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, T, H) → (B, K)."""
        x = self.dropout(hidden[:, 0])  # h_<s>: (B, H)
        x = self.dropout(torch.tanh(self.dense(x)))
        return self.out_proj(x)


class RobertaForSequenceClassification(RobertaHeads, BertForSequenceClassification):
    """A K-way classifier — or a regressor, K = 1 — on <s> (no pooler): GLUE (Sect. 5.1); BERT's forward,
    another head."""

    def __init__(self, config: RobertaConfig):
        super(BertForSequenceClassification, self).__init__(config, pooler=False)  # TaskModel's: no pooler
        self.classifier = RobertaClassificationHead(config)
        init_bert_weights(self, config)

    def scores(self, out: BertModelOutput) -> torch.Tensor:
        return self.classifier(out.last_hidden_state)  # (B, K)


class RobertaForTokenClassification(RobertaHeads, BertForTokenClassification):
    """A K-way classifier on every final token state (no pooler)."""


class RobertaForQuestionAnswering(RobertaHeads, BertForQuestionAnswering):
    """Start and end vectors over the final token states (SQuAD, Sect. 5.2)."""


class RobertaForMultipleChoice(RobertaHeads, BertForMultipleChoice):
    """A score C · w per choice from the pooled <s> (RACE, Sect. 5.3)."""

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        # transformers' RobertaForMultipleChoice drops out with hidden_dropout_prob, not classifier_dropout
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
