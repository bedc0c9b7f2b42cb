"""SesameBERT (Su & Cheng 2019) as options of any encoder built on the shared stack — BERT, RoBERTa, ALBERT,
ELECTRA, DistilBERT, MobileBERT, XLNet —, for fine-tuning: squeeze and excitation over the layer outputs and
Gaussian blurring of every self-attention's output (the blocks and their equations: seq2bert/nn/sesame.py).

A checkpoint stays a checkpoint of its family (models/encoder_options.py): config.json records the options
under ``"sesame"``, and the excitation's W_1, W_2 sit beside the family's model.safetensors in
sesame.safetensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from seq2bert.errors import ConfigError
from seq2bert.nn.sesame import GaussianBlur, LayerExcitation
from seq2bert.nn.stack import TransformerStack

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


def encoder_stack(model: nn.Module, option: str = "sesame") -> TransformerStack:
    """The one bidirectional stack of ``model`` (a task model's encoder), which ``option`` attaches to."""
    stacks = [m for m in model.modules() if isinstance(m, TransformerStack)]
    if len(stacks) != 1 or stacks[0].causal:
        raise ConfigError(
            f"{option}: an option of an encoder of one bidirectional Transformer stack; a "
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
