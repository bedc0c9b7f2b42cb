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
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from tqdm.auto import tqdm

from seq2bert import config as config_io
from seq2bert.data.finetuning import collate
from seq2bert.data.tokenization import SPECIAL_TOKENS, Tokenizer
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import cove, registry
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


@dataclass
class VectorsInitConfig:
    """Static word vectors the word embeddings of a model from scratch start from (``--vectors``): a
    train-vectors run, a checkpoint of word2vec / GloVe / fastText, or a published file (word2vec text or
    binary, GloVe text). Each word of the task's vocabulary takes its vector — looked up as it is, else
    lower-cased; fastText composes one for a word it never saw from its n-grams — and the rest ([UNK], the
    special tokens, words the vectors lack) keep their random start. The embedding width becomes the
    vectors'. ``freeze``: the vectors stay as they are (the feature-based use), else the task tunes them."""

    path: str = ""
    freeze: bool = False


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


def starts_from_lm(model: str) -> bool:
    """Whether family ``model`` can start from a recurrent language model (``--init`` with ``--model``: a
    config with ``bidirectional``, the BiLSTM's)."""
    return any(f.name == "bidirectional" for f in dataclass_fields(registry.get(model).config_class))


def reads_features(model: str) -> bool:
    """Whether family ``model`` can read a frozen encoder's features (its config has ``features``)."""
    return "features" in registry.get(model).config_class.__dataclass_fields__


def features_encoder(path: str, model: str) -> tuple[nn.Module, Any]:
    """The frozen encoder whose layers ``model`` reads, and its tokenizer: the bare model of a checkpoint of
    an encoder family (ELMo, BERT, …) other than ``model``'s own, or the encoder of a translation model
    (CoVe, models/cove.py)."""
    family = registry.family_at(path)
    if family.word_vectors:
        raise ConfigError(f"features: {path} holds static word vectors: give them as --vectors")
    if registry.translates(family):
        translation, tok = registry.load(path)
        return cove.from_translation(translation, str(path)), tok
    if family.kind != "encoder" or family.model_type == model or "base" not in family.heads:
        encoders = [
            t
            for t, f in registry.FAMILIES.items()
            if f.kind == "encoder" and t not in (model, cove.FAMILY.model_type) and not f.word_vectors
        ]
        raise ConfigError(
            f"features: {path} is a {family.model_type} checkpoint; the features come from an "
            f"encoder ({', '.join(encoders)}) or a translation model's (bahdanau, luong: CoVe)"
        )
    encoder, tok = registry.load(path, head="base")
    if tok is None:
        raise CheckpointError(f"{path}: no tokenizer (the features encoder reads the words with its own)")
    return encoder, tok


def recurrent_lm(path: str) -> tuple[nn.Module, Tokenizer]:
    """The LSTM language model of a train-lm run or checkpoint, and its tokenizer."""
    family = registry.family_at(path)
    if family.model_type != "rnn-lm":
        raise ConfigError(
            f"init: {path} is a {family.model_type} checkpoint; a model from scratch (--model) starts from a "
            "recurrent language model of train-lm (an LSTM), or from nothing"
        )
    model, tok = registry.load(path, head="causal_lm")
    if model.config.cell != "lstm":
        raise ConfigError(
            f"init: {path} is a {model.config.cell} language model; the BiLSTM starts from an LSTM"
        )
    if tok is None:
        raise CheckpointError(f"{path}: no tokenizer in the checkpoint")
    return model, tok


def lm_shape(config, overrides: dict[str, Any]) -> dict[str, Any]:
    """The fields of a model from scratch that the language model fixes: its sizes, and one direction."""
    shape = {
        "embedding_dim": config.embedding_dim,
        "hidden_size": config.hidden_size,
        "num_layers": config.num_layers,
        "bidirectional": False,
    }
    for key, value in shape.items():
        if key in overrides and overrides[key] != value:
            raise ConfigError(
                f"model_config.{key}: {overrides[key]}, but the language model it starts from has {value}"
            )
    return shape


@torch.no_grad()
def copy_lm_weights(net: nn.Module, lm: nn.Module) -> None:
    """Dai & Le (2015, Sect. 2): "the weights of the LSTM are initialised with the weights of the language
    model" — its embedding matrix and every layer of the LSTM into the classifier's (the LM's softmax
    layer stays behind; the classifier's head starts new)."""
    base = registry.family_of(net).base_model(net)
    base.embeddings.weight.copy_(lm.embed.weight)
    ours, theirs = base.lstm.rnn.state_dict(), lm.rnn.rnn.state_dict()
    if ours.keys() != theirs.keys():
        raise ConfigError("init: the language model's LSTM does not fit the classifier's")
    base.lstm.rnn.load_state_dict(theirs)


