"""The heads on GPT and GPT-2 (model.py), with transformers' class names, module names and output fields.

    language model        P(u) = softmax(h_n W_eᵀ)                    GPT-1 Sect. 3.1 (Eq. 2): the output layer
                                                                      is the token embedding W_e (``lm_head``, tied)
                          L_1(U) = Σ_i log P(u_i | u_{i−k} … u_{i−1})  Eq. 1: the labels are the inputs, shifted
    fine-tuning           P(y | x^1 … x^m) = softmax(h_l^m W_y)        Sect. 3.2, Eq. 3: the final state of the
                                                                      last token (``score``, no bias)
    with an auxiliary LM  L_3(C) = L_2(C) + λ · L_1(C)                 Sect. 3.2, Eq. 5: DoubleHeads returns both
                                                                      losses (``loss``, ``mc_loss``), the sequence
                                                                      classifiers L_1 as ``lm_loss`` when given
                                                                      ``lm_labels``; λ is the caller's (0.5 in the
                                                                      paper)
    similarity            h_l^m(A; B) + h_l^m(B; A), then W_y            Sect. 3.3 ("Similarity"): both orders of a
                                                                      pair, their final states added (seq2bert's
                                                                      own ``…ForSimilarity``: no transformers class)
    multiple choice       each choice a sequence [context; $; answer], scored from the state of its last token
                          and normalised by a softmax over the choices  Sect. 3.3 ("Question Answering and
                          Commonsense Reasoning"): DoubleHeads' ``multiple_choice_head`` (transformers'
                          SequenceSummary) at ``mc_token_ids``
    token classification  a classifier on each final state (GPT-2 only in transformers)

Sequence classification pools, as transformers 5 does, the rightmost token that is not ``pad_token_id``: left
and right padding alike (without a [PAD] only one row at a time). The LM heads implement the incremental-
decoder protocol and ``generate`` (seq2bert/models/decoder_only.py).

Departures from transformers, for GPT-1's fine-tuning (Sect. 3.2–3.3): the sequence classifiers take
``lm_labels`` (L_1 on the task's inputs through the tied token embedding: no new weights, the checkpoint layout
unchanged); every head model can grow its token embedding (``resize_token_embeddings``: the [start], [delim]
and [extract] tokens the paper adds to the vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models.decoder_only import DecoderOnlyLM
from seq2bert.models.gpt.config import GPTConfig
from seq2bert.models.gpt.model import GPT2Model, GPTStack, OpenAIGPTModel, init_gpt_weights
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.nn.layers import LayerCache
from seq2bert.objectives.causal_lm import causal_lm_loss, causal_lm_loss_from_hidden
from seq2bert.objectives.classification import sequence_classification_loss, token_classification_loss


@dataclass
class CausalLMOutputWithPast:
    loss: torch.Tensor | None
    logits: torch.Tensor | None  # (B, T, V); None with ``loss_only``
    past_key_values: list[LayerCache] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class DoubleHeadsModelOutput:
    loss: torch.Tensor | None  # the LM loss
    mc_loss: torch.Tensor | None
    logits: torch.Tensor  # (B, C, T, V)
    mc_logits: torch.Tensor  # (B, C)
    past_key_values: list[LayerCache] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None  # flattened to (B·C, T, d_model)
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class SequenceClassifierOutputWithPast:
    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, K), or (B, T, K) for tokens
    past_key_values: list[LayerCache] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    lm_loss: torch.Tensor | None = None  # GPT-1's auxiliary L_1 on the inputs (given ``lm_labels``)


class GPTHeadModel(SavePretrained, nn.Module):
    """The bare model (``base_class``) under ``transformer``, as transformers keeps it; the forward arguments
    every head passes on to it."""

    base_class: type[GPTStack]

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = self.base_class(config)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, **options):
        return self.transformer(input_ids, attention_mask, **options)

    def auxiliary_lm_loss(self, hidden: torch.Tensor, lm_labels: torch.Tensor) -> torch.Tensor:
        """Sect. 3.2: L_1 (Eq. 1) on the task's own inputs, from the final states (B, T, d_model) through the tied
        output layer softmax(h_n W_eᵀ); lm_labels (B, T): the input ids, −100 on padding."""
        return causal_lm_loss_from_hidden(hidden, self.transformer.embeddings.token.weight, lm_labels)

    def resize_token_embeddings(self, vocab_size: int) -> None:
        """The token embedding W_e with ``vocab_size`` rows: the old ones kept, new ones drawn from
        N(0, initializer_range) — GPT-1 adds its [start], [delim] and [extract] tokens so (Sect. 3.3) — and a
        tied LM head tied to the new matrix; ``config.vocab_size`` follows."""
        old = self.transformer.embeddings.token
        new = nn.Embedding(vocab_size, old.embedding_dim).to(old.weight.device, old.weight.dtype)
        nn.init.normal_(new.weight, 0.0, self.config.initializer_range)
        with torch.no_grad():
            kept = min(vocab_size, old.num_embeddings)
            new.weight[:kept] = old.weight[:kept]
        self.transformer.embeddings.token = new
        if hasattr(self, "lm_head"):
            self.lm_head = nn.Linear(old.embedding_dim, vocab_size, bias=False).to(new.weight.device)
            self.lm_head.weight = new.weight  # tied
        self.config.vocab_size = vocab_size


class GPTLMHeadModel(DecoderOnlyLM, GPTHeadModel):
    """Eq. 2's language model: next-token logits from the tied token embeddings; Eq. 1's loss with labels."""

    def __init__(self, config: GPTConfig):
        super().__init__(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.embeddings.token.weight  # tied: softmax(h_n W_eᵀ)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        past_key_values: list[LayerCache] | None = None,
        use_cache: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        loss_only: bool = False,
    ) -> CausalLMOutputWithPast:
        """input_ids … (B, T) → logits (B, T, V); ``labels`` (B, T): the input ids (−100 where ignored), shifted
        here as transformers does — the logits at t predict the label at t + 1.

        ``loss_only`` (with labels; training): Eq. 1 straight from the final states, the output layer and the
        loss fused (objectives/cross_entropy.py: no (B, T, V) logits or log-probabilities are built; the same
        loss and gradients up to rounding); ``logits`` is then None. seq2bert pretrain trains so."""
        out = self.encode(
            input_ids,
            attention_mask,
            position_ids=position_ids,
            token_type_ids=token_type_ids,
            past_key_values=past_key_values,
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        if loss_only:
            if labels is None:
                raise ValueError("loss_only needs labels")
            loss = causal_lm_loss_from_hidden(out.last_hidden_state, self.lm_head.weight, labels)  # Eq. 1
            return CausalLMOutputWithPast(loss, None, out.past_key_values, out.hidden_states, out.attentions)
        logits = self.lm_head(out.last_hidden_state)  # h_n W_eᵀ: (B, T, V)
        loss = None if labels is None else causal_lm_loss(logits, labels)  # Eq. 1
        return CausalLMOutputWithPast(loss, logits, out.past_key_values, out.hidden_states, out.attentions)


SUMMARY_ACTIVATIONS = {"tanh": torch.tanh, "linear": lambda x: x, **ACTIVATIONS}


class SequenceSummary(nn.Module):
    """transformers' SequenceSummary: one vector per sequence — the state at ``cls_index`` ("cls_index", the
    last token when none is given), the last, the first or the mean — then dropout, a projection ``summary``
    (to 1 score with ``summary_proj_to_labels``, else d_model; none without ``summary_use_proj``), an
    activation and dropout. Departure: "last", "first" and "mean" take the sequence axis of a (…, T, d_model)
    input; transformers takes axis 1, which for DoubleHeads' (B, C, T, d_model) is the choices."""

    def __init__(self, c: GPTConfig):
        super().__init__()
        self.summary_type = c.summary_type
        size = 1 if c.summary_proj_to_labels else c.n_embd  # DoubleHeads sets num_labels = 1
        self.summary = nn.Linear(c.n_embd, size) if c.summary_use_proj else nn.Identity()
        self.activation = SUMMARY_ACTIVATIONS[c.summary_activation] if c.summary_activation else nn.Identity()
        self.first_dropout = nn.Dropout(c.summary_first_dropout)
        self.last_dropout = nn.Dropout(c.summary_last_dropout)

    def forward(self, hidden: torch.Tensor, cls_index: torch.Tensor | None = None) -> torch.Tensor:
        """hidden (…, T, d_model), cls_index (…) → (…, size)."""
        if self.summary_type == "first":
            x = hidden[..., 0, :]
        elif self.summary_type == "mean":
            x = hidden.mean(dim=-2)
        elif self.summary_type == "last" or cls_index is None:
            x = hidden[..., -1, :]
        else:  # "cls_index"
            index = cls_index[..., None, None].expand(*cls_index.shape, 1, hidden.size(-1))  # (…, 1, d_model)
            x = hidden.gather(-2, index).squeeze(-2)  # (…, d_model)
        return self.last_dropout(self.activation(self.summary(self.first_dropout(x))))


