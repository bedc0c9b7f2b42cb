"""ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators (Clark et al. 2020,
arXiv:2003.10555).

Two BERT encoders (seq2bert/models/bert/model.py) trained together (Sect. 2, Figure 2):

    embeddings   BERT's token + segment + position embeddings, of size E, projected to H when E ≠ H
                 ("embeddings_project"); shared by the generator and the discriminator        Sect. 3.2
    generator G  a small masked LM: p_G(x_t | x) = softmax(e(x_t)ᵀ h_G(x)_t)                  Eq. 1
                 its head: LayerNorm(GELU(W h)) (H_G → E), then the tied word embeddings + a bias
    discriminator D   for every position t, is x̃_t the original token or a replacement?
                 D(x, t) = sigmoid(wᵀ GELU(W h_D(x)_t))   (two dense layers, hidden_act)     Eq. 2

The losses (L_MLM + λ L_Disc, the sampling in between) are objectives/replaced_token_detection.py; the pair
trained together is pretrainer.py. Fine-tuning reads the discriminator (tasks.py). Class names, outputs and
checkpoint layout are transformers' (ElectraModel, ElectraForPreTraining, ElectraForMaskedLM; convert.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.bert.model import (
    BertEmbeddings,
    BertModel,
    MaskedLMHead,
    MaskedLMOutput,
    encode_and_predict,
    init_bert_weights,
)
from seq2bert.models.electra.config import ElectraConfig
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.objectives.replaced_token_detection import replaced_token_detection_loss


@dataclass
class ElectraForPreTrainingOutput:
    """transformers' ElectraForPreTrainingOutput: one score per token, (B, T) — > 0: "replaced"."""

    loss: torch.Tensor | None
    logits: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class ElectraEmbeddings(BertEmbeddings):
    """BERT's embeddings of size E, then (E ≠ H) a linear map to H: (B, T) → (B, T, H)."""

    def __init__(self, c: ElectraConfig):
        super().__init__(c, size=c.embedding_size)
        self.project = (
            nn.Linear(c.embedding_size, c.hidden_size) if c.embedding_size != c.hidden_size else None
        )

    def forward(self, input_ids, token_type_ids=None, *, offset: int = 0, position_ids=None) -> torch.Tensor:
        x = super().forward(input_ids, token_type_ids, offset=offset, position_ids=position_ids)  # (B, T, E)
        return x if self.project is None else self.project(x)  # (B, T, H)


class ElectraModel(BertModel):
    """The encoder of either network: BERT's stack over ElectraEmbeddings, without a pooler."""

    def __init__(
        self, config: ElectraConfig, add_pooling_layer: bool = False
    ):  # the heads' protocol: never one
        super().__init__(config, add_pooling_layer=False, embeddings=ElectraEmbeddings(config))


class DiscriminatorHead(nn.Module):
    """Eq. 2: the score of "replaced" at every position, wᵀ act(W h_t) — (B, T, H) → (B, T)."""

    def __init__(self, c: ElectraConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)  # W
        self.act = ACTIVATIONS[c.hidden_act]
        self.dense_prediction = nn.Linear(c.hidden_size, 1)  # w (and a bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(self.act(self.dense(hidden))).squeeze(-1)


class ElectraForPreTraining(SavePretrained, nn.Module):
    """The discriminator D: the encoder and the replaced-token-detection head."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.config = config
        self.electra = ElectraModel(config)
        self.rtd = DiscriminatorHead(config)
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
    ) -> ElectraForPreTrainingOutput:
        """input_ids … (B, T) — the corrupted input x̃; labels (B, T): 1 where x̃_t was replaced, else 0.
        Loss: L_Disc, the binary cross-entropy over the real (not padding) positions."""
        out = self.electra(
            input_ids,
            attention_mask,
            token_type_ids,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        logits = self.rtd(out.last_hidden_state)  # (B, T)
        loss = None if labels is None else replaced_token_detection_loss(logits, labels, attention_mask)
        return ElectraForPreTrainingOutput(loss, logits, out.hidden_states, out.attentions)


class ElectraForMaskedLM(SavePretrained, nn.Module):
    """The generator G: the encoder and BERT's MLM head mapping H to E, GELU, tied to the word embeddings."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.config = config
        self.electra = ElectraModel(config)
        self.mlm = MaskedLMHead(config, self.electra.embeddings.word_embeddings, activation="gelu")
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        *,
        sparse_prediction: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> MaskedLMOutput:
        """labels (B, T): the original token at masked positions, −100 elsewhere. ``sparse_prediction``: the
        head, and the last layer, only at the labelled positions, logits (N, V) (the same loss), as BERT's."""
        out, logits, loss = encode_and_predict(
            self.electra,
            self.mlm,
            input_ids,
            attention_mask,
            token_type_ids,
            labels,
            sparse_prediction,
            output_hidden_states,
            output_attentions,
        )  # Eq. 1
        return MaskedLMOutput(loss, logits, out.hidden_states, out.attentions)
