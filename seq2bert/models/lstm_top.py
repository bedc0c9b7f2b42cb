"""BERT's "+ BiLSTM" (Devlin et al. 2019, Table 5) as an option of any encoder built on the shared stack, for
fine-tuning: a randomly initialised BiLSTM over the encoder's output, before the task head
(seq2bert/nn/bilstm_top.py). Kept in checkpoints as models/encoder_options.py keeps every option: config.json
``"bilstm_top"``, the LSTM's weights in bilstm_top.safetensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from seq2bert.errors import ConfigError
from seq2bert.models.sesame import encoder_stack
from seq2bert.nn.bilstm_top import BiLSTMTop

KEY = "top"  # the stack's attribute: the state-dict keys of the BiLSTM hold it


@dataclass
class BiLSTMSettings:
    enabled: bool = False
    layers: int = 1  # bidirectional LSTM layers

    def __post_init__(self) -> None:
        if self.layers < 1:
            raise ConfigError(f"bilstm_top.layers: must be >= 1, got {self.layers}")


def width(model: nn.Module) -> int:
    """The encoder's output width (hidden_size; XLNet's d_model; DistilBERT's dim)."""
    config = model.config
    for name in ("hidden_size", "d_model", "dim"):
        if isinstance(getattr(config, name, None), int):
            return getattr(config, name)
    raise ConfigError(f"bilstm_top: cannot tell the output width of a {type(model).__name__}")


def attach(model: nn.Module, settings: BiLSTMSettings) -> nn.Module:
    """Put a new BiLSTM over ``model``'s encoder output (in place) and return the model."""
    stack = encoder_stack(model, "bilstm_top")
    device = next(stack.parameters()).device
    stack.top = BiLSTMTop(width(model), settings.layers).to(device)
    model.bilstm_top = settings
    return model
