"""MobileBERT: a Compact Task-Agnostic BERT for Resource-Limited Devices (Sun et al. 2020, arXiv:2004.02984).

MobileBERT is as deep as BERT-large (24 blocks) and thin: each block works at a narrow width B inside
("bottleneck") and the wide width H = 512 outside, so that it can be taught layer by layer by a wide teacher
(Sect. 3.1, Figure 1 (c)). Section numbers of arXiv:2004.02984v2:

    input       e_t = W_emb [E e_{t+1}; E e_t; E e_{t−1}] (E = embedding_size, the word table's width; the
                "trigram" input, a 1-D convolution of kernel 3 written as one linear map), then BERT's
                position and segment embeddings (H wide), Norm, dropout                          Sect. 3.5
    block       b = Norm(W_in x + c_in)                   bottleneck input projection, H → B     Sect. 3.1
                a = Norm(b + MHA(Q, K, V))                Q, K, V as config.py's flags say:
                                                          all from b (use_bottleneck_attention); Q = K from
                                                          a second projection of x, V = x (key_query_shared);
                                                          else all from x
                a = Norm(a + FFN_i(a)),  i = 1 … F        stacked feed-forward networks         Sect. 3.3
                y = Norm(x + W_out a + c_out)             bottleneck output projection, B → H   Sect. 3.1
    NoNorm      NoNorm(h) = γ ∘ h + β  in place of LayerNorm ("no_norm")                         Sect. 3.5
    MLM         logits = [E_wordᵀ; W_extra]ᵀ LayerNorm(act(W T_i + b)) + b_out: the decoder is the E-wide
                word table (tied) with H − E more columns of its own (``cls.predictions.dense``)
    NSP, tasks  BERT's: the pooled [CLS] (tanh layer, or the state itself without classifier_activation)

Composed from BERT's modules (models/bert/): the stack, embeddings, pooler and every head class are BERT's;
the blocks are built here from nn/'s residual sub-layer (SublayerConnection, post-norm, its norm swapped for
NoNorm), feed-forward network and scaled dot-product attention. Departures, marked where they happen, are
transformers' (the layout every checkpoint has): no dropout on the attention's or the stacked networks'
outputs in a bottleneck block; the embeddings' and the last feed-forward network's LayerNorms use torch's
ε = 1e-5 rather than layer_norm_eps; the input projection is kept, unused, when there is nothing to project
(no trigram, E = H). Sparse prediction runs the MLM head at the labelled positions only, never the last block.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models.bert.model import BertEmbeddings, BertForMaskedLM, BertForPreTraining, BertModel
from seq2bert.models.bert.tasks import (
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from seq2bert.models.mobilebert.config import MobileBertConfig
from seq2bert.nn.feed_forward import ACTIVATIONS, PositionwiseFeedForward
from seq2bert.nn.layers import LayerOutput, SublayerConnection
from seq2bert.nn.multihead import attend_at, scaled_dot_product_attention
from seq2bert.nn.positions import AttentionPositions, Positions
from seq2bert.nn.sesame import seen_keys

TORCH_EPS = 1e-5  # nn.LayerNorm's default, which transformers' MobileBERT leaves in two places


class NoNorm(nn.Module):
    """Sect. 3.5: NoNorm(h) = γ ∘ h + β — LayerNorm's affine map without the normalisation, (…, d) → (…, d)."""

    def __init__(self, size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))  # γ
        self.bias = nn.Parameter(torch.zeros(size))  # β

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h * self.weight + self.bias


def norm(c: MobileBertConfig, size: int, eps: float) -> nn.Module:
    """The block's normalisation: NoNorm ("no_norm") or LayerNorm."""
    return NoNorm(size) if c.normalization_type == "no_norm" else nn.LayerNorm(size, eps=eps)


def residual(c: MobileBertConfig, size: int, dropout: float, eps: float | None = None) -> SublayerConnection:
    """Post-norm residual connection x ← Norm(x + Dropout(Sublayer(x))) with MobileBERT's Norm."""
    sub = SublayerConnection(size, dropout=dropout, norm_first=False)
    sub.norm = norm(c, size, c.layer_norm_eps if eps is None else eps)
    return sub


