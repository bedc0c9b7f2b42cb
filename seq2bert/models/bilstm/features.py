"""Feature-based transfer: the layers of a frozen pretrained encoder at the input of the BiLSTM.

ELMo's way (Peters et al. 2018, Sect. 3.3): "we first freeze the weights of the biLM and then concatenate
the ELMo vector ELMo_k^task with x_k and pass the ELMo enhanced representation [x_k; ELMo_k^task] into the
task RNN"::

    ELMo_k = γ Σ_j s_j h_{k,j}          layers="mix": Eq. 1 of Sect. 3.2 (nn/scalar_mix.py), s = softmax(w)
                                        and γ learned with the task, λ Σ_j (w_j − w̄)² added to its loss
    e_k = [E x_k ; ELMo_k]               the BiLSTM's input (models/bilstm/model.py)

BERT's feature-based NER (Devlin et al. 2018, Sect. 5.3, Table 7): the activations of the frozen encoder
at each word's first sub-token, ``layers="last"`` (the last hidden layer) or ``"sum_last_four"`` (the sum
of the last four), into a BiLSTM. ``"mix"`` takes a BERT-family encoder too: its L + 1 layers, the
embeddings as layer 0.

Which words. The BiLSTM reads ids of its own word vocabulary; the encoder reads the words themselves, as
strings, so a word that is [UNK] for the BiLSTM keeps its spelling for ELMo's character CNN or BERT's word
pieces. A family that spells words (``text_inputs``: ELMo) reads <S> w_1 … w_n </S>; the others read
their own tokenizer's [CLS] A [SEP] (B [SEP]) of the words — or, a family that reads no special tokens
(``reads_specials=False``: a translation encoder, CoVe in models/cove.py), the bare sub-words, a pair as one
text — and a word takes the vector of its first sub-token. A sentence pair is one sequence for ELMo (the BiLSTM too reads across the [SEP]). The BiLSTM's
[CLS] and [SEP] stand for no word: their feature vector is zero (ELMo has no such tokens; giving BERT's
its own but not ELMo's would make the two rows of the table differ in more than the features).

Frozen: the encoder's parameters do not require gradients, it stays in eval mode (no dropout inside it)
whatever the task model's mode, and runs under no_grad. Its weights are part of the task model's state
dict, so a checkpoint is self-contained; its tokenizer is written beside them (``features/``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from seq2bert.data.batching import pad_sequences
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import family as families
from seq2bert.models.bilstm.config import FeaturesConfig
from seq2bert.models.family import max_input_length
from seq2bert.nn.scalar_mix import ScalarMix

PREFIX = "features_"  # the encoder's inputs in a task model's batch: features_input_ids, features_char_ids, …
TOKENIZER_DIR = "features"  # the encoder's tokenizer, inside the task model's checkpoint directory
Segments = Sequence[Sequence[str]]  # one example's words: one list per text (two for a pair)


def encoder_family(model_type: str):
    return families.get(model_type, "features.encoder")


class WordFeatures(nn.Module):
    """A frozen encoder and the combination of its layers the task reads: word_index (B, T) → (B, T, D)."""

    def __init__(self, config: FeaturesConfig):
        super().__init__()
        self.config = config
        family = encoder_family(config.encoder.get("model_type"))
        self.family = family
        encoder_config = family.read_config(dict(config.encoder), "features.encoder")
        self.encoder = family.make(encoder_config)
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None  # BERT's [CLS] pooler is not a feature of words
        self.encoder.requires_grad_(False)
        self.encoder.eval()
        self.tokenizer = None  # the encoder's: set by the recipe or when a checkpoint is read
        self.num_layers = feature_layers(encoder_config)
        self.dim = encoder_config.hidden_size
        if config.layers == "sum_last_four" and encoder_config.num_hidden_layers < 4:
            raise ConfigError(
                f"features.layers: sum_last_four needs an encoder of at least 4 layers; "
                f"{config.path or family.model_type} has {encoder_config.num_hidden_layers}"
            )
        self.mix = (
            ScalarMix(self.num_layers, layer_norm=config.layer_norm) if config.layers == "mix" else None
        )
        self.dropout = nn.Dropout(config.dropout)

    def train(self, mode: bool = True) -> WordFeatures:
        super().train(mode)
        self.encoder.eval()  # frozen: never dropout inside it
        return self

    def inputs(self, batch: Sequence[Segments]) -> dict[str, torch.Tensor]:
        """The encoder's inputs (``features_``…) for a batch of examples' words, and ``word_position`` (B, N):
        where word n of each example (its texts' words one after the other) is in the encoder's sequence."""
        if self.tokenizer is None:
            raise CheckpointError(
                "features: the encoder's tokenizer is missing (features/ of the checkpoint)"
            )
        words = [[w for text in segments for w in text] for segments in batch]
        if self.family.text_inputs is not None:  # it spells the words itself (ELMo): word n at position n
            inputs, read = self.family.text_inputs(self.encoder, self.tokenizer, [" ".join(w) for w in words])
            if [len(r) for r in read] != [len(w) for w in words]:
                raise ValueError(
                    "features: the encoder's tokenizer splits the words again (whitespace in a word?)"
                )
            positions = [list(range(len(w))) for w in words]
        else:  # its own sub-words: each word's first one
            specials = self.family.reads_specials  # [CLS] A [SEP] (B [SEP]); else bare, a pair as one text
            if not specials:
                batch = [[w] for w in words]
            texts = [segments[0] if len(segments) == 1 else tuple(segments) for segments in batch]
            limit = max_input_length(self.encoder.config)
            encodings = self.tokenizer.encode_words(texts, max_length=limit, add_special_tokens=specials)
            positions = [
                first_pieces(e.word_ids, e.sequence_ids, [len(t) for t in s])
                for e, s in zip(encodings, batch, strict=True)
            ]
            ids, mask = pad_sequences([e.ids for e in encodings], self.tokenizer.pad_token_id or 0)
            types, _ = pad_sequences([e.type_ids for e in encodings], 0)
            inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        word_position, _ = pad_sequences(positions, -1)  # (B, N), −1: a word cut from the encoder's input
        return {**{PREFIX + k: v for k, v in inputs.items()}, "word_position": word_position}

    @property
    def stored_layers(self) -> int:
        """K: the layers kept per word — all L + 1 for the mix, their fixed combination (one) otherwise."""
        return self.num_layers if self.mix is not None else 1

    @torch.no_grad()
    def word_layers(self, word_position: torch.Tensor, **inputs: torch.Tensor) -> torch.Tensor:
        """The frozen encoder's layers at the words: word_position (B, N) and its ``features_``… inputs →
        (B, N, K, D), zeros for a word it did not read. What a run may compute once per example (``cache``):
        the encoder is frozen and deterministic."""
        encoder_inputs = {k[len(PREFIX) :]: v for k, v in inputs.items() if k.startswith(PREFIX)}
        layers = self.encoder(**encoder_inputs, output_hidden_states=True).hidden_states  # L + 1 × (B, S, D)
        if self.config.layers == "last":
            layers = layers[-1:]
        elif self.config.layers == "sum_last_four":
            layers = [torch.stack(layers[-4:]).sum(0)]  # the sum of the last four hidden layers
        h = torch.stack(layers, dim=2)  # (B, S, K, D)
        at = word_position.clamp(min=0)[..., None, None].expand(-1, -1, *h.shape[2:])  # (B, N, K, D)
        return h.gather(1, at) * word_position.ge(0)[..., None, None].to(h.dtype)

    def forward(
        self, word_index: torch.Tensor, word_layers: torch.Tensor | None = None, **inputs: torch.Tensor
    ) -> torch.Tensor:
        """word_index (B, T): each BiLSTM token's word (−1: none, [CLS] / [SEP] / padding); ``word_layers``
        (B, N, K, D) computed already, or the encoder's inputs (``inputs``) to compute them. → (B, T, D)."""
        if word_layers is None:
            word_layers = self.word_layers(**inputs)
        if word_layers.size(1) == 0:  # no row has a word (empty texts): one zero word to gather from
            word_layers = word_layers.new_zeros(word_layers.size(0), 1, *word_layers.shape[2:])
        if self.mix is not None:  # ELMo_k = γ Σ_j s_j h_{k,j}, the layer norm (if any) over the real words
            words = word_index.amax(1, keepdim=True) + 1  # (B, 1): the words of each row
            mask = torch.arange(word_layers.size(1), device=words.device)[None] < words  # (B, N)
            f = self.mix(list(word_layers.unbind(2)), mask)  # (B, N, D)
        else:
            f = word_layers[:, :, 0]  # the last layer, or the sum of the last four
        picked = f.gather(1, word_index.clamp(min=0)[..., None].expand(-1, -1, f.size(-1)))  # (B, T, D)
        return self.dropout(picked * word_index.ge(0)[..., None].to(f.dtype))

    def penalty(self) -> torch.Tensor | float:
        """λ Σ_j (w_j − w̄)² of the mix (nn/scalar_mix.py), to add to the task loss; 0 without a mix."""
        return self.mix.penalty(self.config.l2) if self.mix is not None and self.config.l2 > 0 else 0.0

    def layer_weights(self) -> dict | None:
        """The learned s_j (softmax-normalised) and γ of the mix: which layers the task reads."""
        if self.mix is None:
            return None
        s, gamma = self.mix.s.detach(), self.mix.gamma.detach()
        return {"s": [round(float(w), 4) for w in s], "gamma": round(float(gamma), 4)}


def feature_layers(config) -> int:
    """The layers an encoder offers: its embeddings (or token layer) and its L hidden layers — or what its
    config's ``feature_layers`` says (a translation encoder's L alone: models/cove.py)."""
    said = getattr(config, "feature_layers", None)
    return said if said is not None else config.num_hidden_layers + 1


def first_pieces(word_ids: Sequence[int | None], sequence_ids: Sequence[int | None], lengths: Sequence[int]):
    """Where each word (of all texts, one after the other) starts in an encoding: its first sub-token's
    position, −1 for a word the encoding cut."""
    offsets = [sum(lengths[:i]) for i in range(len(lengths))]
    out = [-1] * sum(lengths)
    for p, (w, s) in enumerate(zip(word_ids, sequence_ids, strict=True)):
        if w is not None and s is not None and out[offsets[s] + w] < 0:
            out[offsets[s] + w] = p
    return out