class GPTDoubleHeadsModel(GPTHeadModel):
    """Sect. 3.2–3.3: the language model and a multiple-choice head on one body. Inputs (B, C, T): C choices
    per example, each scored at its classification token ``mc_token_ids`` (B, C)."""

    def __init__(self, config: GPTConfig):
        super().__init__(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.embeddings.token.weight  # tied
        self.multiple_choice_head = SequenceSummary(config)
        init_gpt_weights(self.multiple_choice_head, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        mc_token_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        mc_labels: torch.Tensor | None = None,
        past_key_values: list[LayerCache] | None = None,
        use_cache: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> DoubleHeadsModelOutput:
        """input_ids, attention_mask, position_ids, token_type_ids, labels (B, C, T); mc_token_ids (B, C), the
        position of each choice's classification token (None: its last); mc_labels (B,) the right choice."""
        *lead, T = input_ids.shape

        def flat(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.reshape(-1, x.size(-1))  # (B·C, T)

        out = self.encode(
            flat(input_ids),
            flat(attention_mask),
            position_ids=flat(position_ids),
            token_type_ids=flat(token_type_ids),
            past_key_values=past_key_values,
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        hidden = out.last_hidden_state.view(*lead, T, -1)  # (B, C, T, d_model)
        logits = self.lm_head(hidden)  # (B, C, T, V)
        mc_logits = self.multiple_choice_head(hidden, mc_token_ids).squeeze(-1)  # (B, C)
        mc_loss = None
        if mc_labels is not None:  # a softmax over the choices
            mc_loss = F.cross_entropy(mc_logits.float().view(-1, mc_logits.size(-1)), mc_labels.view(-1))
        loss = None
        if labels is not None:
            loss = causal_lm_loss(logits.view(-1, T, logits.size(-1)), labels.reshape(-1, T))  # Eq. 1
        return DoubleHeadsModelOutput(
            loss, mc_loss, logits, mc_logits, out.past_key_values, out.hidden_states, out.attentions
        )


def last_token(input_ids: torch.Tensor, pad_token_id: int | None) -> torch.Tensor:
    """(B, T) → (B,): the rightmost position that is not [PAD] (left or right padding alike; a row of padding
    only: 0). Without a [PAD], the last position — of one row only, as transformers refuses more."""
    B, T = input_ids.shape
    if pad_token_id is None:
        if B != 1:
            raise ValueError("Cannot handle batch sizes > 1 if no padding token is defined (pad_token_id).")
        return torch.full((B,), T - 1, dtype=torch.long, device=input_ids.device)
    real = input_ids.ne(pad_token_id).long()  # (B, T)
    return (torch.arange(T, device=input_ids.device) * real).argmax(dim=-1)


def problem_type(c: GPTConfig, labels: torch.Tensor) -> str:
    """transformers' rule: the config's, else regression for one output, single-label for integer labels,
    multi-label for float labels."""
    if c.problem_type is not None:
        return c.problem_type
    if c.num_labels == 1:
        return "regression"
    integer = labels.dtype in (torch.long, torch.int)
    return "single_label_classification" if integer else "multi_label_classification"


class GPTForSequenceClassification(GPTHeadModel):
    """Sect. 3.2, Eq. 3: P(y | x) = softmax(h_l^m W_y), h_l^m the final state of the last real token."""

    def __init__(self, config: GPTConfig):
        super().__init__(config)
        self.score = nn.Linear(config.n_embd, config.num_labels, bias=False)  # W_y
        init_gpt_weights(self.score, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        lm_labels: torch.Tensor | None = None,
        past_key_values: list[LayerCache] | None = None,
        use_cache: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> SequenceClassifierOutputWithPast:
        """input_ids … (B, T) → logits (B, K) at each row's last token; labels (B,) class ids, (B,) floats for
        regression, (B, K) for multi-label; lm_labels (B, T): GPT-1's auxiliary LM loss on the inputs."""
        out = self.encode(
            input_ids,
            attention_mask,
            position_ids=position_ids,
            token_type_ids=token_type_ids,
            past_key_values=past_key_values,
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        at = last_token(input_ids, self.config.pad_token_id)  # (B,)
        hidden = out.last_hidden_state[torch.arange(input_ids.size(0), device=at.device), at]  # h_l^m: (B, d)
        logits = self.score(hidden)  # (B, K)
        return self.classified(logits, labels, out, lm_labels)

    def classified(self, logits, labels, out, lm_labels) -> SequenceClassifierOutputWithPast:
        """The output for ``logits`` (B, K): L_2 against ``labels``, L_1 on the inputs against ``lm_labels``."""
        loss = lm_loss = None
        if labels is not None:
            loss = sequence_classification_loss(logits, labels, problem_type(self.config, labels))
        if lm_labels is not None:
            lm_loss = self.auxiliary_lm_loss(out.last_hidden_state, lm_labels.reshape(-1, lm_labels.size(-1)))
        return SequenceClassifierOutputWithPast(
            loss, logits, out.past_key_values, out.hidden_states, out.attentions, lm_loss
        )


class GPTForSimilarity(GPTForSequenceClassification):
    """Sect. 3.3, "Similarity": "there is no inherent ordering of the two sentences being compared", so the input
    holds both orders — [start] A [delim] B [extract] and [start] B [delim] A [extract] — each processed
    independently; their final states at [extract] are added element-wise before the output layer W_y:

        P(y | A, B) = softmax((h_l^m(A; B) + h_l^m(B; A)) W_y)

    seq2bert's own architecture (``GPT2ForSimilarity``, ``OpenAIGPTForSimilarity``): transformers has no such
    class. Its weights are those of ForSequenceClassification (``transformer``, ``score``), which transformers'
    class reads, scoring one order only."""

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        labels: torch.Tensor | None = None,
        lm_labels: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> SequenceClassifierOutputWithPast:
        """input_ids, attention_mask, lm_labels (B, 2, T): the two orders of each pair → logits (B, K); the
        hidden states and attentions of the 2·B sequences, order by order."""
        B, orders, T = input_ids.shape
        if orders != 2:
            raise ValueError(f"input_ids: expected (batch, 2 orders, length), got {tuple(input_ids.shape)}")
        flat = input_ids.reshape(2 * B, T)  # (2B, T): the two orders of pair b at rows 2b, 2b + 1
        mask = None if attention_mask is None else attention_mask.reshape(2 * B, T)
        out = self.encode(
            flat, mask, output_hidden_states=output_hidden_states, output_attentions=output_attentions
        )
        at = last_token(flat, self.config.pad_token_id)  # (2B,): each order's [extract]
        hidden = out.last_hidden_state[torch.arange(2 * B, device=at.device), at]  # (2B, d)
        logits = self.score(hidden.view(B, 2, -1).sum(dim=1))  # (h(A; B) + h(B; A)) W_y: (B, K)
        return self.classified(logits, labels, out, lm_labels)


class GPTForTokenClassification(GPTHeadModel):
    """A classifier on every final state, after dropout ``classifier_dropout`` (None: 0.1, transformers')."""

    def __init__(self, config: GPTConfig):
        super().__init__(config)
        p = config.classifier_dropout
        self.dropout = nn.Dropout(0.1 if p is None else p)
        self.classifier = nn.Linear(config.n_embd, config.num_labels)
        init_gpt_weights(self.classifier, config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> SequenceClassifierOutputWithPast:
        """labels (B, T): a tag id per token, −100 where none is predicted."""
        out = self.encode(
            input_ids,
            attention_mask,
            position_ids=position_ids,
            token_type_ids=token_type_ids,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
        )
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, K)
        loss = None if labels is None else token_classification_loss(logits, labels)
        return SequenceClassifierOutputWithPast(loss, logits, None, out.hidden_states, out.attentions)


# --- transformers' classes: each head on GPT-1 (OpenAIGPT…) or GPT-2
class OpenAIGPTLMHeadModel(GPTLMHeadModel):
    base_class = OpenAIGPTModel


class OpenAIGPTDoubleHeadsModel(GPTDoubleHeadsModel):
    base_class = OpenAIGPTModel


class OpenAIGPTForSequenceClassification(GPTForSequenceClassification):
    base_class = OpenAIGPTModel


class GPT2LMHeadModel(GPTLMHeadModel):
    base_class = GPT2Model


class GPT2DoubleHeadsModel(GPTDoubleHeadsModel):
    base_class = GPT2Model


class GPT2ForSequenceClassification(GPTForSequenceClassification):
    base_class = GPT2Model


class GPT2ForTokenClassification(GPTForTokenClassification):
    base_class = GPT2Model


# --- seq2bert's own: the similarity head of GPT-1 (Sect. 3.3) on either model
class OpenAIGPTForSimilarity(GPTForSimilarity):
    base_class = OpenAIGPTModel


class GPT2ForSimilarity(GPTForSimilarity):
    base_class = GPT2Model