class MobileBertEmbeddings(BertEmbeddings):
    """Sect. 3.5: E-wide word embeddings, each token read with its neighbours and projected to H, then BERT's
    position and segment embeddings (H wide), Norm and dropout."""

    def __init__(self, c: MobileBertConfig):
        super().__init__(c)  # positions, segments and dropout H wide
        E = c.embedding_size
        self.word_embeddings = nn.Embedding(c.vocab_size, E, padding_idx=c.pad_token_id)
        self.trigram = c.trigram_input
        self.projection = nn.Linear(3 * E if c.trigram_input else E, c.hidden_size)  # W_emb
        self.projects = c.trigram_input or E != c.hidden_size  # departure: kept, unused, otherwise
        self.norm = norm(c, c.hidden_size, TORCH_EPS)  # departure: torch's ε (transformers')

    def token_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(B, T) → (B, T, H): W_emb [e_{t+1}; e_t; e_{t−1}], zero vectors past either end."""
        e = self.word_embeddings(input_ids)  # (B, T, E)
        if self.trigram:
            following = F.pad(e[:, 1:], (0, 0, 0, 1))  # e_{t+1}: (B, T, E)
            preceding = F.pad(e[:, :-1], (0, 0, 1, 0))  # e_{t−1}: (B, T, E)
            e = torch.cat([following, e, preceding], dim=-1)  # (B, T, 3E)
        return self.projection(e) if self.projects else e


class Projection(nn.Module):
    """A bottleneck's linear map and Norm: Norm(W x + c), H → B."""

    def __init__(self, c: MobileBertConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intra_bottleneck_size)
        self.norm = norm(c, c.intra_bottleneck_size, c.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.dense(x))


class BottleneckAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017, Sect. 3.2.2) whose queries and keys read one input and whose
    values may read another: head_i = softmax(Q_i K_iᵀ/√d_k) V_i, Q = x_qk W^Q, K = x_qk W^K, V = x_v W^V; the
    heads concatenated and mapped by W^O. Shapes: x_qk (B, T, d_qk), x_v (B, T, d_v) → (B, T, d_model).

    Q, K and V read different inputs of different widths, each with its own weights (transformers' keys
    ``query``, ``key``, ``value``), which nn/'s MultiHeadAttention (one fused ``qkv`` of one input) cannot
    hold; the attention itself is nn/'s, positions included (``position``, seq2bert/nn/positions.py)."""

    def __init__(
        self,
        d_qk: int,
        d_v: int,
        d_model: int,
        num_heads: int,
        *,
        dropout: float = 0.0,
        position: AttentionPositions | None = None,
    ):
        super().__init__()
        self.position = position
        self.h, self.d_k = num_heads, d_model // num_heads
        self.query = nn.Linear(d_qk, d_model)  # W^Q
        self.key = nn.Linear(d_qk, d_model)  # W^K
        self.value = nn.Linear(d_v, d_model)  # W^V
        self.out = nn.Linear(d_model, d_model)  # W^O
        self.dropout = dropout
        self.blur: nn.Module | None = None  # SesameBERT's Gaussian blurring (nn/sesame.py), when attached

    def linear_roles(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """W^Q, W^K, W^V and W^O (what LoRA adapts: seq2bert/nn/lora.py)."""
        names = {"query": "query", "key": "key", "value": "value", "out": "output"}
        return {attr: ((role, getattr(self, attr).out_features),) for attr, role in names.items()}

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, h·d_k) → (B, h, T, d_k)."""
        return x.unflatten(-1, (self.h, self.d_k)).transpose(1, 2)

    def scores(self, x_qk: torch.Tensor) -> torch.Tensor:
        """The scores before the softmax, QKᵀ/√d_k, unmasked and without positions: x_qk (B, T, d_qk) →
        (B, h, T, T) — what the attention transfer distils (objectives/distillation.py)."""
        q, k = self.split_heads(self.query(x_qk)), self.split_heads(self.key(x_qk))
        return (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(self.d_k)

    def forward(
        self, x_qk, x_v, mask=None, *, need_weights: bool = False, positions: Positions | None = None
    ):
        q, k = self.split_heads(self.query(x_qk)), self.split_heads(self.key(x_qk))
        v = self.split_heads(self.value(x_v))
        p = self.dropout if self.training else 0.0
        if positions is not None:  # the stack's positions: an encoder's, no cache (queries and keys alike)
            if self.position is not None:
                q, k = self.position.rotate(q, positions.query), self.position.rotate(k, positions.key)
            heads, weights = attend_at(q, k, v, mask, positions, self.position, p, need_weights)
        else:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout=p, need_weights=need_weights)
        concat = heads.transpose(1, 2).flatten(2)  # Concat(head_1 … head_h): (B, T, h·d_k)
        if self.blur is not None:
            concat = self.blur(concat, seen_keys(mask, *concat.shape[:2]))
        return self.out(concat), weights  # W^O: (B, T, d_model)


class MobileBertLayer(nn.Module):
    """One block (Figure 1 (c)): input bottleneck, attention, F feed-forward networks, output bottleneck —
    called as the stack calls a TransformerLayer (an encoder's: no memory, no cache)."""

    def __init__(self, c: MobileBertConfig):
        super().__init__()
        H, B = c.hidden_size, c.true_hidden_size
        bottleneck = c.use_bottleneck
        self.input_bottleneck = Projection(c) if bottleneck else None  # b = Norm(W_in x + c_in)
        # Q and K's own projection (kept, unused, with use_bottleneck_attention: transformers' layout)
        self.shared_bottleneck = Projection(c) if bottleneck and c.key_query_shared_bottleneck else None
        self.attend_bottleneck = bottleneck and c.use_bottleneck_attention
        self.self_attn = BottleneckAttention(
            B,
            B if c.use_bottleneck_attention else H,
            B,
            c.num_attention_heads,
            dropout=c.attention_probs_dropout_prob,
        )
        drop = 0.0 if bottleneck else c.hidden_dropout_prob  # departure (transformers'): none in a bottleneck
        self.self_attn_sublayer = residual(c, B, drop)
        F_ = c.num_feedforward_networks
        self.feed_forward = nn.ModuleList(
            PositionwiseFeedForward(B, c.intermediate_size, activation=c.hidden_act) for _ in range(F_)
        )
        # the last network's residual is BERT's output sub-layer (dropout without a bottleneck, torch's ε)
        self.ffn_sublayers = nn.ModuleList(
            [residual(c, B, 0.0) for _ in range(F_ - 1)] + [residual(c, B, drop, TORCH_EPS)]
        )
        self.output_bottleneck = nn.Linear(B, H) if bottleneck else None  # W_out, c_out
        self.output_sublayer = residual(c, H, c.hidden_dropout_prob) if bottleneck else None

    def attention_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(the attention's residual, its queries' and keys' input, its values' input) of x (B, T, H)."""
        if self.input_bottleneck is None:
            return x, x, x
        b = self.input_bottleneck(x)  # (B, T, B)
        if self.attend_bottleneck:
            return b, b, b
        if self.shared_bottleneck is not None:
            return b, self.shared_bottleneck(x), x
        return b, x, x

    def attention_scores(self, x: torch.Tensor) -> torch.Tensor:
        """The attention's scores before the softmax (B, h, T, T) of this block's input x (B, T, H)."""
        return self.self_attn.scores(self.attention_inputs(x)[1])

    def forward(
        self, x, mask=None, memory=None, memory_mask=None, *, cache=None, need_weights=False, positions=None
    ) -> LayerOutput:
        """x (B, T, H) → (B, T, H); the attention weights (B, h, T, T) when asked; ``positions``: the
        stack's (seq2bert/nn/positions.py), handed to the attention."""
        if memory is not None or cache is not None:
            raise ValueError("a MobileBERT block is an encoder's: no memory, no cache")
        out = LayerOutput(x)
        b, x_qk, x_v = self.attention_inputs(x)

        def attend(_: torch.Tensor) -> torch.Tensor:  # the residual is b; the attention reads x_qk and x_v
            h, out.self_weights = self.self_attn(
                x_qk, x_v, mask, need_weights=need_weights, positions=positions
            )
            return h

        a = self.self_attn_sublayer(b, attend)  # Norm(b + MHA)
        for ffn, sublayer in zip(self.feed_forward, self.ffn_sublayers, strict=True):
            a = sublayer(a, ffn)  # Norm(a + FFN_i(a)), Sect. 3.3
        if self.output_bottleneck is not None:
            a = self.output_sublayer(x, lambda _: self.output_bottleneck(a))  # Norm(x + W_out a + c_out)
        out.hidden = a
        return out


class MobileBertModel(BertModel):
    """The encoder: BERT's stack of MobileBERT blocks over MobileBertEmbeddings, and (optionally) the pooler."""

    rows_at_last_layer = False  # the blocks run at every position

    def __init__(self, config: MobileBertConfig, add_pooling_layer: bool = True):
        config.validate()
        layers = [MobileBertLayer(config) for _ in range(config.num_hidden_layers)]
        pooler = add_pooling_layer and config.classifier_activation
        super().__init__(config, pooler, embeddings=MobileBertEmbeddings(config), layers=layers)
        self.pools_first_token = add_pooling_layer and not config.classifier_activation

    def pool(self, x: torch.Tensor) -> torch.Tensor | None:
        """tanh(W h_[CLS] + b), or without classifier_activation h_[CLS] itself: (B, T, H) → (B, H)."""
        return x[:, 0] if self.pools_first_token else super().pool(x)


class MobileBertLMHead(nn.Module):
    """The MLM head: BERT's transform (H → H, act, LayerNorm), then a decoder of H columns — the E-wide word
    table (tied) and H − E columns of its own (``extra``, transformers' cls.predictions.dense) — plus a bias."""

    def __init__(self, c: MobileBertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        H, E = c.hidden_size, word_embeddings.embedding_dim
        self.dense = nn.Linear(H, H)
        self.act = ACTIVATIONS[c.hidden_act]
        self.norm = nn.LayerNorm(H, eps=c.layer_norm_eps)
        self.decoder = nn.Linear(E, c.vocab_size)
        self.decoder.weight = word_embeddings.weight  # tied
        self.extra = nn.Linear(c.vocab_size, H - E, bias=False)  # its weight: (H − E, V)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(…, H) → (…, V)."""
        h = self.norm(self.act(self.dense(hidden)))
        weight = torch.cat([self.decoder.weight, self.extra.weight.t()], dim=1)  # [E_word | W_extraᵀ]: (V, H)
        return F.linear(h, weight, self.decoder.bias)


class MobileBertHeads:
    """What every MobileBERT head model changes in BERT's: the encoder, kept under ``mobilebert``, and the MLM
    head."""

    base_model_prefix = "mobilebert"
    encoder_class = MobileBertModel

    def masked_lm_head(self) -> MobileBertLMHead:
        return MobileBertLMHead(self.config, self.base_model.embeddings.word_embeddings)


class MobileBertForPreTraining(MobileBertHeads, BertForPreTraining):
    """MobileBERT with BERT's pretraining heads: masked LM + next sentence prediction on the pooled [CLS]."""


class MobileBertForMaskedLM(MobileBertHeads, BertForMaskedLM):
    """MobileBERT with the masked-LM head only (no pooler), for fill-mask."""


class MobileBertForSequenceClassification(MobileBertHeads, BertForSequenceClassification):
    """A K-way classifier (or a regressor, K = 1) on the pooled [CLS] state."""


class MobileBertForTokenClassification(MobileBertHeads, BertForTokenClassification):
    """A K-way classifier on every final token state."""


class MobileBertForQuestionAnswering(MobileBertHeads, BertForQuestionAnswering):
    """Span start and end scores S·T_i, E·T_j (SQuAD, Sect. 4.4)."""


class MobileBertForMultipleChoice(MobileBertHeads, BertForMultipleChoice):
    """A score C · w for each choice, a softmax over the choices."""


TASK_CLASSES = {
    cls.__name__: cls
    for cls in (
        MobileBertForSequenceClassification,
        MobileBertForTokenClassification,
        MobileBertForQuestionAnswering,
        MobileBertForMultipleChoice,
    )
}
