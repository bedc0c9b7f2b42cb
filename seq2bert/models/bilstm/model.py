"""The pre-Transformer baselines of the fine-tuning tasks: a bidirectional LSTM over randomly initialised word
embeddings, read by a sentence classifier (GLUE) or by a tagger (CoNLL-2003).

Encoder — a bidirectional LSTM (Graves & Schmidhuber 2005; the LSTM cell, Hochreiter & Schmidhuber 1997, is
written out in nn/rnn.py)::

    e_t = E x_t                                         word embeddings, random (nothing pretrained)
    e_t = [E x_t ; f_t]                                 with ``features``: a frozen encoder's vector of the
                                                        word (ELMo's mix, BERT's layers; features.py)
    h→_t = LSTM→(e_t, h→_{t−1})                          left to right
    h←_t = LSTM←(e_t, h←_{t+1})                          right to left
    h_t = [h→_t; h←_t] ∈ R^{2H}                          num_layers such layers, each reading the last's h_t

Sentence classifier, on a sentence vector u (``pooling``)::

    max:    u_k = max_t h_{t,k}   over the real tokens    Conneau et al. (2017), InferSent, Sect. 3.2.2: the
                                                          BiLSTM-max encoder, their best of seven
    last:   u = [h→_n; h←_1]                              each direction's final state (the classic reading)
    concat: u = [h_T; maxpool(H); meanpool(H)]            ULMFiT (Howard & Ruder 2018, Sect. 3.3), H the states
    p = softmax(W u + b)        (one output and squared error for regression, STS-B)

or, with ``classifier_hidden`` n > 0, ULMFiT's two linear blocks ("each block uses batch normalization and
dropout, with ReLU activations for the intermediate layer"): W₂ ReLU(W₁ u) with a hidden layer of n.

``bidirectional=False`` keeps the left-to-right LSTM alone (h_t = h→_t): the shape of a recurrent language
model, whose embeddings and LSTM the classifier can start from (Dai & Le 2015, "Semi-supervised Sequence
Learning": the LM-LSTM; ULMFiT's classifier) — recipes/scratch.py copies them from a train-lm run.

Tagger (Huang, Xu & Yu 2015, the BI-LSTM without their CRF)::

    p_t = softmax(W h_t + b)    at every token; a word is labelled at its first token, as BERT's tagger does

Departures, on purpose: no CRF over the tags and no character features (Lample et al. 2016 add both: the
baseline here is the plain BiLSTM); dropout — on the embeddings, between layers and on what a head reads —
is Zaremba et al.'s (2014), on the non-recurrent connections only.

Inputs are the fine-tuning features of data/finetuning.py, as BERT reads them: ``[CLS] A [SEP]``, and a
sentence pair as one sequence ``[CLS] A [SEP] B [SEP]`` — the LSTM reads across the [SEP] between them. That
keeps every GLUE task, the features and the pipelines as they are; the GLUE baselines (Wang et al. 2018)
instead encode the two sentences apart and classify [u; v; |u − v|; u ∗ v] (InferSent's features), which this
family does not do. ``token_type_ids`` are accepted and unused ([SEP] marks the boundary).

Padding: right padding (``attention_mask`` a prefix of ones per row). Rows are packed for torch's fused LSTM
(nn/rnn.py ``FusedRNN``, ``run_fused``), so each direction starts and stops at the row's own real tokens,
outputs at padding are zero and max pooling leaves padding out: a padded row gives the logits it gives alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.models.bilstm.config import BiLSTMConfig
from seq2bert.models.bilstm.features import TOKENIZER_DIR, WordFeatures
from seq2bert.models.family import Family
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.rnn import recurrent
from seq2bert.objectives.classification import (
    problem_type_of,
    sequence_classification_loss,
    token_classification_loss,
)


@dataclass
class BiLSTMOutput:
    last_hidden_state: (
        torch.Tensor
    )  # (B, T, 2H): h_t = [h→_t; h←_t] (h→_t alone, (B, T, H), with one direction), zeros at padding
    # (h_n, c_n), each (2L, B, H): layer l's forward final state at 2l, its backward one (at t = 1) at 2l + 1
    final_state: tuple[torch.Tensor, torch.Tensor]


@dataclass
class ClassifierOutput:
    """transformers' SequenceClassifierOutput / TokenClassifierOutput."""

    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, K) sequences, (B, T, K) tokens


