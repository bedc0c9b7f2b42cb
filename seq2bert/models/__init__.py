"""The model families of seq2bert, in one explicit registry: model_type → (config class, model class)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from seq2bert import config as config_io
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models.attention.bahdanau import RNNSearch
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.attention.luong import LuongNMT
from seq2bert.models.seq2seq.cho import ChoEncoderDecoder
from seq2bert.models.seq2seq.config import ChoConfig, Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.model import Transformer

MODELS: dict[str, tuple[type, type[nn.Module]]] = {
    "seq2seq": (Seq2SeqConfig, Seq2Seq),
    "cho": (ChoConfig, ChoEncoderDecoder),
    "bahdanau": (BahdanauConfig, RNNSearch),
    "luong": (LuongConfig, LuongNMT),
    "transformer": (TransformerConfig, Transformer),
}

# The model section of a run configuration: one of these, chosen by its model_type (see seq2bert.config).
ModelConfig = Seq2SeqConfig | ChoConfig | BahdanauConfig | LuongConfig | TransformerConfig


def model_config_from_dict(data: dict[str, Any], source: str | Path = "config") -> Any:
    """The config dataclass named by ``data["model_type"]``, checked key by key."""
    model_type = data.get("model_type")
    if model_type not in MODELS:
        raise CheckpointError(f"{source}: model_type {model_type!r} is not one of {', '.join(MODELS)}")
    try:
        return config_io.from_dict(MODELS[model_type][0], data)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def build_model(config: Any) -> nn.Module:
    for cfg_cls, model_cls in MODELS.values():
        if isinstance(config, cfg_cls):
            return model_cls(config)
    raise TypeError(f"no model for config {type(config).__name__}")
