"""Small output dataclasses shared by the models (field names follow transformers)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Seq2SeqLMOutput:
    """Output of an encoder-decoder: next-token ``logits`` (B, T, V) and, when labels were given, ``loss``."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