class BiLSTMModel(SavePretrained, nn.Module):
    """Embeddings, then the bidirectional LSTM: input_ids (B, T) → h (B, T, 2H)."""

    def __init__(self, config: BiLSTMConfig):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(
            config.vocab_size, config.embedding_dim, padding_idx=config.pad_token_id
        )
        self.dropout = nn.Dropout(config.dropout)
        self.features = WordFeatures(config.features) if config.features.encoder else None
        width = config.embedding_dim + (self.features.dim if self.features is not None else 0)
        self.lstm = recurrent(
            "lstm",
            width,
            config.hidden_size,
            num_layers=config.num_layers,
            bidirectional=config.bidirectional,
            dropout=config.dropout,
        )

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        word_index: torch.Tensor | None = None,
        **features: torch.Tensor,
    ) -> BiLSTMOutput:
        """input_ids, attention_mask (B, T), right-padded; token_type_ids unused. With ``features``: word_index
        (B, T), each token's word (−1: none), and the encoder's inputs of the words (``feature_inputs``)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        lengths = attention_mask.sum(dim=1)  # (B,)
        e = self.embeddings(input_ids)  # E x_t: (B, T, E)
        if self.features is not None:
            if word_index is None:
                raise ValueError("this BiLSTM reads features: give word_index and feature_inputs(words)")
            e = torch.cat([e, self.features(word_index, **features).to(e.dtype)], dim=-1)  # [E x_t; f_t]
        elif features or word_index is not None:
            raise ValueError(f"this BiLSTM reads no features; got {', '.join(features) or 'word_index'}")
        e = self.dropout(e)  # (B, T, E [+ D])
        h, state = self.lstm(e, lengths=lengths)  # packed: h (B, T, 2H), zeros at padding; (h_n, c_n)
        return BiLSTMOutput(last_hidden_state=h, final_state=state)


class BatchNorm(nn.BatchNorm1d):
    """Batch normalisation (Ioffe & Szegedy 2015) of ULMFiT's classifier blocks; a training batch of one example
    (an epoch's last, say) is normalised with the running statistics, as in evaluation — one example has no
    batch variance."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and x.shape[0] == 1:
            return F.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
            )
        return super().forward(x)


class BiLSTMTaskModel(SavePretrained, nn.Module):
    """The encoder under ``bilstm`` and a linear classifier W ∈ R^{K×2H} after dropout; a head says what it
    reads (``logits``) and how it is scored (``loss``)."""

    pools_sentences = False  # a sentence classifier (its concat pooling triples the width)

    def __init__(self, config: BiLSTMConfig):
        super().__init__()
        self.config = config
        self.bilstm = BiLSTMModel(config)
        p = config.dropout if config.classifier_dropout is None else config.classifier_dropout
        self.dropout = nn.Dropout(p)
        width = (2 if config.bidirectional else 1) * config.hidden_size  # of h_t
        if config.pooling == "concat" and self.pools_sentences:
            width *= 3  # [h_T; maxpool(H); meanpool(H)]
        n = config.classifier_hidden
        if n and not self.pools_sentences:
            raise ConfigError(
                "classifier_hidden: ULMFiT's classifier blocks are a sentence classifier's (0 for a tagger)"
            )
        if n:  # ULMFiT's two blocks: batch norm, dropout, linear (ReLU between)
            self.classifier = nn.Sequential(
                BatchNorm(width),
                nn.Dropout(p),
                nn.Linear(width, n),
                nn.ReLU(),
                BatchNorm(n),
                nn.Dropout(p),
                nn.Linear(n, config.num_labels),
            )
        else:
            self.classifier = nn.Linear(width, config.num_labels)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        **features: torch.Tensor,
    ) -> ClassifierOutput:
        """input_ids, attention_mask (B, T), right-padded; labels as the head's ``loss`` takes them;
        ``features``: word_index and the encoder's inputs, when the encoder reads features."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        logits = self.logits(self.bilstm(input_ids, attention_mask, **features), attention_mask)
        if labels is None:
            return ClassifierOutput(None, logits)
        words = self.bilstm.features
        return ClassifierOutput(self.loss(logits, labels) + (words.penalty() if words else 0.0), logits)

    def feature_inputs(self, words: list) -> dict[str, torch.Tensor]:
        """The inputs of the frozen encoder for a batch of examples' words (features.py); {} without one."""
        return {} if self.bilstm.features is None else self.bilstm.features.inputs(words)


