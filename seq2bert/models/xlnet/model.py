"""XLNet (Yang et al. 2019), "Generalized Autoregressive Pretraining for Language Understanding", composed of the
shared stack (seq2bert/nn/stack.py) and its position channel (seq2bert/nn/positions.py):

    h^(0) = e(x)                       the token embeddings (no absolute position), after dropout
    g^(0) = w                          the query stream's trainable start ``mask_emb`` at every position
    h^(m) = Layer(h^(m−1); KV = [SG(mem^(m−1)) ∘ h^(m−1)])               content stream (Sect. 2.3, 2.4)
    g^(m) = Layer(g^(m−1); KV = [SG(mem^(m−1)) ∘ h^(m−1)], mask: z<t)   query stream, the same weights

Each self-attention scores a query i and a key j as Transformer-XL does (Dai et al. 2019, Sect. 3.3), plus
XLNet's relative segment encoding (Sect. 2.5):

    A_ij = (q_i + u)·k_j  +  (q_i + v)·W_R R_{i−j}  +  (q_i + b)·s_ij,   all times 1/√d_head

with R the sinusoids of the distance i − j ([sin | cos], clamped to ``clamp_len``), W_R each layer's own,
u, v, b learned per layer and head, and s_ij = s+ when i and j lie in the same segment, s− otherwise. The
first term is the stack's q·k plus u·k_j; the rest is a score bias (``XLNetRelativeAttention``), which goes
through torch's fused kernel as a float mask. The layer is BERT's post-norm layer without biases in the
attention's projections.

Segment recurrence (Sect. 2.4, Transformer-XL's memory): ``mems`` holds each layer's input states of the
previous segment(s); the new segment's tokens sit after them and every query sees them. The model returns
the new ``mems`` (the last ``mem_len`` states of each layer's input), detached.

The permutation language model (Sect. 2.2–2.3) enters through ``perm_mask`` (B, T, T): 1 where query i may
not see key j (j comes after i in the factorisation order z); the content stream always sees itself, the
query stream never does. ``target_mapping`` (B, P, T), one-hot rows: the P positions predicted (partial
prediction, Sect. 2.3): the query stream is computed there only (P rows, not T). The query stream sees what perm_mask lets
it see: the pretraining data hides each target from itself (perm_mask[i, i] = 1), as XLNet's pipeline does.

Shapes are batch-first: input_ids (B, T); transformers' XLNet computes in (T, B) and returns (B, T, d_model).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models.pretrained import SavePretrained
from seq2bert.models.xlnet.config import XLNetConfig
from seq2bert.nn.feed_forward import PositionwiseFeedForward
from seq2bert.nn.layers import TransformerLayer
from seq2bert.nn.masks import combine, padding_mask
from seq2bert.nn.multihead import MultiHeadAttention
from seq2bert.nn.positions import AttentionPositions, Positions, PositionScheme
from seq2bert.nn.stack import TransformerStack
from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def relative_sinusoids(distance: torch.Tensor, d_model: int) -> torch.Tensor:
    """R of Transformer-XL (Sect. 3.3): [sin(d·f) | cos(d·f)], f_k = 1 / 10000^(2k/d_model), of the
    distances ``distance`` (n,) → (n, d_model), in float32 as the released code computes them."""
    freq = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32, device=distance.device) / d_model)
    angle = distance.to(torch.float32)[:, None] * freq  # (n, d_model / 2)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1).float()


class XLNetPositions(PositionScheme):
    """The stack's half: the distances i − j of the forward's queries and keys, clamped to ``clamp_len`` (when
    > 0), their sinusoids R (after dropout, as transformers' XLNet) as ``Positions.encoding`` and, per pair,
    the row of R it reads as ``Positions.index``. Nothing is added to the input."""

    def __init__(self, d_model: int, clamp_len: int = -1, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.clamp_len = d_model, clamp_len
        self.dropout = nn.Dropout(dropout)

    def positions(self, length: int, past: int = 0, device: torch.device | str | None = None) -> Positions:
        p = super().positions(length, past, device)
        distance = -p.distance  # i − j: (T_q, T_k)
        if self.clamp_len > 0:
            distance = distance.clamp(-self.clamp_len, self.clamp_len)
        lowest, highest = int(distance.min()), int(distance.max())
        p.index = distance - lowest  # the row of R of each pair
        p.encoding = self.dropout(
            relative_sinusoids(torch.arange(lowest, highest + 1, device=device), self.d_model)
        )
        return p


class XLNetRelativeAttention(AttentionPositions):
    """One layer's half: W_R (``r``), u (``r_w_bias``), v (``r_r_bias``), b (``r_s_bias``) and s± (``seg_embed``),
    the score bias u·k_j + (q_i + v)·W_R R_{i−j} + (q_i + b)·s_ij of the module's docstring, scaled."""

    def __init__(self, d_model: int, num_heads: int, d_head: int):
        super().__init__()
        self.r = nn.Linear(d_model, num_heads * d_head, bias=False)  # W_R
        self.r_w_bias = nn.Parameter(torch.zeros(num_heads, d_head))  # u
        self.r_r_bias = nn.Parameter(torch.zeros(num_heads, d_head))  # v
        self.r_s_bias = nn.Parameter(torch.zeros(num_heads, d_head))  # b
        self.seg_embed = nn.Parameter(torch.zeros(2, num_heads, d_head))  # s+ (same segment), s− (other)

    def score_bias(
        self, q: torch.Tensor, k: torch.Tensor, positions: Positions, scale: float
    ) -> torch.Tensor:
        B, h, T_q, d = q.shape
        u, v, b = (p.to(q.dtype)[None, :, None, :] for p in (self.r_w_bias, self.r_r_bias, self.r_s_bias))
        content = (k.to(q.dtype) * u).sum(-1)[:, :, None, :]  # u·k_j: (B, h, 1, T_k)
        r = self.r(positions.encoding.to(q.dtype)).view(-1, h, d)  # W_R R: (n, h, d)
        qr = torch.einsum("bhqd,nhd->bhqn", q + v, r)  # (q_i + v)·W_R R_n: (B, h, T_q, n)
        index = positions.index.expand(B, h, T_q, -1)  # (B, h, T_q, T_k)
        bias = content + torch.gather(qr, -1, index)
        if positions.other_segment is not None:
            qs = torch.einsum("bhqd,shd->bhqs", q + b, self.seg_embed.to(q.dtype))  # (B, h, T_q, 2)
            other = positions.other_segment[:, None]  # (B, 1, T_q, T_k)
            bias = bias + torch.where(other, qs[..., 1:], qs[..., :1])
        return bias * scale


class XLNetEmbeddings(nn.Module):
    """h^(0): the token embeddings after dropout; XLNet adds no absolute position."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.word_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return self.dropout(self.word_embedding(input_ids))


def xlnet_layer(config: XLNetConfig) -> TransformerLayer:
    """BERT's post-norm layer with XLNet's relative attention: no biases in W^Q, W^K, W^V, W^O."""
    attention = MultiHeadAttention(
        config.d_model,
        config.n_head,
        dropout=config.dropout,
        bias=False,
        position=XLNetRelativeAttention(config.d_model, config.n_head, config.d_head),
    )
    ffn = PositionwiseFeedForward(
        config.d_model, config.d_inner, activation=config.ff_activation, activation_dropout=config.dropout
    )
    return TransformerLayer(config.d_model, attention, ffn, dropout=config.dropout, eps=config.layer_norm_eps)


@dataclass
class XLNetModelOutput:
    """The last hidden state (B, T, d_model) — at the P predicted positions (B, P, d_model) with a
    ``target_mapping`` —, the new memory (one (B, M, d_model) per layer), and when asked every layer's
    input and output (the content stream's) and the attention weights."""

    last_hidden_state: torch.Tensor
    mems: tuple[torch.Tensor, ...] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class XLNetLMHeadModelOutput:
    loss: torch.Tensor | None
    logits: torch.Tensor
    mems: tuple[torch.Tensor, ...] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@torch.no_grad()
def init_xlnet_weights(module: nn.Module, config: XLNetConfig) -> None:
    """transformers' XLNet initialisation: N(0, initializer_range) for every matrix, vector of the relative
    attention and the query stream's start; LayerNorm at (1, 0); biases at 0."""
    std = config.initializer_range
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            m.weight.normal_(0.0, std)
            if isinstance(m, nn.Linear) and m.bias is not None:
                m.bias.zero_()
        elif isinstance(m, nn.LayerNorm):
            m.weight.fill_(1.0)
            m.bias.zero_()
        elif isinstance(m, XLNetRelativeAttention):
            for p in (m.r_w_bias, m.r_r_bias, m.r_s_bias, m.seg_embed):
                p.normal_(0.0, std)
        elif isinstance(m, XLNetModel):
            m.mask_emb.normal_(0.0, std)


def one_hot_rows(target_mapping: torch.Tensor) -> torch.Tensor:
    """The position each row of ``target_mapping`` (B, P, T) picks, (B, P): every row one-hot, or empty (a
    row predicting nothing: padding); another mapping is a ValueError. The query stream is computed at these
    P positions only, as transformers computes it; an empty row's output, which no label reads, differs from
    transformers' (there the attention's output is zero, here that of position 0)."""
    rows = target_mapping.argmax(-1)  # (B, P)
    picked = F.one_hot(rows, target_mapping.size(-1)).to(target_mapping.dtype)
    picked = picked * target_mapping.sum(-1, keepdim=True).clamp(max=1)  # an empty row stays empty
    if not torch.equal(picked, target_mapping):
        raise ValueError("target_mapping: each row picks one position (one-hot) or none (all zeros)")
    return rows


class XLNetModel(SavePretrained, nn.Module):
    """The bare XLNet: the stack of ``n_layer`` layers over the token embeddings, with both streams."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.config = config
        self.stack = TransformerStack(
            XLNetEmbeddings(config),
            [xlnet_layer(config) for _ in range(config.n_layer)],
            causal=config.attn_type == "uni",
            positions=XLNetPositions(config.d_model, config.clamp_len, config.dropout),
        )
        self.mask_emb = nn.Parameter(torch.zeros(1, 1, config.d_model))  # w, the query stream's g^(0)
        self.dropout = nn.Dropout(config.dropout)
        init_xlnet_weights(self, config)

    @property
    def word_embedding(self) -> nn.Embedding:
        return self.stack.embeddings.word_embedding

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> XLNetModelOutput:
        """input_ids (B, T) after ``mems`` (per layer (B, M, d_model)) → XLNetModelOutput. attention_mask
        (B, T): 1 on real tokens; token_type_ids (B, T): the segments (the memory counts as segment 0);
        perm_mask (B, T, T) and target_mapping (B, P, T) as in the module's docstring. ``use_mems``:
        return the new memory (None: the config's use_mems_train / use_mems_eval)."""
        B, T = input_ids.shape
        device = input_ids.device
        M = 0 if not mems else mems[0].size(1)
        segments = None
        if token_type_ids is not None:
            segments = torch.cat([token_type_ids.new_zeros(B, M), token_type_ids], dim=1)  # (B, M + T)
        # what query i may read of key j (True), the memory always: the padding's keys hidden, and with a
        # perm_mask (B, T, T) the tokens after i in the factorisation order; (B, 1, 1 | T, M + T)
        visible = None
        if attention_mask is not None:
            visible = padding_mask(torch.cat([attention_mask.new_ones(B, M), attention_mask], dim=1))
        if perm_mask is not None:
            order = torch.cat([perm_mask.new_zeros(B, T, M), perm_mask], dim=2) == 0
            visible = combine(visible, order[:, None])
        content_mask = None  # h_{z≤t}: the content stream always sees itself (a padding token too)
        if visible is not None:
            itself = torch.zeros(T, M + T, dtype=torch.bool, device=device)
            itself[:, M:] = torch.eye(T, dtype=torch.bool, device=device)
            content_mask = visible | itself
        stream = query_mask = rows = None
        if target_mapping is not None:  # g_{z<t}: a target's own token is hidden by perm_mask itself
            query_mask = combine(visible, self.stack.self_attention_mask(None, T, M, device))
            rows = one_hot_rows(target_mapping)  # (B, P): the stream computed at the P targets only
            stream = self.dropout(self.mask_emb.expand(B, rows.size(1), -1))
            if query_mask is not None:  # (B, 1, P, M + T): the targets' rows
                query_mask = query_mask.expand(B, 1, T, M + T)[
                    torch.arange(B, device=device)[:, None], 0, rows
                ]
                query_mask = query_mask[:, None]
        out = self.stack(
            input_ids,
            None,  # the padding is in content_mask
            offset=M,
            past_states=list(mems) if M else None,
            self_mask=content_mask,
            segment_ids=segments,
            real_tokens=None if attention_mask is None else attention_mask.bool(),
            query_stream=stream,
            query_stream_mask=query_mask,
            query_stream_rows=rows,
            output_hidden_states=True,
            output_attentions=output_attentions,
        )
        if use_mems is None:
            use_mems = self.config.use_mems_train if self.training else self.config.use_mems_eval
        new_mems = None
        if use_mems:  # each layer's input, after the memory it read, the last mem_len kept
            cut = -self.config.mem_len if self.config.mem_len else 0
            new_mems = tuple(
                (h if not M else torch.cat([m, h], dim=1))[:, cut:].detach()
                for m, h in zip(mems or [None] * self.config.n_layer, out.hidden_states[:-1], strict=True)
            )
        last = out.last_hidden_state
        if target_mapping is not None:  # the query stream, computed at the P predicted positions
            last = out.last_query_stream_state
        return XLNetModelOutput(
            last_hidden_state=self.dropout(last),
            mems=new_mems,
            hidden_states=out.hidden_states if output_hidden_states else None,
            attentions=out.attentions,
        )


class XLNetLMHeadModel(SavePretrained, nn.Module):
    """XLNet with its language-model head ``lm_loss``: logits = h W_eᵀ + b, tied to the token embeddings."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.config = config
        self.transformer = XLNetModel(config)
        self.lm_loss = nn.Linear(config.d_model, config.vocab_size)
        self.lm_loss.bias.data.zero_()
        self.lm_loss.weight = self.transformer.word_embedding.weight  # tied

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *, labels=None, **kwargs
    ) -> XLNetLMHeadModelOutput:
        """labels (B, P) with a target_mapping, else (B, T): the tokens to predict (−100: none)."""
        out = self.transformer(input_ids, attention_mask, **kwargs)
        logits = self.lm_loss(out.last_hidden_state)  # (B, P | T, V)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
        return XLNetLMHeadModelOutput(loss, logits, out.mems, out.hidden_states, out.attentions)
