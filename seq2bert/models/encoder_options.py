"""Options on an encoder for fine-tuning, each a few modules attached to the one bidirectional stack of a task
model (BERT, RoBERTa, ALBERT, ELECTRA, DistilBERT, MobileBERT, XLNet), registered here by name:

    sesame       SesameBERT's squeeze and excitation and Gaussian blurring (Su & Cheng 2019; models/sesame.py)
    bilstm_top   a BiLSTM over the encoder's output (BERT's Table 5, "+ BiLSTM"; models/lstm_top.py)

A checkpoint stays a checkpoint of its family: model.safetensors holds the encoder and head in the family's
Hugging Face layout (transformers reads it, without the options), config.json records each option's settings
under its name, and the option's own weights sit beside it in ``<name>.safetensors``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from seq2bert.errors import CheckpointError
from seq2bert.models import lstm_top, sesame


@dataclass(frozen=True)
class EncoderOption:
    """One option: its name (config.json's key, the fine-tuning config's field, the model's attribute that
    holds its settings), its settings class (with ``enabled``), how it attaches, and the stack attributes whose
    parameters are its own weights."""

    name: str
    settings: type
    attach: Callable[[nn.Module, Any], nn.Module]
    modules: tuple[str, ...]

    @property
    def weights_file(self) -> str:
        return f"{self.name}.safetensors"

    def owns(self, key: str) -> bool:
        return any(key.startswith(f"{m}.") or f".{m}." in key for m in self.modules)


OPTIONS = {
    o.name: o
    for o in (
        EncoderOption("sesame", sesame.SesameSettings, sesame.attach, (sesame.KEY,)),
        EncoderOption("bilstm_top", lstm_top.BiLSTMSettings, lstm_top.attach, (lstm_top.KEY,)),
    )
}


def settings_of(model: nn.Module) -> dict[str, Any]:
    """The options ``model`` has on: name → settings."""
    found = {name: getattr(model, name, None) for name in OPTIONS}
    return {name: s for name, s in found.items() if isinstance(s, OPTIONS[name].settings) and s.enabled}


def attach(model: nn.Module, options: dict[str, Any]) -> nn.Module:
    """Add every enabled option of ``options`` (name → settings) to ``model``, in place; returns it."""
    for name, settings in options.items():
        if settings is not None and settings.enabled:
            OPTIONS[name].attach(model, settings)
    return model


def config_entry(model: nn.Module) -> dict[str, Any]:
    """What config.json records: {name: settings} of each option on."""
    return {name: asdict(s) for name, s in settings_of(model).items()}


def read_settings(hf_config: dict[str, Any], where: str) -> dict[str, Any]:
    """The options config.json records, name → settings (those on)."""
    recorded = {}
    for name, option in OPTIONS.items():
        entry = hf_config.get(name)
        if entry is None:
            continue
        known = {f.name for f in fields(option.settings)}
        if not isinstance(entry, dict) or set(entry) - known:
            raise CheckpointError(
                f"{where}: {name}: expected an object with fields {', '.join(sorted(known))}"
            )
        settings = option.settings(**entry)
        if settings.enabled:
            recorded[name] = settings
    return recorded


def split_state(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, dict]]:
    """A state dict → (the family's keys, name → that option's keys)."""
    own = {name: {k: v for k, v in state.items() if o.owns(k)} for name, o in OPTIONS.items()}
    taken = {k for keys in own.values() for k in keys}
    return {k: v for k, v in state.items() if k not in taken}, {n: keys for n, keys in own.items() if keys}


def write_weights(own: dict[str, dict[str, torch.Tensor]], directory: Path) -> None:
    for name, state in own.items():
        path = str(Path(directory) / OPTIONS[name].weights_file)
        save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, path)


def read_weights(directory: Path, names=None) -> dict[str, torch.Tensor]:
    """The options' weights of a checkpoint (of ``names`` only, when given; {} when it has none)."""
    state = {}
    for name in names if names is not None else OPTIONS:
        path = Path(directory) / OPTIONS[name].weights_file
        if not path.is_file():
            continue
        try:
            state |= load_file(str(path))
        except Exception as e:  # safetensors raises its own error types
            raise CheckpointError(f"{path}: not a safetensors file ({e})") from None
    return state


def restore(model: nn.Module, hf_config: dict[str, Any], directory: Path) -> dict[str, torch.Tensor]:
    """Attach the options a checkpoint's config.json records; returns their weights to load."""
    recorded = read_settings(hf_config, str(Path(directory) / "config.json"))
    attach(model, recorded)
    weights = {}
    for name in recorded:
        own = read_weights(directory, [name])
        expected = {k for k in model.state_dict() if OPTIONS[name].owns(k)}
        if expected and not own:
            raise CheckpointError(f"{directory}: config.json has {name} but no {OPTIONS[name].weights_file}")
        weights |= own
    return weights
