"""ALBERT: A Lite BERT for Self-supervised Learning of Language Representations (Lan et al. 2019).

ALBERT is BERT (seq2bert/models/bert/) with three changes, composed here from BERT's modules rather than
copied (section numbers of arXiv:1909.11942v6):

    factorised embeddings   the vocabulary is embedded in E dimensions and projected to the hidden size:
                            O(V × H) parameters become O(V × E + E × H), E ≪ H                  Sect. 3.1
                            x_0 = W_proj LayerNorm(E_token + E_segment + E_position) + b
    cross-layer sharing     "share all parameters across layers": one layer applied L times (nn/stack.py);
                            transformers' groups (G groups of k layers) and our attention-only /
                            feed-forward-only variants (Table 4) as config.py describes     Sect. 3.1
    sentence-order prediction  SOP in place of NSP: "two consecutive segments from the same document"
                            as positives, "the same two consecutive segments but with their order
                            swapped" as negatives; the same 2-way classifier on the pooled [CLS] and the
                            same loss (objectives/next_sentence.py)                          Sect. 3.1

    MLM     logits = E_tokenᵀ LayerNorm(GELU(W T_i + b)) + b_out: BERT's head, its transform mapping H to E
            so that the decoder is the (tied) E-dimensional word embedding matrix

Everything else is BERT's: post-norm layers, the tanh pooler on [CLS], the initialisation, the task heads
(models/bert/tasks.py, here with the ALBERT encoder under ``albert``) and ``sparse_prediction``.
Departure, marked: transformers' ALBERT applies no dropout to the feed-forward output (the released code
does, and so do we, as BERT); ALBERT is trained without dropout, so outputs are equal in both modes it has.
Weights map one to one to transformers' (convert.py); outputs carry transformers' field names.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.albert.config import AlbertConfig
from seq2bert.models.bert.model import (
    BertEmbeddings,
    BertForMaskedLM,
    BertModel,
    MaskedLMHead,
    bert_layer,
    encode_and_predict,
    init_bert_weights,
)
from seq2bert.models.bert.tasks import (
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    classifier_dropout,
)
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.layers import TransformerLayer
from seq2bert.objectives.next_sentence import next_sentence_loss


@dataclass
class AlbertForPreTrainingOutput:
    """transformers' AlbertForPreTrainingOutput (and the two losses apart)."""

    loss: torch.Tensor | None
    prediction_logits: torch.Tensor  # (B, T, V); (N, V) at the N labelled positions with sparse_prediction
    sop_logits: torch.Tensor  # (B, 2)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    mlm_loss: torch.Tensor | None = None
    sop_loss: torch.Tensor | None = None


class FactorisedEmbeddings(BertEmbeddings):
    """Sect. 3.1: "we first project them into a lower dimensional embedding space of size E, and then
    project it to the hidden space": BERT's embeddings (token + segment + position, LayerNorm, dropout) in E
    dimensions, then a linear map E → H."""

    def __init__(self, c: AlbertConfig):
        super().__init__(c, size=c.embedding_size)
        self.projection = nn.Linear(c.embedding_size, c.hidden_size)  # E → H

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        *,
        offset: int = 0,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids, token_type_ids (B, T) → (B, T, H)."""
        x = super().forward(input_ids, token_type_ids, offset=offset, position_ids=position_ids)  # (B, T, E)
        return self.projection(x)  # → (B, T, H)


def albert_layers(c: AlbertConfig) -> tuple[list[TransformerLayer], list[int]]:
    """The layer modules and the module that computes each of the L·k layers (TransformerStack's order).

    share="all": G groups of k layers; layer ℓ of L belongs to group g = ⌊ℓ·G/L⌋, which applies its k layers
    in turn — the module of group g's j-th layer is g·k + j (with G = k = 1: one layer applied L times).
    "attention" / "ffn": L layers, every one of them computing with the first layer's attention (W^Q, W^K,
    W^V, W^O) or feed-forward network (W_1, W_2). "none": L layers of their own."""
    L, G, k = c.num_hidden_layers, c.num_hidden_groups, c.inner_group_num
    if c.share == "all":
        order = [(i * G // L) * k + j for i in range(L) for j in range(k)]
        return [bert_layer(c) for _ in range(G * k)], order
    layers = [bert_layer(c) for _ in range(L)]
    for layer in layers[1:]:
        if c.share == "attention":
            layer.self_attn = layers[0].self_attn
        elif c.share == "ffn":
            layer.feed_forward = layers[0].feed_forward
    return layers, list(range(L))


class AlbertModel(BertModel):
    """BERT's encoder (the stack, the pooler, the forward) over factorised embeddings and shared layers."""

    def __init__(self, config: AlbertConfig, add_pooling_layer: bool = True):
        config.validate()
        layers, order = albert_layers(config)
        embeddings = FactorisedEmbeddings(config)
        super().__init__(config, add_pooling_layer, embeddings=embeddings, layers=layers, order=order)


