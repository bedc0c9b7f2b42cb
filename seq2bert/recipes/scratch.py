"""A model trained from random weights on a fine-tuning task (the fine-tuning recipe's ``model``, in place of a
checkpoint's ``init``): the pre-Transformer baselines — a BiLSTM over random word embeddings — or any encoder
family with the task's head. With no checkpoint there is no vocabulary either: the tokenizer is trained on the
task's training texts, and the family's config takes its size, the padding id and the task's labels.

    seq2bert finetune --task sst2 --model bilstm --data ../shared/data/sst2 --out runs/sst2-bilstm \\
        --set model_config.hidden_size=128 --set vocab.min_frequency=1
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from tqdm.auto import tqdm

from seq2bert import config as config_io
from seq2bert.data.finetuning import collate
from seq2bert.data.tokenization import SPECIAL_TOKENS, Tokenizer
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.tasks.task import HEADS, Task

# the config fields the recipe sets: from the trained tokenizer, from the task, from --features
RECIPE_FIELDS = ("vocab_size", "pad_token_id", "id2label", "problem_type", "features")


@dataclass
class VocabConfig:
    """The tokenizer of a model trained from scratch, trained on the task's training texts: whole words (the
    classic baseline: a word seen fewer than ``min_frequency`` times is [UNK], so that [UNK] is trained for
    the unseen words of dev), or WordPiece / BPE sub-words (data/tokenization.py)."""

    kind: Literal["word", "wordpiece", "bpe"] = "word"
    vocab_size: int = 50000
    min_frequency: int = 2
    lowercase: bool = False  # SST-2 comes lowercased; CoNLL-2003 keeps case, a cue for names

    def validate(self) -> None:
        if self.vocab_size <= len(SPECIAL_TOKENS):
            raise ConfigError(f"vocab_size: must be above {len(SPECIAL_TOKENS)}, got {self.vocab_size}")
        if self.min_frequency < 1:
            raise ConfigError(f"min_frequency: must be at least 1, got {self.min_frequency}")

    def __post_init__(self) -> None:
        self.validate()


TASK_HEADS = set(HEADS)  # the fine-tuning shapes (tasks/task.py)


def model_config(model: str, overrides: dict[str, Any], **fields) -> Any:
    """The config of family ``model``: its defaults ← ``overrides`` (model_config) ← ``fields`` (the recipe's),
    every key and value checked; errors name ``model_config.<key>``."""
    # the encoders a task model can be built from: those with a fine-tuning head (ELMo's biLM has none;
    # its layers are features for the BiLSTM, not a model to fine-tune)
    encoders = [t for t, f in registry.FAMILIES.items() if f.kind == "encoder" and set(f.heads) & TASK_HEADS]
    if model not in encoders:
        raise ConfigError(f"model: expected an encoder family ({', '.join(encoders)}), got {model!r}")
    family = registry.get(model)
    taken = [k for k in RECIPE_FIELDS if k in overrides]
    if taken:
        raise ConfigError(f"model_config.{taken[0]}: set by the recipe (from the tokenizer and the task)")
    return config_io.from_dict(family.config_class, {**overrides, **fields}, prefix="model_config.")


def training_texts(task: Task, examples: Iterable) -> Iterator[str]:
    """The texts of a task's training examples, to train a tokenizer on."""
    for e in examples:
        yield from task.texts(e)


def reads_features(model: str) -> bool:
    """Whether family ``model`` can read a frozen encoder's features (its config has ``features``)."""
    return "features" in registry.get(model).config_class.__dataclass_fields__


def features_encoder(path: str, model: str) -> tuple[nn.Module, Any]:
    """The frozen encoder whose layers ``model`` reads, and its tokenizer: the bare model of a checkpoint of
    an encoder family (ELMo, BERT, …) other than ``model``'s own."""
    family = registry.family_at(path)
    if family.kind != "encoder" or family.model_type == model or "base" not in family.heads:
        encoders = [t for t, f in registry.FAMILIES.items() if f.kind == "encoder" and t != model]
        raise ConfigError(
            f"features: {path} is a {family.model_type} checkpoint; the features come from an "
            f"encoder ({', '.join(encoders)})"
        )
    encoder, tok = registry.load(path, head="base")
    if tok is None:
        raise CheckpointError(f"{path}: no tokenizer (the features encoder reads the words with its own)")
    return encoder, tok


def new_model(
    model: str,
    overrides: dict[str, Any],
    vocab: VocabConfig,
    task: Task,
    examples: list,
    architecture: str,
    *,
    id2label: dict[int, str] | None,
    problem_type: str | None,
    resume_from: Path | None = None,
    features: Any = None,
) -> tuple[nn.Module, Tokenizer]:
    """A model of family ``model`` (``architecture``) with random weights, and a tokenizer trained on the
    training ``examples`` — or read from ``resume_from``, the checkpoint a resumed run continues from.
    ``features`` (models/bilstm/config.py FeaturesConfig, its ``path`` set): the model also reads that
    encoder's layers, the encoder's weights copied in and frozen."""
    if resume_from is not None and (resume_from / "tokenizer.json").is_file():
        tok = Tokenizer.load(resume_from)
    else:
        tok = Tokenizer.train(
            training_texts(task, examples),
            kind=vocab.kind,
            vocab_size=vocab.vocab_size,
            min_frequency=vocab.min_frequency,
            lowercase=vocab.lowercase,
        )
    fields = {"vocab_size": tok.vocab_size, "pad_token_id": tok.pad_token_id, "problem_type": problem_type}
    if id2label is not None:
        fields["id2label"] = id2label
    encoder = None
    if features is not None and features.path:
        encoder, encoder_tok = features_encoder(features.path, model)
        family = registry.family_of(encoder)
        encoder_config = family.write_config(encoder.config, family.base_architecture)
        fields["features"] = {**config_io.to_dict(features), "encoder": encoder_config}
    config = model_config(model, overrides, **fields)
    net = registry.get(model).make(config, architecture)
    if encoder is not None:  # the pretrained weights (all of them but what it does not read: BERT's pooler)
        words = registry.family_of(net).base_model(net).features
        ours = words.encoder.state_dict()
        words.encoder.load_state_dict({k: v for k, v in encoder.state_dict().items() if k in ours})
        words.tokenizer = encoder_tok
    return net, tok


@torch.no_grad()
def cache_word_layers(
    model: nn.Module, features: list[dict], *, batch_size: int = 64, progress: bool = False
) -> None:
    """Each feature's frozen-encoder layers at its words, ``word_layers`` (n, K, D), computed once in place
    of its ``words``: the encoder is frozen and in eval mode, so every step would compute the same."""
    words = registry.family_of(model).base_model(model).features
    order = sorted(range(len(features)), key=lambda i: len(features[i]["word_index"]))  # little padding
    for start in tqdm(
        range(0, len(order), batch_size), desc="features", disable=not progress, mininterval=1.0
    ):
        chunk = [features[i] for i in order[start : start + batch_size]]
        layers = words.word_layers(**words.inputs([f["words"] for f in chunk]))  # (B, N, K, D)
        for f, row in zip(chunk, layers, strict=True):
            f["word_layers"] = row[: sum(len(text) for text in f.pop("words"))].clone()


def reads_words(model) -> bool:
    """Whether ``model`` reads a frozen encoder's features of the words (its config's ``features``)."""
    return bool(getattr(getattr(model.config, "features", None), "encoder", None))


def batch_of(model, features: list[dict], pad_token_id: int, collate=collate) -> dict[str, torch.Tensor]:
    """The padded batch of ``features`` (by the task's ``collate``), with the frozen encoder's inputs of their
    words when they have any."""
    batch = collate(features, pad_token_id)
    if "words" in features[0]:
        batch.update(model.feature_inputs([f["words"] for f in features]))
    return batch
