"""Hugging Face BERT directories in and out: config.json, model.safetensors (or pytorch_model.bin read with
weights_only=True) and the tokenizer (tokenizer.json or vocab.txt). The class comes from config.json's
``architectures`` (BertModel, BertForPreTraining or BertForMaskedLM); ``save_bert`` writes a directory that
transformers' ``from_pretrained`` reads with equal outputs."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import CheckpointError
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.convert import (
    ARCHITECTURES,
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    to_hf_state_dict,
)
from seq2bert.models.bert.model import BertForMaskedLM, BertForPreTraining, BertModel
from seq2bert.models.hf import model_type_of, read_config, read_weights, write_model_dir

CLASSES: dict[str, type[nn.Module]] = {
    "BertModel": BertModel,
    "BertForPreTraining": BertForPreTraining,
    "BertForMaskedLM": BertForMaskedLM,
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


def save_bert(model: nn.Module, path: str | Path, tokenizer: Tokenizer | None = None) -> None:
    """Write ``model`` (and ``tokenizer``) as a transformers BERT directory, atomically."""
    architecture = architecture_of(model)
    config = {**config_to_hf(model.config, architecture), "torch_dtype": "float32"}

    def extra(tmp: Path) -> None:
        if tokenizer is not None:
            tokenizer.save(tmp)

    write_model_dir(path, config, to_hf_state_dict(model.state_dict(), model.config, architecture), extra)
