"""Hugging Face model directories: what every family's reader and writer share (config.json, weights)."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from seq2bert.errors import CheckpointError
from seq2bert.io import read_json, save_tensors

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
    """model.safetensors, or pytorch_model.bin read with weights_only=True (no pickled code runs); or the
    shards a larger model is published in, listed by model.safetensors.index.json (pytorch_model.bin.index.json)."""
    path = Path(path)
    for name, read in (("model.safetensors", read_safetensors), ("pytorch_model.bin", read_pickled_weights)):
        if (path / name).is_file():
            return read(path / name)
        if (path / f"{name}.index.json").is_file():
            return read_shards(path / f"{name}.index.json", read)
    raise CheckpointError(f"{path}: no model.safetensors (or pytorch_model.bin)")


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path))
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{path}: unreadable ({e})") from None


def read_shards(index: Path, read) -> dict[str, torch.Tensor]:
    """The weights of the shards ``index`` lists (its ``weight_map``: tensor name → file), each file read by
    ``read``; a shard or a tensor the index names but the folder lacks is a one-line CheckpointError."""
    weight_map = read_json(index).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index}: expected a weight_map of tensor names to shard files")
    weights: dict[str, torch.Tensor] = {}
    for shard in sorted(set(weight_map.values())):
        if not (index.parent / shard).is_file():
            raise CheckpointError(f"{index}: its shard {shard} is missing")
        weights.update(read(index.parent / shard))
    if missing := sorted(set(weight_map) - set(weights)):
        raise CheckpointError(f"{index}: {missing[0]} is in no shard ({len(missing)} tensors missing)")
    return weights


def read_pickled_weights(path: Path) -> dict[str, torch.Tensor]:
    """A pytorch_model.bin read with weights_only=True: tensors and plain values only, no pickled code runs. A
    file that asks for anything else (a function to call, an object to build) is refused in one line and not
    loaded — never with torch's advice to load it unsafely."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"GLOBAL ([\w.]+)", str(e))
        asks = f" (it asks for {found.group(1)})" if found else ""
        raise CheckpointError(
            f"{path}: not a plain tensor archive{asks}; not loaded (no code in it was run)"
        ) from None
    except Exception as e:  # torch raises RuntimeErrors of its zip reader, EOFError, …
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{path}: truncated or not a torch archive ({first})") from None
    if not isinstance(state, dict) or not all(torch.is_tensor(v) for v in state.values()):
        raise CheckpointError(f"{path}: expected a state dict of named tensors")
    return state


def write_model_files(directory: Path, config: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    """config.json + model.safetensors into an existing folder. Tied matrices are written under each of
    their names (transformers reads either)."""
    weights = {k: v.detach().cpu().contiguous().clone() for k, v in weights.items()}
    (Path(directory) / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    save_tensors(weights, str(Path(directory) / "model.safetensors"), metadata={"format": "pt"})
