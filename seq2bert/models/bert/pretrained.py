"""Hugging Face BERT directories in and out: config.json, model.safetensors (or pytorch_model.bin read with
weights_only=True) and the tokenizer (tokenizer.json or vocab.txt). The class comes from config.json's
``architectures`` (BertModel, BertForPreTraining, BertForMaskedLM or a task head of tasks.py); ``save_bert``
writes a directory that transformers' ``from_pretrained`` reads with equal outputs; ``init_task_model`` starts
a fine-tuning run from any BERT directory."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.io import write_dir_atomically
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.convert import (
    ARCHITECTURES,
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    to_hf_state_dict,
)
from seq2bert.models.bert.model import BertForMaskedLM, BertForPreTraining, BertModel
from seq2bert.models.bert.tasks import TASK_CLASSES
from seq2bert.models.hf import model_type_of, read_config, read_weights, write_model_files

log = logging.getLogger(__name__)

CLASSES: dict[str, type[nn.Module]] = {
    "BertModel": BertModel,
    "BertForPreTraining": BertForPreTraining,
    "BertForMaskedLM": BertForMaskedLM,
    **TASK_CLASSES,
}


def is_bert_dir(path: str | Path) -> bool:
    return model_type_of(path) == "bert"


def architecture_of(model: nn.Module) -> str:
    for name, cls in CLASSES.items():
        if type(model) is cls:
            return name
    raise TypeError(f"not a BERT model: {type(model).__name__}")


def build_bert(cfg: BertConfig, architecture: str, *, pooler: bool = True) -> nn.Module:
    if architecture not in CLASSES:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")
    if architecture == "BertModel":
        return BertModel(cfg, add_pooling_layer=pooler)
    return CLASSES[architecture](cfg)


def load_bert(
    path: str | Path, architecture: str | None = None, device: str | torch.device = "cpu"
) -> tuple[nn.Module, Tokenizer | None]:
    """The model (eval mode) of a BERT directory — ``architecture`` or the one config.json names — and its
    tokenizer (None when the directory has none)."""
    path = Path(path)
    hf_config = read_config(path)
    cfg = config_from_hf(hf_config, source=str(path / "config.json"))
    named = (hf_config.get("architectures") or ["BertModel"])[0]
    architecture = architecture or (named if named in CLASSES else "BertModel")
    weights = read_weights(path)
    has_pooler = any(k.endswith("pooler.dense.weight") for k in weights)
    model = build_bert(cfg, architecture, pooler=has_pooler)
    model.load_state_dict(from_hf_state_dict(weights, cfg, architecture, source=str(path)))
    tokenizer = None
    if (path / "tokenizer.json").is_file() or (path / "vocab.txt").is_file():
        tokenizer = Tokenizer.from_file(path)
    return model.to(device).eval(), tokenizer


def init_task_model(
    path: str | Path,
    architecture: str,
    *,
    id2label: dict[int, str] | None = None,
    problem_type: str | None = None,
    random_init: bool = False,
    overrides: dict | None = None,
    device: str | torch.device = "cpu",
) -> tuple[nn.Module, Tokenizer | None, list[str]]:
    """A task model (``architecture``, e.g. BertForSequenceClassification) whose encoder comes from the BERT
    directory ``path``; the head — and the pooler when the checkpoint has none — start from the usual
    N(0, initializer_range). A head in the checkpoint with the right shape and the same labels is kept
    (continuing a fine-tuning run); one of another shape, or trained for other ``id2label``, starts new.
    ``random_init``: the architecture and tokenizer of
    ``path`` with fresh weights (the baseline that shows what pretraining buys). ``overrides``: BertConfig
    fields set in place of the checkpoint's (dropout probabilities for fine-tuning, say), validated.

    Returns the model (train mode), the tokenizer and the names of the parameters initialised new."""
    path = Path(path)
    if architecture not in TASK_CLASSES:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(TASK_CLASSES)}")
    hf_config = read_config(path)
    cfg = config_from_hf(hf_config, source=str(path / "config.json"))
    # a head trained for other labels (an RTE classifier starting MRPC, say) starts new even when it fits
    relabelled = id2label is not None and id2label != cfg.id2label
    cfg = replace(cfg, id2label=id2label or cfg.id2label, problem_type=problem_type or cfg.problem_type)
    for key, value in (overrides or {}).items():
        if not hasattr(cfg, key):
            raise ConfigError(f"{key}: not a BERT configuration field")
        setattr(cfg, key, value)
    cfg.validate()
    model = build_bert(cfg, architecture)
    tokenizer = (
        Tokenizer.from_file(path)
        if (path / "tokenizer.json").is_file() or (path / "vocab.txt").is_file()
        else None
    )
    if random_init:
        return model.to(device).train(), tokenizer, sorted(model.state_dict())
    state = from_hf_state_dict(read_weights(path), cfg, architecture, source=str(path), new_heads=True)
    expected = model.state_dict()
    if relabelled:
        for key in [k for k in state if k.startswith("classifier.")]:
            log.info("%s: %s was trained for the labels %s: initialised new", path, key,
                     ", ".join(config_from_hf(hf_config).id2label.values()))  # fmt: skip
            del state[key]
    for key in [k for k, v in state.items() if k in expected and v.shape != expected[k].shape]:
        log.info("%s: %s has shape %s, the task needs %s: initialised new", path, key,
                 tuple(state[key].shape), tuple(expected[key].shape))  # fmt: skip
        del state[key]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:  # from_hf_state_dict only returns keys of our layout
        raise CheckpointError(f"{path}: unexpected keys {', '.join(unexpected)}")
    if missing:
        log.info("%s: initialised new (not in the checkpoint): %s", path, ", ".join(missing))
    return model.to(device).train(), tokenizer, list(missing)


def write_bert_files(model: nn.Module, directory: Path) -> None:
    """config.json and model.safetensors of ``model`` in transformers' layout, into an existing folder (a
    checkpoint being written: the trainer renames the folder into place)."""
    architecture = architecture_of(model)
    config = {**config_to_hf(model.config, architecture), "torch_dtype": "float32"}
    write_model_files(directory, config, to_hf_state_dict(model.state_dict(), model.config, architecture))


def load_bert_weights(model: nn.Module, directory: Path) -> None:
    """Read back what ``write_bert_files`` wrote (resuming a run, or taking its best checkpoint)."""
    state = from_hf_state_dict(read_weights(directory), model.config, architecture_of(model), str(directory))
    model.load_state_dict(state)


def save_bert(model: nn.Module, path: str | Path, tokenizer: Tokenizer | None = None) -> None:
    """Write ``model`` (and ``tokenizer``) as a transformers BERT directory, atomically."""

    def write(tmp: Path) -> None:
        write_bert_files(model, tmp)
        if tokenizer is not None:
            tokenizer.save(tmp)

    write_dir_atomically(Path(path), write)
