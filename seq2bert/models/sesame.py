"""SesameBERT (Su & Cheng 2019) as options of any encoder built on the shared stack — BERT, RoBERTa, ALBERT,
ELECTRA, DistilBERT, MobileBERT, XLNet —, for fine-tuning: squeeze and excitation over the layer outputs and
Gaussian blurring of every self-attention's output (the blocks and their equations: seq2bert/nn/sesame.py).

A checkpoint stays a checkpoint of its family: model.safetensors holds the encoder and head in the family's
Hugging Face layout (transformers reads it, without the two options), config.json records the options under
``"sesame"``, and the excitation's W_1, W_2 sit beside it in sesame.safetensors.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.nn.sesame import GaussianBlur, LayerExcitation
from seq2bert.nn.stack import TransformerStack

log = logging.getLogger(__name__)

WEIGHTS = "sesame.safetensors"
KEY = "excitation"  # the stack's attribute: the state-dict keys of the excitation hold it


@dataclass
class SesameSettings:
    """The two options and their hyper-parameters (the paper's: r = 3; k = 3, σ = 0.3)."""

    squeeze_excitation: bool = False
    gaussian_blur: bool = False
    reduction: int = 3
    kernel_size: int = 3
    sigma: float = 0.3

    def __post_init__(self) -> None:
        if self.reduction < 1:
            raise ConfigError(f"sesame.reduction: must be >= 1, got {self.reduction}")
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ConfigError(f"sesame.kernel_size: an odd number >= 1, got {self.kernel_size}")
        if not self.sigma > 0:
            raise ConfigError(f"sesame.sigma: must be > 0, got {self.sigma}")

    @property
    def enabled(self) -> bool:
        return self.squeeze_excitation or self.gaussian_blur


def encoder_stack(model: nn.Module) -> TransformerStack:
    """The one bidirectional stack of ``model`` (a task model's encoder)."""
    stacks = [m for m in model.modules() if isinstance(m, TransformerStack)]
    if len(stacks) != 1 or stacks[0].causal:
        raise ConfigError(
            f"sesame: the options of an encoder of one bidirectional Transformer stack; a "
            f"{type(model).__name__} has {len(stacks)} stack(s){' (causal)' if stacks and stacks[0].causal else ''}"
        )
    return stacks[0]


def attach(model: nn.Module, settings: SesameSettings, init_range: float = 0.02) -> nn.Module:
    """Add the options ``settings`` turns on to ``model`` (in place; the excitation starts new) and return it."""
    stack = encoder_stack(model)
    device = next(stack.parameters()).device
    if settings.squeeze_excitation:
        stack.excitation = LayerExcitation(
            stack.num_layers, reduction=settings.reduction, init_range=init_range
        ).to(device)
    if settings.gaussian_blur:
        # every self-attention (MultiHeadAttention, MobileBERT's BottleneckAttention) has a ``blur``
        attentions = [
            m for m in stack.layers.modules() if hasattr(m, "blur") and not getattr(m, "cross", False)
        ]
        if not attentions:
            raise ConfigError(
                f"sesame.gaussian_blur: the layers of a {type(model).__name__} have no self-attention"
            )
        for attention in attentions:
            attention.blur = GaussianBlur(settings.kernel_size, settings.sigma).to(device)
    model.sesame = settings
    return model


def settings_of(model: nn.Module) -> SesameSettings | None:
    settings = getattr(model, "sesame", None)
    return settings if isinstance(settings, SesameSettings) and settings.enabled else None


def config_entry(model: nn.Module) -> dict[str, Any]:
    """What config.json records: {"sesame": the settings} when the model has an option on, else {}."""
    settings = settings_of(model)
    return {} if settings is None else {"sesame": asdict(settings)}


def read_settings(hf_config: dict[str, Any], where: str) -> SesameSettings | None:
    """The settings config.json records (None: neither option)."""
    entry = hf_config.get("sesame")
    if entry is None:
        return None
    known = {f.name for f in fields(SesameSettings)}
    if not isinstance(entry, dict) or set(entry) - known:
        raise CheckpointError(f"{where}: sesame: expected an object with fields {', '.join(sorted(known))}")
    settings = SesameSettings(**entry)
    return settings if settings.enabled else None


def split_state(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """A state dict → (the family's keys, the excitation's)."""
    ours = {k: v for k, v in state.items() if k.startswith(f"{KEY}.") or f".{KEY}." in k}
    return {k: v for k, v in state.items() if k not in ours}, ours


def write_weights(state: dict[str, torch.Tensor], directory: Path) -> None:
    if state:
        save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(directory / WEIGHTS))


def read_weights(directory: Path) -> dict[str, torch.Tensor]:
    """The excitation's weights of a checkpoint ({} when it has none)."""
    path = Path(directory) / WEIGHTS
    if not path.is_file():
        return {}
    try:
        return load_file(str(path))
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{path}: not a safetensors file ({e})") from None


def restore(model: nn.Module, hf_config: dict[str, Any], directory: Path) -> dict[str, torch.Tensor]:
    """Attach the options a checkpoint's config.json records; returns its excitation weights to load."""
    settings = read_settings(hf_config, str(Path(directory) / "config.json"))
    if settings is None:
        return {}
    attach(model, settings)
    weights = read_weights(directory)
    if settings.squeeze_excitation and not weights:
        raise CheckpointError(f"{directory}: config.json has sesame.squeeze_excitation but no {WEIGHTS}")
    return weights
