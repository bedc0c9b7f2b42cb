"""DistilBERT, a distilled version of BERT: smaller, faster, cheaper and lighter (Sanh et al. 2019,
arXiv:1910.01108).

"The student — DistilBERT — has the same general architecture as BERT. The token-type embeddings and the
pooler are removed while the number of layers is reduced by a factor of 2" (Sect. 3). So it is BERT's
encoder (models/bert/model.py) with another input layer and shallower, composed here from BERT's modules:

    input     E = LayerNorm(E_token + E_position), then dropout — no segments; positions learned, or the
              fixed sinusoids of Vaswani et al. (2017, Sect. 3.5) with ``sinusoidal_pos_embds``
    encoder   L/2 × BERT's post-norm layer (A heads, GELU feed-forward); no pooler
    MLM       logits = E_tokenᵀ LayerNorm(act(W T_i + b)) + b_out: BERT's head (vocab_transform → act →
              vocab_layer_norm → vocab_projector, tied to the word embeddings)
    classify  on the final [CLS] state h, a hidden ReLU layer of its own in place of the pooler:
              logits = W_out Dropout(ReLU(W h + b)) + b_out   (pre_classifier, classifier)
    tokens    BERT's tagger; spans BERT's start / end vectors after a dropout of their own (qa_dropout)

Departure from BERT's layer, marked where it happens: the attention's output is added to the residual
without dropout (the released code's TransformerBlock); the feed-forward's has it. The model takes
``token_type_ids`` as BERT's does, so that generic callers may pass them, and ignores them.

Class names, outputs and checkpoint layout are transformers' (DistilBertModel, DistilBertForMaskedLM, …;
convert.py). The distillation itself — the triple loss of Sect. 3 — is an objective, not a model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models.bert.model import (
    BertEmbeddings,
    BertForMaskedLM,
    BertModel,
    BertModelOutput,
    bert_layer,
    init_bert_weights,
)
from seq2bert.models.bert.tasks import (
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from seq2bert.models.distilbert.config import DistilBertConfig
from seq2bert.nn.embeddings import SinusoidalPositionalEncoding
from seq2bert.nn.layers import TransformerLayer


class DistilBertEmbeddings(BertEmbeddings):
    """BERT's input layer without segments (type_vocab_size 0); positions learned, or sinusoidal (kept with
    the weights, as transformers' checkpoints store the table, and never trained: the released code froze it)."""

    def __init__(self, c: DistilBertConfig):
        super().__init__(c)
        if c.sinusoidal_pos_embds:
            self.position_embeddings = SinusoidalPositionalEncoding(
                c.dim, c.max_position_embeddings, persistent=True
            )


def distilbert_layer(c: DistilBertConfig) -> TransformerLayer:
    """BERT's layer of DistilBERT's sizes; departure from BERT: no dropout on the attention's output."""
    layer = bert_layer(c)
    layer.self_attn_sublayer.dropout = nn.Identity()  # the released code: LayerNorm(attention(x) + x)
    return layer


class DistilBertModel(BertModel):
    """The encoder: n_layers of BERT's stack over DistilBertEmbeddings, no pooler."""

    def __init__(
        self, config: DistilBertConfig, add_pooling_layer: bool = False
    ):  # the heads' protocol: never
        config.validate()
        layers = [distilbert_layer(config) for _ in range(config.n_layers)]
        super().__init__(config, False, embeddings=DistilBertEmbeddings(config), layers=layers)


class DistilBertHeads:
    """What every DistilBERT head model changes in BERT's: the encoder (no pooler), kept under ``distilbert``."""

    base_model_prefix = "distilbert"
    encoder_class = DistilBertModel


class DistilBertForMaskedLM(DistilBertHeads, BertForMaskedLM):
    """The student's masked LM (its own loss, one of the triple loss's three, Sect. 3): BERT's head, whose
    transform's activation is the encoder's."""


class FirstTokenClassifier:
    """Sequences and choices: the final [CLS] state h through pre_classifier, ReLU and dropout, then K outputs."""

    def first_token_head(self, config: DistilBertConfig, outputs: int) -> None:
        self.pre_classifier = nn.Linear(config.dim, config.dim)  # W, b
        self.dropout = nn.Dropout(config.seq_classif_dropout)
        self.classifier = nn.Linear(config.dim, outputs)  # W_out, b_out
        init_bert_weights(self, config)

    def scores(self, out: BertModelOutput) -> torch.Tensor:
        """(B, T, H) → (B, K): W_out Dropout(ReLU(W h + b)) + b_out."""
        h = out.last_hidden_state[:, 0]  # (B, H)
        return self.classifier(self.dropout(F.relu(self.pre_classifier(h))))


class DistilBertForSequenceClassification(
    DistilBertHeads, FirstTokenClassifier, BertForSequenceClassification
):
    """A K-way classifier (or a regressor, K = 1) on the final [CLS] state: BERT's forward, another head."""

    def __init__(self, config: DistilBertConfig):
        super(BertForSequenceClassification, self).__init__(config, pooler=False)  # TaskModel's
        self.first_token_head(config, config.num_labels)


class DistilBertForMultipleChoice(DistilBertHeads, FirstTokenClassifier, BertForMultipleChoice):
    """A score per choice from its final [CLS] state, a softmax over the choices: BERT's forward."""

    def __init__(self, config: DistilBertConfig):
        super(BertForMultipleChoice, self).__init__(config, pooler=False)  # TaskModel's
        self.first_token_head(config, 1)


class DistilBertForTokenClassification(DistilBertHeads, BertForTokenClassification):
    """BERT's tagger on every final token state, after dropout (DistilBERT's ``dropout``)."""


class DistilBertForQuestionAnswering(DistilBertHeads, BertForQuestionAnswering):
    """BERT's span start and end vectors, after a dropout of their own (qa_dropout)."""

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.dropout = nn.Dropout(config.qa_dropout)

    def spans(self, out: BertModelOutput) -> torch.Tensor:
        return self.qa_outputs(self.dropout(out.last_hidden_state))  # (B, T, 2)


TASK_CLASSES = {
    cls.__name__: cls
    for cls in (
        DistilBertForSequenceClassification,
        DistilBertForTokenClassification,
        DistilBertForQuestionAnswering,
        DistilBertForMultipleChoice,
    )
}
