"""Checkpoint directories in and out, for any family (seq2bert/models/family.py):

- Hugging Face directories — config.json, model.safetensors (or pytorch_model.bin read with
  weights_only=True) and the tokenizer files — through the family's conversions: the class comes from
  config.json's ``architectures`` (or the one asked for); ``save_hf`` writes a directory that transformers'
  ``from_pretrained`` reads with equal outputs; ``init_task_model`` starts a fine-tuning run from any
  checkpoint of the family;
- seq2bert's own checkpoints — config.json of the config dataclass, model.safetensors of our state dict,
  tokenizer.json — for the families transformers has no class for.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2bert import config as config_io
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.io import load_weights, read_json, resolve_checkpoint, save_weights, write_dir_atomically
from seq2bert.models import encoder_options, hub, quantized
from seq2bert.models import family as families
from seq2bert.models.family import Family
from seq2bert.models.hf import read_config, read_weights, write_model_files

log = logging.getLogger(__name__)


# --- Hugging Face directories
def load_hf(
    family: Family, path: str | Path, architecture: str | None = None, device: str | torch.device = "cpu"
) -> tuple[nn.Module, Any]:
    """The model (eval mode) of a Hugging Face directory — ``architecture`` or the one config.json names —
    and its tokenizer (None when the directory has none)."""
    path = Path(path)
    hf_config = read_config(path)
    cfg = family.read_config(hf_config, str(path / "config.json"))
    named = (hf_config.get("architectures") or [family.base_architecture])[0]
    architecture = architecture or (named if named in family.architectures else family.base_architecture)
    if architecture not in family.architectures:
        raise CheckpointError(
            f"architecture {architecture!r}: expected one of {', '.join(family.architectures)}"
        )
    if quantized.is_int8_dir(path):  # `seq2bert quantize`'s directory: int8 Linears, on the CPU

        def build() -> nn.Module:  # the float skeleton, with the options config.json records
            model = family.make(cfg, architecture)
            encoder_options.restore(model, hf_config, path)  # their weights are among the int8 directory's
            return model

        return quantized.load_int8(build, path, device), hf_tokenizer(family, path)
    weights = read_weights(path)
    model = family.make(cfg, architecture, weights)
    state = family.read_state(weights, cfg, architecture, str(path), False)
    state |= encoder_options.restore(model, hf_config, path)  # the encoder's options config.json records
    try:
        model.load_state_dict(state)
    except RuntimeError as e:  # config.json and the weights disagree
        first = next((line.strip() for line in str(e).splitlines()[1:] if line.strip()), str(e))
        raise CheckpointError(f"{path}: the weights do not fit config.json ({first})") from None
    if family.load_files is not None:
        family.load_files(model, path)
    return model.to(device).eval(), hf_tokenizer(family, path)


def hf_tokenizer(family: Family, path: Path) -> Any:
    if family.load_tokenizer is not None:
        return family.load_tokenizer(path)
    if (path / "tokenizer.json").is_file() or (path / "vocab.txt").is_file():
        return Tokenizer.from_file(path)
    return None


def init_task_model(
    family: Family,
    path: str | Path,
    architecture: str,
    *,
    id2label: dict[int, str] | None = None,
    problem_type: str | None = None,
    random_init: bool = False,
    overrides: dict | None = None,
    options: dict[str, Any] | None = None,
    device: str | torch.device = "cpu",
) -> tuple[nn.Module, Any, list[str]]:
    """A task model (``architecture``, e.g. BertForSequenceClassification) whose encoder comes from the
    directory ``path`` (or a Hub model name, models/hub.py); the head — and the pooler when the checkpoint has none — start from the family's
    initialisation. A head in the checkpoint with the right shape and the same labels is kept (continuing
    a fine-tuning run); one of another shape, or trained for other ``id2label``, starts new.
    ``random_init``: the architecture and tokenizer of ``path`` with fresh weights (the baseline that shows
    what pretraining buys). ``overrides``: config fields set in place of the checkpoint's (dropout
    probabilities for fine-tuning, say), validated. ``options``: the encoder's options to add, name → settings
    (models/encoder_options.py: SesameBERT's, a BiLSTM on top) — of each, the one the checkpoint records, with
    its weights, when it has one and none is asked for.

    Returns the model (train mode), the tokenizer and the names of the parameters initialised new."""
    path = hub.local_path(path)  # a directory, or a Hub name's folder in the cache
    # "base": the bare encoder, which a sentence-embedding run pools (recipes/sentence_embedding.py)
    heads = ("base", "sequence", "similarity", "tokens", "qa", "choice")
    tasks = [a for h, a in family.heads.items() if h in heads]
    if architecture not in tasks:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(tasks)}")
    hf_config = read_config(path)
    cfg = family.read_config(hf_config, str(path / "config.json"))
    # a head trained for other labels (an RTE classifier starting MRPC, say) starts new even when it fits
    relabelled = id2label is not None and id2label != cfg.id2label
    trained_labels = cfg.id2label
    cfg = replace(cfg, id2label=id2label or cfg.id2label, problem_type=problem_type or cfg.problem_type)
    # A departure from Devlin et al. Sect. 5.1, who kept the left-only mask at fine-tuning ("removing it
    # introduced a pre-train/fine-tune mismatch"): here a [CLS] classifier under that mask would see [CLS] alone
    if getattr(cfg, "is_decoder", False):
        log.info(
            "%s: pretrained left to right (is_decoder); the task model reads it as a bidirectional encoder",
            path,
        )
        cfg = replace(cfg, is_decoder=False)
    for key, value in (overrides or {}).items():
        if not hasattr(cfg, key):
            raise ConfigError(f"{key}: not a {family.model_type} configuration field")
        setattr(cfg, key, value)
    cfg.validate()
    model = family.make(cfg, architecture)
    recorded = encoder_options.read_settings(hf_config, str(path / "config.json"))
    asked = {name: s for name, s in (options or {}).items() if s is not None and s.enabled}
    options = recorded | asked
    encoder_options.attach(model, options)
    tokenizer = hf_tokenizer(family, path)
    if random_init:
        return model.to(device).train(), tokenizer, sorted(model.state_dict())
    state = family.read_state(read_weights(path), cfg, architecture, str(path), True)
    continued = [name for name, s in options.items() if recorded.get(name) == s]  # they go on training
    state |= encoder_options.read_weights(path, continued)
    expected = model.state_dict()
    if relabelled:
        for key in [k for k in state if k.split(".")[0] in family.head_modules]:
            log.info(
                "%s: %s was trained for the labels %s: initialised new",
                path,
                key,
                ", ".join(trained_labels.values()),
            )
            del state[key]
    for key in [k for k, v in state.items() if k in expected and v.shape != expected[k].shape]:
        log.info(
            "%s: %s has shape %s, the task needs %s: initialised new",
            path,
            key,
            tuple(state[key].shape),
            tuple(expected[key].shape),
        )
        del state[key]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if family.load_files is not None:
        family.load_files(model, path)
    if unexpected:  # read_state only returns keys of our layout
        raise CheckpointError(f"{path}: unexpected keys {', '.join(unexpected)}")
    if missing:
        log.info("%s: initialised new (not in the checkpoint): %s", path, ", ".join(missing))
    return model.to(device).train(), tokenizer, list(missing)


def init_lm_model(
    family: Family, path: str | Path, architecture: str, device: str | torch.device = "cpu"
) -> tuple[nn.Module, list[str]]:
    """A language model of ``architecture`` (a masked LM, the family's pretraining model, a GPT's LM head)
    whose weights come from the directory ``path``, to continue its pretraining: the checkpoint's head when
    it has this one; else the head — and the pooler a sentence head reads, when the checkpoint has none —
    start from the family's initialisation, a decoder tied to the word embeddings as the family ties it;
    the checkpoint's other heads (a classifier's) are dropped. Returns the model (train mode) and the names
    of the parameters initialised new."""
    path = Path(path)
    cfg = family.read_config(read_config(path), str(path / "config.json"))
    model = family.make(cfg, architecture)
    # new_heads: a head is loaded only when the checkpoint has all of it, and other heads are dropped
    state = family.read_state(read_weights(path), cfg, architecture, str(path), True)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:  # read_state only returns keys of our layout
        raise CheckpointError(f"{path}: unexpected keys {', '.join(unexpected)}")
    if family.load_files is not None:
        family.load_files(model, path)
    return finite((model.to(device).train(), None), path)[0], list(missing)


def write_hf_files(
    family: Family,
    model: nn.Module,
    directory: Path,
    state: dict[str, torch.Tensor] | None = None,
    extra: dict[str, torch.Tensor] | None = None,
) -> None:
    """config.json and model.safetensors of ``model`` in transformers' layout, into an existing folder (a
    checkpoint being written: the trainer renames the folder into place). ``state``: the weights to write in
    place of ``model``'s state dict (a LoRA model's, merged: seq2bert/nn/lora.py); ``extra``: tensors of
    transformers' names stored beside the model's (a pooler the architecture ignores but a task reads)."""
    architecture = family.architecture_of(model)
    config = {**family.write_config(model.config, architecture), "torch_dtype": "float32"}
    config |= encoder_options.config_entry(model)
    state, own = encoder_options.split_state(model.state_dict() if state is None else state)
    theirs = family.write_state(state, model.config, architecture)
    write_model_files(directory, config, {**theirs, **(extra or {})})
    encoder_options.write_weights(
        own, directory
    )  # the encoder's options' weights, beside the family's layout
    if family.save_files is not None:
        family.save_files(model, directory)


def load_hf_weights(family: Family, model: nn.Module, directory: Path) -> None:
    """Read back what ``write_hf_files`` wrote (resuming a run, or taking its best checkpoint)."""
    architecture = family.architecture_of(model)
    state = family.read_state(read_weights(directory), model.config, architecture, str(directory), False)
    model.load_state_dict(state | encoder_options.read_weights(directory))


def write_tokenizer(family: Family, tokenizer: Any, directory: Path, config: Any) -> None:
    """The tokenizer's files in a checkpoint of ``family``: its own writer (GPT's adds tokenizer_config.json),
    else ``tokenizer.save``."""
    if family.save_tokenizer is not None:
        family.save_tokenizer(tokenizer, directory, config)
    else:
        tokenizer.save(directory)


def save_hf(family: Family, model: nn.Module, path: str | Path, tokenizer: Any = None) -> None:
    """Write ``model`` (and ``tokenizer``) as a transformers directory, atomically."""

    def write(tmp: Path) -> None:
        write_hf_files(family, model, tmp)
        if tokenizer is not None:
            write_tokenizer(family, tokenizer, tmp, model.config)

    write_dir_atomically(Path(path), write)


# --- any checkpoint, of whichever family it is
def checkpoint_dir(path: str | Path) -> Path:
    """A checkpoint directory itself (anything with a config.json), or a run directory's best checkpoint; or
    of a model name of the Hugging Face Hub (``org/name[@revision]``), its folder in the huggingface_hub cache
    (models/hub.py: a local directory always comes first)."""
    path = hub.local_path(path)
    return path if (path / "config.json").is_file() else resolve_checkpoint(path)


def family_at(path: str | Path) -> Family:
    """The family of a checkpoint or run directory, from its config.json."""
    directory = checkpoint_dir(path)
    return families.get(read_json(directory / "config.json").get("model_type"), directory / "config.json")


def load(
    path: str | Path,
    *,
    architecture: str | None = None,
    head: str | tuple[str, ...] | None = None,
    device: str | torch.device = "cpu",
) -> tuple[nn.Module, Any]:
    """(model in eval mode, tokenizer) of a checkpoint or run directory, of whichever family it is: the
    ``architecture`` asked for, or the one that has ``head`` ("base", "masked_lm", "sequence", …) — of several
    heads, the one config.json names, else the first's —, or the one its config.json names. A head the
    checkpoint keeps in a directory of its own (``Family.head_dirs``: an ELECTRA run's generator/) comes from
    there when the model config.json names lacks it."""
    directory = checkpoint_dir(path)
    family = family_at(directory)
    named = candidates = None
    if head is not None:
        heads = (head,) if isinstance(head, str) else head
        named = (read_json(directory / "config.json").get("architectures") or [None])[0]
        try:
            candidates = [family.architecture_for(h) for h in heads if h in family.heads or h == heads[0]]
        except KeyError as e:
            raise CheckpointError(f"{path}: {e.args[0]}") from None
        inside = [directory / family.head_dirs[h] for h in heads if h in family.head_dirs]
        if named not in candidates and inside and (inside[0] / "config.json").is_file():
            log.info("%s: a %s; its %s head is the model in %s", path, named, heads[0], inside[0])
            return load(inside[0], architecture=architecture, head=head, device=device)
        architecture = named if named in candidates else candidates[0]
    if not family.huggingface:
        return finite(load_native(family, directory, device), directory)
    try:
        loaded = load_hf(family, directory, architecture, device)
    except CheckpointError as e:
        if named is None or named in candidates:
            raise
        kept = "".join(f"; a checkpoint keeps it in {d}/" for h, d in family.head_dirs.items() if h in heads)
        raise CheckpointError(f"{e} (a {named} has no {heads[0]} head{kept})") from None
    return finite(loaded, directory)


def finite(loaded: tuple[nn.Module, Any], directory: Path) -> tuple[nn.Module, Any]:
    """``loaded`` (model, tokenizer), unless a weight of the model is NaN or infinite — a run that diverged, a
    damaged file: every output would be NaN — which is a one-line CheckpointError naming the checkpoint and
    the tensor."""
    for name, weight in loaded[0].named_parameters():
        if weight.is_floating_point() and not torch.isfinite(weight).all():
            bad = int((~torch.isfinite(weight)).sum())
            raise CheckpointError(
                f"{directory}: non-finite weights ({bad} NaN or infinite values in {name}); not used"
            )
    return loaded


class SavePretrained:
    """transformers' habit on every model class: ``model.save_pretrained(path, tokenizer=None)`` writes the
    model's checkpoint — a directory transformers reads for a Hugging Face-layout family, seq2bert's own
    layout for the translation models — and ``Class.from_pretrained(path)`` reads one back as that class (a
    head model's directory gives its bare model too). The family is found by the config's ``model_type``
    (models/family.py), so a family registered at run time has them as well."""

    def save_pretrained(self, path, tokenizer=None) -> None:
        family = families.family_of(self)
        if family.huggingface:
            save_hf(family, self, path, tokenizer)
        else:
            save_native(family, self, path, tokenizer)

    @classmethod
    def from_pretrained(cls, path, device: str | torch.device = "cpu") -> nn.Module:
        """The model of a checkpoint (or a run directory's best) as this class, in eval mode."""
        directory = checkpoint_dir(path)
        family = family_at(directory)
        if cls not in family.architectures.values():
            # a family that writes another's layout (SpanBERT's checkpoints are BERT directories) reads it
            own = [f for f in families.FAMILIES.values() if cls in f.architectures.values()]
            mismatch = CheckpointError(
                f"{path}: a {family.model_type} checkpoint, which has no {cls.__name__} "
                f"(it has: {', '.join(family.architectures)})"
            )
            if not own or not own[0].huggingface:
                raise mismatch
            try:
                return load_hf(own[0], directory, own[0].architecture_of_class(cls), device)[0]
            except (CheckpointError, ConfigError):
                raise mismatch from None
        if not family.huggingface:
            return load_native(family, directory, device, need_tokenizer=False)[0]
        return load_hf(family, directory, family.architecture_of_class(cls), device)[0]


# --- seq2bert's own checkpoints
def config_from_dict(family: Family, data: dict[str, Any], source: str | Path = "config") -> Any:
    """The family's config dataclass from a config.json dictionary, checked key by key."""
    try:
        return config_io.from_dict(family.config_class, data)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_native(
    family: Family, path: str | Path, device: str | torch.device = "cpu", need_tokenizer: bool = True
) -> tuple[nn.Module, Tokenizer | None]:
    """The model (eval mode) and tokenizer of a seq2bert checkpoint (or a run directory's best one); without
    ``need_tokenizer``, None for a checkpoint that has none."""
    path = resolve_checkpoint(path)
    cfg = config_from_dict(family, read_json(path / "config.json"), source=path / "config.json")
    if quantized.is_int8_dir(path):
        model = quantized.load_int8(lambda: family.make(cfg), path, device)
    else:
        model = family.make(cfg)
        load_weights(model, path)
    if not (path / "tokenizer.json").is_file():
        if not need_tokenizer:
            return model.to(device).eval(), None
        raise CheckpointError(f"{path}: no tokenizer.json")
    return model.to(device).eval(), Tokenizer.load(path)


def save_native(family: Family, model: nn.Module, path: str | Path, tokenizer: Any = None) -> None:
    """Write ``model`` (and ``tokenizer``) as a seq2bert checkpoint — config.json of its config dataclass,
    model.safetensors — atomically."""

    def write(tmp: Path) -> None:
        family.architecture_of(model)  # one of the family's classes
        config_io.save(model.config, tmp / "config.json")
        save_weights(model, tmp)
        if tokenizer is not None:
            tokenizer.save(tmp)

    write_dir_atomically(Path(path), write)
