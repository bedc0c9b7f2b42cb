"""BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding (Devlin et al., 2018).

BERT is the Transformer's encoder (Vaswani et al. 2017; seq2bert/nn/layers.py), post-norm with GELU, read
in both directions at once and pretrained on two tasks (section numbers of arXiv:1810.04805v2):

    input   E = LayerNorm(E_token + E_segment + E_position), then dropout             Sect. 3.1, Figure 2
    encoder L × TransformerLayer(H, A heads, 4H feed-forward, GELU), post-norm        Sect. 3
    pooler  tanh(W C + b) on the final state C of [CLS]                               (the released code)
    MLM     predict the 15 % chosen tokens from their final states T_i               Sect. 3.1, Task #1
            logits = E_tokenᵀ LayerNorm(GELU(W T_i + b)) + b_out  (decoder tied to the word embeddings)
    NSP     IsNext / NotNext from the pooled [CLS]: softmax(W_nsp C)                   Sect. 3.1, Task #2

The ablation's "LTR & No NSP" model (Sect. 5.1, Table 5) is the same network read left to right: with
``config.is_decoder`` the stack is causal (position t attends to positions ≤ t) and BertLMHeadModel predicts
token t + 1 from T_t through the MLM head — transformers' BertModel(is_decoder=True) and BertLMHeadModel.

Weights are named and laid out so that Hugging Face checkpoints map one to one (convert.py); outputs carry
transformers' field names. Departure, marked where it happens: ``sparse_prediction`` computes the MLM head
only at the positions that have labels (Geiping & Goldstein 2022), which gives the same loss for far less
work — the dense (B, T, V) logits are what the 15 % of predicted tokens would otherwise be picked from.
For the same reason the last encoder layer then runs its queries, W^O and feed-forward only at those
positions and [CLS] (every position still gives keys and values): nobody reads its other rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.bert.config import BertConfig
from seq2bert.models.decoder_only import DecoderOnlyLM
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.nn.init import normal_init
from seq2bert.nn.layers import LayerCache, TransformerLayer, transformer_layer
from seq2bert.nn.masks import padding_mask
from seq2bert.nn.stack import TransformerStack
from seq2bert.objectives.causal_lm import causal_lm_loss
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.masked_lm import masked_lm_loss
from seq2bert.objectives.next_sentence import next_sentence_loss

log = logging.getLogger(__name__)


@dataclass
class BertModelOutput:
    """transformers' BaseModelOutputWithPooling: (B, T, H), (B, H), per-layer tuples when asked."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class BertForPreTrainingOutput:
    loss: torch.Tensor | None
    prediction_logits: torch.Tensor  # (B, T, V); (N, V) at the N labelled positions with sparse_prediction
    seq_relationship_logits: torch.Tensor  # (B, 2)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None