class SentenceOrderHead(nn.Module):
    """Sect. 3.1, SOP: in order (0) or swapped (1) from the pooled [CLS] state C: W_sop Dropout(C) + b.
    Two outputs always (transformers sizes it by num_labels, which is 2 in every pretraining config)."""

    def __init__(self, c: AlbertConfig):
        super().__init__()
        self.dropout = classifier_dropout(c)
        self.classifier = nn.Linear(c.hidden_size, 2)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        """(B, H) → (B, 2)."""
        return self.classifier(self.dropout(pooled))


class AlbertForPreTraining(SavePretrained, nn.Module):
    """ALBERT with both pretraining heads; loss = MLM loss + SOP loss (as the released code and transformers)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.config = config
        self.albert = AlbertModel(config)
        self.mlm = MaskedLMHead(config, self.albert.embeddings.word_embeddings)
        self.sop = SentenceOrderHead(config)
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        sentence_order_label: torch.Tensor | None = None,
        *,
        sparse_prediction: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> AlbertForPreTrainingOutput:
        """labels (B, T): the original token at predicted positions, −100 elsewhere; sentence_order_label
        (B,): 0 the segments in order, 1 swapped. ``sparse_prediction`` as BertForPreTraining's."""
        out, logits, mlm_loss = encode_and_predict(
            self.albert,
            self.mlm,
            input_ids,
            attention_mask,
            token_type_ids,
            labels,
            sparse_prediction,
            output_hidden_states,
            output_attentions,
        )
        sop_logits = self.sop(out.pooler_output)  # (B, 2)
        sop_loss = None
        if sentence_order_label is not None:  # NSP's loss: only the making of the pairs differs
            sop_loss = next_sentence_loss(sop_logits, sentence_order_label)
        losses = [x for x in (mlm_loss, sop_loss) if x is not None]
        return AlbertForPreTrainingOutput(
            loss=sum(losses) if losses else None,
            prediction_logits=logits,
            sop_logits=sop_logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
            mlm_loss=mlm_loss,
            sop_loss=sop_loss,
        )


class AlbertForMaskedLM(BertForMaskedLM):
    """ALBERT with the masked-LM head only (no pooler), for fill-mask: BERT's, on the ALBERT encoder (the
    head maps H into the embedding size E, whose tied output embedding it reads)."""

    encoder_class, base_model_prefix = AlbertModel, "albert"


# BERT's fine-tuning heads (Figure 4; models/bert/tasks.py) on the ALBERT encoder
class AlbertForSequenceClassification(BertForSequenceClassification):
    """A K-way classifier (or a regressor) on the pooled [CLS] state."""

    encoder_class, base_model_prefix = AlbertModel, "albert"


class AlbertForTokenClassification(BertForTokenClassification):
    """A K-way classifier on every final token state."""

    encoder_class, base_model_prefix = AlbertModel, "albert"


class AlbertForQuestionAnswering(BertForQuestionAnswering):
    """Span start and end scores S·T_i, E·T_j."""

    encoder_class, base_model_prefix = AlbertModel, "albert"


class AlbertForMultipleChoice(BertForMultipleChoice):
    """A score C · w for each choice, a softmax over the choices."""

    encoder_class, base_model_prefix = AlbertModel, "albert"


TASK_CLASSES = {
    cls.__name__: cls
    for cls in (
        AlbertForSequenceClassification,
        AlbertForTokenClassification,
        AlbertForQuestionAnswering,
        AlbertForMultipleChoice,
    )
}
