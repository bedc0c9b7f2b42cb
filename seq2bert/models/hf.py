"""Hugging Face model directories: what every family's reader and writer share (config.json, weights)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from seq2bert.errors import CheckpointError
from seq2bert.io import read_json, save_tensors


def model_type_of(path: str | Path) -> str | None:
    """The model_type that ``path``/config.json declares (None: not a Hugging Face model directory)."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return None
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data.get("model_type") if isinstance(data, dict) else None


# the settings of generation_config.json that our configs hold: special ids, and the rules of the search
GENERATION_IDS = ("decoder_start_token_id", "eos_token_id", "pad_token_id")
GENERATION_RULES = ("forced_eos_token_id", "bad_words_ids")


def read_config(path: Path) -> dict[str, Any]:
    """config.json, with the generation settings of generation_config.json over it when the directory has
    one: transformers then reads them from there alone (a rule absent there is off, whatever config.json
    says); a special id absent there stays config.json's."""
    config = read_json(Path(path) / "config.json")
    generation = Path(path) / "generation_config.json"
    if generation.is_file():
        settings = read_json(generation)
        config.update({k: settings[k] for k in GENERATION_IDS if k in settings})
        config.update({k: settings.get(k) for k in GENERATION_RULES})
    return config


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """model.safetensors, or pytorch_model.bin read with weights_only=True (no pickled code runs)."""
    path = Path(path)
    if (path / "model.safetensors").is_file():
        try:
            return load_file(str(path / "model.safetensors"))
        except Exception as e:  # safetensors raises its own error types
            raise CheckpointError(f"{path / 'model.safetensors'}: unreadable ({e})") from None
    if (path / "pytorch_model.bin").is_file():
        try:
            return torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        except Exception as e:
            raise CheckpointError(f"{path / 'pytorch_model.bin'}: unreadable ({e})") from None
    raise CheckpointError(f"{path}: no model.safetensors (or pytorch_model.bin)")


def write_model_files(directory: Path, config: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    """config.json + model.safetensors into an existing folder. Tied matrices are written under each of
    their names (transformers reads either)."""
    weights = {k: v.detach().cpu().contiguous().clone() for k, v in weights.items()}
    (Path(directory) / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    save_tensors(weights, str(Path(directory) / "model.safetensors"), metadata={"format": "pt"})