class BiLSTMForSequenceClassification(BiLSTMTaskModel):
    """p = softmax(W u + b), u the max-pooled or final states (``config.pooling``)."""

    pools_sentences = True

    def sentence_vector(self, out: BiLSTMOutput, attention_mask: torch.Tensor) -> torch.Tensor:
        """u (B, D) of the encoder's output (D = 2H, H with one direction; ×3 for concat pooling)."""
        h = out.last_hidden_state  # (B, T, D)
        padding = ~attention_mask.bool()[..., None]  # (B, T, 1)
        if self.config.pooling == "max":  # u_k = max_t h_{t,k} over real tokens (InferSent)
            return h.masked_fill(padding, float("-inf")).amax(dim=1)
        h_n = out.final_state[
            0
        ]  # (dirs·L, B, H): the last layer's forward at −2, backward at −1 (or −1 alone)
        last = torch.cat([h_n[-2], h_n[-1]], dim=-1) if self.config.bidirectional else h_n[-1]  # (B, D)
        if self.config.pooling == "last":  # [h→_n; h←_1], or h_T
            return last
        real = attention_mask.to(h.dtype)[..., None]  # (B, T, 1)
        top = h.masked_fill(padding, float("-inf")).amax(dim=1)  # maxpool(H)
        mean = (h * real).sum(1) / real.sum(1).clamp(min=1)  # meanpool(H)
        return torch.cat([last, top, mean], dim=-1)  # [h_T; maxpool(H); meanpool(H)]: (B, 3D)

    def logits(self, out: BiLSTMOutput, attention_mask: torch.Tensor) -> torch.Tensor:
        u = self.sentence_vector(out, attention_mask)
        if self.config.classifier_hidden:  # ULMFiT's blocks have their own dropout
            return self.classifier(u)  # (B, K)
        return self.classifier(self.dropout(u))  # W u + b: (B, K)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """labels (B,) class ids, (B,) floats for regression, (B, K) 0/1 for multi-label."""
        kind = problem_type_of(self.config.problem_type, self.config.num_labels)
        return sequence_classification_loss(logits, labels, kind)


class BiLSTMForTokenClassification(BiLSTMTaskModel):
    """p_t = softmax(W h_t + b) at every token."""

    def logits(self, out: BiLSTMOutput, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(out.last_hidden_state))  # (B, T, K)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """labels (B, T): a tag id on each word's first token, −100 elsewhere (ignored)."""
        return token_classification_loss(logits, labels)


def features_of(model: nn.Module) -> WordFeatures | None:
    base = model.bilstm if isinstance(model, BiLSTMTaskModel) else model
    return base.features


def save_features_tokenizer(model: nn.Module, directory) -> None:
    words = features_of(model)
    if words is not None and words.tokenizer is not None:
        words.tokenizer.save(directory / TOKENIZER_DIR)


def load_features_tokenizer(model: nn.Module, directory) -> None:
    words = features_of(model)
    if words is not None and (directory / TOKENIZER_DIR).is_dir():
        words.tokenizer = Tokenizer.load(directory / TOKENIZER_DIR)


# its checkpoints: config.json (this config and ``architectures``), model.safetensors of the state dict as is
# (a frozen features encoder's weights among them), tokenizer.json (the vocabulary the fine-tuning recipe
# trained), features/ (the features encoder's tokenizer)
FAMILY = Family(
    model_type="bilstm",
    config_class=BiLSTMConfig,
    architectures={
        "BiLSTMModel": BiLSTMModel,
        "BiLSTMForSequenceClassification": BiLSTMForSequenceClassification,
        "BiLSTMForTokenClassification": BiLSTMForTokenClassification,
    },
    heads={
        "base": "BiLSTMModel",
        "sequence": "BiLSTMForSequenceClassification",
        "tokens": "BiLSTMForTokenClassification",
    },
    kind="encoder",
    base_model_prefix="bilstm",
    tokenizer="word",
    head_modules=("classifier",),
    save_files=save_features_tokenizer,
    load_files=load_features_tokenizer,
)