def word_table(net: nn.Module) -> nn.Embedding:
    """The word embedding table of a model from scratch (the BiLSTM's E)."""
    table = getattr(registry.family_of(net).base_model(net), "embeddings", None)
    if not isinstance(table, nn.Embedding):
        raise ConfigError(
            f"vectors: a {net.config.model_type} model has no word embedding table for them (--model bilstm)"
        )
    return table


@torch.no_grad()
def init_from_vectors(net: nn.Module, tok: Tokenizer, vectors: VectorsInitConfig, wv, source) -> dict:
    """Copy the vectors ``wv`` (data/vector_files.py WordVectors; ``source`` their model, when there is one:
    fastText's composes the words it never saw) into ``net``'s word embeddings at each word of ``tok``; returns
    how many of the vocabulary's words found one."""
    table = word_table(net)
    vocab = tok.backend.get_vocab()
    specials = set(SPECIAL_TOKENS)
    words = sorted((i, w) for w, i in vocab.items() if w not in specials)
    index = wv.index
    found = {i: index.get(w, index.get(w.lower())) for i, w in words}
    rows = [i for i, j in found.items() if j is not None]
    table.weight[rows] = wv.vectors[[found[i] for i in rows]].to(table.weight)
    composed = 0
    missing = [(i, w.lower()) for i, w in words if found[i] is None]
    if source is not None and missing:  # fastText: the n-grams of a word it never saw
        made, _ = source.vectors_for([w for _, w in missing])
        some = made.norm(dim=-1) > 0
        ids = [i for (i, _), ok in zip(missing, some.tolist(), strict=True) if ok]
        table.weight[ids] = made[some].to(table.weight)
        composed = len(ids)
    table.weight.requires_grad_(not vectors.freeze)
    return {"vectors_found": len(rows), "vectors_composed": composed, "vocabulary_words": len(words)}


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
    vectors: VectorsInitConfig | None = None,
    lm: str = "",
    lm_weights: bool = True,
) -> tuple[nn.Module, Tokenizer, dict]:
    """A model of family ``model`` (``architecture``) with random weights, and a tokenizer trained on the
    training ``examples`` — or read from ``resume_from``, the checkpoint a resumed run continues from.
    ``features`` (models/bilstm/config.py FeaturesConfig, its ``path`` set): the model also reads that
    encoder's layers, the encoder's weights copied in and frozen. ``vectors`` (its ``path`` set): the word
    embeddings start from those static vectors (``init_from_vectors``; what it found is the dict returned).
    ``lm``: a recurrent language model of train-lm (an LSTM) whose tokenizer, embeddings and LSTM layers the
    model starts from, one direction (Dai & Le 2015; ULMFiT) — ``copy_lm_weights`` — or, ``lm_weights=False``,
    only its tokenizer and shape (fresh weights: the baseline of an equal budget)."""
    language_model = None
    if lm:
        language_model, tok = recurrent_lm(lm)
        shape = lm_shape(language_model.config, overrides)
        overrides = {**overrides, **shape}
    elif resume_from is not None and (resume_from / "tokenizer.json").is_file():
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
    wv = source = None
    if vectors is not None and vectors.path:
        from seq2bert.models.static_vectors import word_vectors_at

        if not any(f.name == "embedding_dim" for f in dataclass_fields(registry.get(model).config_class)):
            raise ConfigError(
                f"vectors: a {model} model has no word embedding table for them (--model bilstm)"
            )
        wv, source = word_vectors_at(vectors.path)
        width = overrides.get("embedding_dim", wv.dim)
        if width != wv.dim:
            raise ConfigError(
                f"model_config.embedding_dim: {width}, but the vectors at {vectors.path} have {wv.dim} dimensions"
            )
        fields["embedding_dim"] = wv.dim
    config = model_config(model, overrides, **fields)
    net = registry.get(model).make(config, architecture)
    found = init_from_vectors(net, tok, vectors, wv, source) if wv is not None else {}
    if language_model is not None and lm_weights:
        copy_lm_weights(net, language_model)
    if encoder is not None:  # the pretrained weights (all of them but what it does not read: BERT's pooler)
        words = registry.family_of(net).base_model(net).features
        ours = words.encoder.state_dict()
        words.encoder.load_state_dict({k: v for k, v in encoder.state_dict().items() if k in ours})
        words.tokenizer = encoder_tok
    return net, tok, found


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