@dataclass
class MaskedLMOutput:
    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, T, V); (N, V) with sparse_prediction
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class CausalLMOutput:
    """transformers' CausalLMOutputWithCrossAttentions, without the cross-attentions."""

    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, T, V): the logits at t score token t + 1
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class BertEmbeddings(nn.Module):
    """Figure 2: token + segment + (learned) position embeddings, LayerNorm, dropout; of ``size`` E dimensions
    (default: the hidden size H; ALBERT's factorised embeddings and ELECTRA's are smaller, projected to H after
    them). A config with ``type_vocab_size`` 0 has no segments (DistilBERT); a variant embeds its tokens its own
    way in ``token_embeddings`` (MobileBERT's narrow, trigram-projected ones)."""

    def __init__(self, c: BertConfig, size: int | None = None):
        super().__init__()
        E = size or c.hidden_size
        self.word_embeddings = nn.Embedding(c.vocab_size, E, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, E)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, E) if c.type_vocab_size else None
        self.norm = nn.LayerNorm(E, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        *,
        offset: int = 0,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids, token_type_ids (B, T) at ``position_ids`` (B, T) (None: ``position_ids(input_ids,
        offset)``) → (B, T, E)."""
        positions = position_ids if position_ids is not None else self.position_ids(input_ids, offset)
        x = self.token_embeddings(input_ids) + self.position_embeddings(positions)
        if self.token_type_embeddings is not None:  # segment A when none are given
            types = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
            x = x + self.token_type_embeddings(types)
        return self.dropout(self.norm(x))

    def token_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        """E_token: (B, T) → (B, T, E)."""
        return self.word_embeddings(input_ids)

    def position_ids(self, input_ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """The position of each token: offset, offset + 1, … (T,), whatever the padding (a variant numbers
        its positions its own way: RoBERTa's skip the padding)."""
        return torch.arange(offset, offset + input_ids.size(1), device=input_ids.device)


def bert_layer(c: BertConfig, index: int = 0) -> TransformerLayer:
    """One encoder layer: post-norm (BERT normalises after each sub-layer, as the 2017 Transformer), A heads
    (those of layer ``index`` that ``c.pruned_heads`` keeps), the intermediate_size feed-forward with GELU."""
    # (DistilBERT's config, BERT's sizes under its own names, has no pruned heads)
    heads = c.heads_of(index) if isinstance(c, BertConfig) else list(range(c.num_attention_heads))
    layer = transformer_layer(
        c.hidden_size,
        len(heads),
        c.intermediate_size,
        d_k=c.hidden_size // c.num_attention_heads,
        d_v=c.hidden_size // c.num_attention_heads,
        dropout=c.hidden_dropout_prob,
        attention_dropout=c.attention_probs_dropout_prob,
        activation=c.hidden_act,
        norm_first=False,
        eps=c.layer_norm_eps,
    )
    layer.self_attn.heads = heads
    return layer


class BertModel(SavePretrained, TransformerStack):
    """The encoder: a bidirectional stack (seq2bert/nn/stack.py) of L post-norm layers over BertEmbeddings,
    and (optionally) the [CLS] pooler; a causal stack with ``config.is_decoder`` (LTR). A variant passes its
    own ``embeddings`` (B, T) → (B, T, H) (RoBERTa's positions past the padding index; ALBERT's and ELECTRA's
    projected from a smaller embedding size), ``layers`` and their ``order`` (the stack's; ALBERT: layers
    shared across the stack)."""

    # whether the last layer can run at some positions only (``positions``; sparse prediction): layers that
    # are TransformerLayers can (last_layer_at), others (MobileBERT's bottleneck blocks) run at every position
    rows_at_last_layer = True

    def __init__(
        self,
        config: BertConfig,
        add_pooling_layer: bool = True,
        *,
        embeddings: nn.Module | None = None,
        layers: list[TransformerLayer] | None = None,
        order: list[int] | None = None,
    ):
        config.validate()
        c = config
        if embeddings is None:
            embeddings = BertEmbeddings(c)
        if layers is None:
            layers = [bert_layer(c, i) for i in range(c.num_hidden_layers)]
        super().__init__(embeddings, layers, order=order, causal=c.is_decoder)
        self.config = c
        self.pooler = nn.Linear(c.hidden_size, c.hidden_size) if add_pooling_layer else None
        init_bert_weights(self, c)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        *,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        positions: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: list[LayerCache] | None = None,
    ) -> BertModelOutput:
        """input_ids, attention_mask (1 on real tokens), token_type_ids (segment A = 0, B = 1): (B, T).

        ``positions`` (B, Q) long: the last layer computes its output only at these positions (every
        position still attends and is attended to below it), and last_hidden_state is (B, Q, H). The pooler
        reads column 0, which must then be position 0 ([CLS]). See ``prediction_rows``.

        A decoder (``config.is_decoder``) may also be read incrementally, as transformers' is:
        ``past_key_values`` (one LayerCache per layer, ``new_caches()``; grown in place) holds the earlier
        steps, which input_ids follow; attention_mask (B, past + T) covers them too. ``position_ids`` (B, T):
        each token's position (None: past … past + T − 1)."""
        if positions is not None and self.causal:
            raise ValueError("positions: a layer computed at some positions takes no causal mask")
        past = past_key_values[0].self_attn.length if past_key_values else 0
        out = super().forward(
            input_ids,
            attention_mask,  # no token attends to padding (nor, in a decoder, to a later token)
            caches=past_key_values,
            offset=past,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            upto=None if positions is None else self.num_layers - 1,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        x = out.last_hidden_state  # (B, T, H)
        if positions is not None:
            x = last_layer_at(self.layer(self.num_layers - 1), x, padding_mask(attention_mask), positions)
        return BertModelOutput(
            last_hidden_state=x,
            pooler_output=self.pool(x),
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )

    def pool(self, x: torch.Tensor) -> torch.Tensor | None:
        """The pooled output C = tanh(W h_[CLS] + b): (B, T, H) → (B, H); None without a pooler."""
        return torch.tanh(self.pooler(x[:, 0])) if self.pooler is not None else None


def last_layer_at(
    layer: TransformerLayer, x: torch.Tensor, mask: torch.Tensor | None, positions: torch.Tensor
) -> torch.Tensor:
    """A layer's output at some positions only: x (B, T, H), positions (B, Q) → (B, Q, H).

    Every position still gives keys and values; the queries, W^O and the feed-forward run on Q rows, not T
    — for a last layer most of whose outputs nobody reads (the masked LM reads the 15 % predicted tokens).
    ``mask`` must be a padding mask (B, 1, 1, T): it is shared by every query."""
    if mask is not None and mask.size(-2) != 1:
        raise ValueError("a layer computed at some positions takes a padding mask (B, 1, 1, T)")
    keys = layer.self_attn_sublayer.norm(x) if layer.norm_first else x  # what the queries' rows see
    rows = x.gather(1, positions.unsqueeze(-1).expand(-1, -1, x.size(-1)))  # (B, Q, H)
    rows = layer.self_attn_sublayer(rows, lambda y: layer.self_attn(y, keys, mask)[0])
    return layer.ffn_sublayer(rows, layer.feed_forward)


class MaskedLMHead(nn.Module):
    """Task #1's output layer: a GELU transform with LayerNorm, then the word embeddings (tied) plus a bias.

    The transform maps H to the word embeddings' size E (H in BERT; ALBERT's and ELECTRA's generator's, E); its
    activation is ``activation`` (default: the encoder's hidden_act; ELECTRA's generator and RoBERTa always
    use GELU)."""

    def __init__(self, c: BertConfig, word_embeddings: nn.Embedding, activation: str | None = None):
        super().__init__()
        E = word_embeddings.embedding_dim
        self.dense = nn.Linear(c.hidden_size, E)
        self.act = ACTIVATIONS[activation or c.hidden_act]
        self.norm = nn.LayerNorm(E, eps=c.layer_norm_eps)
        self.decoder = nn.Linear(E, c.vocab_size)
        self.decoder.weight = word_embeddings.weight  # tied: the output embedding is the input embedding

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(…, H) → (…, E) → (…, V)."""
        return self.decoder(self.norm(self.act(self.dense(hidden))))


def prediction_rows(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The positions whose final state the pretraining heads read, for ``BertModel(positions=…)``: [CLS]
    (position 0, for NSP) then each row's labelled positions in order, (B, Q) with Q = 1 + the most labels
    in a row (shorter rows filled with unlabelled positions); and the labels at them (B, Q), IGNORE_INDEX
    where nothing is predicted. With 15 % of 128 positions labelled, the last layer runs on ~20 rows of 128.
    """
    labelled = labels.ne(IGNORE_INDEX)  # (B, T)
    q = int(labelled.sum(1).max())
    first = torch.sort(labelled.to(torch.uint8), dim=1, descending=True, stable=True)  # labelled first
    where, taken = first.indices[:, :q], first.values[:, :q].bool()  # (B, q)
    at = torch.where(taken, labels.gather(1, where), IGNORE_INDEX)
    cls = torch.zeros_like(where[:, :1])
    return torch.cat([cls, where], 1), torch.cat([torch.full_like(at[:, :1], IGNORE_INDEX), at], 1)


def sparse_rows(labels: torch.Tensor | None, sparse: bool, *outputs: bool):
    """``prediction_rows(labels)`` when only the labelled positions' final states are read (sparse
    prediction, no per-layer outputs asked for), else (None, labels)."""
    if sparse and labels is not None and not any(outputs):
        return prediction_rows(labels)
    return None, labels


def masked_lm(head: MaskedLMHead, hidden: torch.Tensor, labels: torch.Tensor | None, sparse: bool):
    """(logits, loss) of the MLM head; ``sparse``: only at labelled positions, logits (N, V), in the order
    of the rows of ``labels`` (B, T), or of ``prediction_rows``' labels (B, Q) with hidden (B, Q, H)."""
    if sparse and labels is not None:
        where = labels.ne(IGNORE_INDEX)  # (B, T), or (B, Q)
        logits = head(hidden[where])  # (N, V)
        targets = labels[where]
    else:
        logits = head(hidden)  # (B, T, V)
        targets = labels
    loss = None
    if labels is not None:
        loss = masked_lm_loss(logits, targets)  # Task #1
    return logits, loss


def encode_and_predict(
    encoder: BertModel,
    head: MaskedLMHead,
    input_ids,
    attention_mask,
    token_type_ids,
    labels,
    sparse: bool,
    *outputs: bool,
) -> tuple[BertModelOutput, torch.Tensor, torch.Tensor | None]:
    """The ``encoder`` — its last layer only at the predicted positions with ``sparse`` — and the MLM
    ``head``: (encoder output, logits, MLM loss). ``outputs``: output_hidden_states, output_attentions."""
    rows, labels = sparse_rows(labels, sparse and encoder.rows_at_last_layer, *outputs)
    hidden_states, attentions = outputs
    out = encoder(
        input_ids,
        attention_mask,
        token_type_ids,
        output_hidden_states=hidden_states,
        output_attentions=attentions,
        positions=rows,
    )
    logits, loss = masked_lm(head, out.last_hidden_state, labels, sparse)
    return out, logits, loss


class BertHeadModel(SavePretrained, nn.Module):
    """A model with heads on the encoder, which it keeps under ``base_model_prefix`` (a variant sets its own
    prefix and ``encoder_class``: RoBERTa's heads keep a RobertaModel under ``roberta``)."""

    base_model_prefix = "bert"
    encoder_class: type[BertModel] = BertModel
    mlm_activation: str | None = None  # the MLM transform's activation (None: hidden_act)

    def __init__(self, config: BertConfig, *, pooler: bool):
        super().__init__()
        self.config = config
        setattr(self, self.base_model_prefix, self.encoder_class(config, add_pooling_layer=pooler))

    @property
    def base_model(self) -> BertModel:
        """The encoder (transformers' name for it)."""
        return getattr(self, self.base_model_prefix)

    def masked_lm_head(self) -> MaskedLMHead:
        return MaskedLMHead(self.config, self.base_model.embeddings.word_embeddings, self.mlm_activation)


class BertForPreTraining(BertHeadModel):
    """BERT with both pretraining heads; loss = MLM loss + NSP loss (as the released code and transformers)."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=True)
        self.mlm = self.masked_lm_head()
        self.nsp = nn.Linear(config.hidden_size, 2)  # IsNext = 0, NotNext = 1 (transformers' convention)
        init_bert_weights(self, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        next_sentence_label: torch.Tensor | None = None,
        *,
        sparse_prediction: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> BertForPreTrainingOutput:
        """labels (B, T): the original token at predicted positions, −100 elsewhere; next_sentence_label (B,).

        ``sparse_prediction``: the MLM head runs only at the labelled positions, and so does the last layer
        (``prediction_rows``) unless per-layer outputs are asked for; same loss, logits (N, V)."""
        out, logits, mlm_loss = encode_and_predict(
            self.base_model,
            self.mlm,
            input_ids,
            attention_mask,
            token_type_ids,
            labels,
            sparse_prediction,
            output_hidden_states,
            output_attentions,
        )
        nsp_logits = self.nsp(out.pooler_output)  # (B, 2)
        nsp_loss = (
            None if next_sentence_label is None else next_sentence_loss(nsp_logits, next_sentence_label)
        )
        losses = [x for x in (mlm_loss, nsp_loss) if x is not None]
        return BertForPreTrainingOutput(
            loss=sum(losses) if losses else None,
            prediction_logits=logits,
            seq_relationship_logits=nsp_logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
            mlm_loss=mlm_loss,
            nsp_loss=nsp_loss,
        )


class BertForMaskedLM(BertHeadModel):
    """BERT with the masked-LM head only (no pooler), for fill-mask."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=False)
        self.mlm = self.masked_lm_head()
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
        """As BertForPreTraining.forward, without NSP."""
        out, logits, loss = encode_and_predict(
            self.base_model,
            self.mlm,
            input_ids,
            attention_mask,
            token_type_ids,
            labels,
            sparse_prediction,
            output_hidden_states,
            output_attentions,
        )
        return MaskedLMOutput(loss, logits, out.hidden_states, out.attentions)


class BertLMHeadModel(DecoderOnlyLM, BertHeadModel):
    """The "LTR & No NSP" model (Sect. 5.1, Table 5): BERT's stack read left to right (``config.is_decoder``) predicting
    token t + 1 from its final state T_t through Task #1's output layer (the MLM head, ``cls.predictions``),
    no pooler — transformers' BertLMHeadModel. It generates as the GPTs do (models/decoder_only.py): the
    protocol's ``transformer`` is the encoder and its ``lm_head`` the MLM head."""

    def __init__(self, config: BertConfig):
        super().__init__(config, pooler=False)
        if not config.is_decoder:  # as transformers warns: the stack then reads both ways
            log.warning("BertLMHeadModel with is_decoder false: its stack is bidirectional")
        self.mlm = self.masked_lm_head()
        init_bert_weights(self, config)

    @property
    def transformer(self) -> BertModel:
        return self.base_model

    @property
    def lm_head(self) -> MaskedLMHead:
        return self.mlm

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        past_key_values: list[LayerCache] | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        loss_only: bool = False,
    ) -> CausalLMOutput:
        """input_ids … (B, T) → logits (B, T, V); ``labels`` (B, T): the input ids (−100 where ignored), shifted
        as transformers does — the logits at t are scored against labels[:, t + 1] (objectives/causal_lm.py).
        ``loss_only`` (the causal-LM pretraining asks for it) changes nothing: the MLM transform stands between
        the final states and the tied output layer, so the logits are built either way."""
        del loss_only
        out = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids=position_ids,
            past_key_values=past_key_values,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        logits = self.mlm(out.last_hidden_state)  # (B, T, V)
        loss = None if labels is None else causal_lm_loss(logits, labels)
        return CausalLMOutput(loss, logits, out.hidden_states, out.attentions)


def init_bert_weights(model: nn.Module, c: BertConfig) -> None:
    """The released code's initialisation: N(0, initializer_range) weights (truncated there, plain normal in
    transformers), zero biases, LayerNorm at (1, 0), a zero padding embedding (set last: the MLM decoder
    shares the word embedding matrix)."""
    normal_init(model, c.initializer_range)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()
