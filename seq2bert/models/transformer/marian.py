"""MarianMT checkpoint directories in and out: config.json + model.safetensors + the SentencePiece tokenizer
(source.spm, target.spm, vocab.json), read into our Transformer and written back so that transformers'
``MarianMTModel.from_pretrained`` and ``MarianTokenizer.from_pretrained`` load them. ``FAMILY`` is Marian's
entry in the registry (seq2bert/models/registry.py)."""

from __future__ import annotations

from pathlib import Path

import torch

from seq2bert.data.marian import MarianTokenizer
from seq2bert.models import pretrained
from seq2bert.models.family import Family
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.convert import (
    config_from_marian,
    config_to_marian,
    from_marian_state_dict,
    to_marian_state_dict,
)
from seq2bert.models.transformer.model import Transformer

FAMILY = Family(
    model_type="marian",
    config_class=TransformerConfig,
    architectures={"MarianMTModel": Transformer},
    heads={"seq2seq": "MarianMTModel"},
    kind="encoder-decoder",
    tokenizer="sentencepiece",
    config_from_hf=lambda hf, source: config_from_marian(hf, source=source),
    config_to_hf=lambda cfg, architecture: config_to_marian(cfg),
    state_from_hf=lambda hf, cfg, architecture, source, new_heads: from_marian_state_dict(hf, cfg, source),
    state_to_hf=lambda ours, cfg, architecture: to_marian_state_dict(ours, cfg),
    load_tokenizer=MarianTokenizer,
)


def load_marian(path: str | Path, device: str | torch.device = "cpu") -> tuple[Transformer, MarianTokenizer]:
    """Our Transformer (eval mode) and the tokenizer of a MarianMT directory."""
    return pretrained.load_hf(FAMILY, path, device=device)


def save_marian(model: Transformer, tokenizer: MarianTokenizer, path: str | Path) -> None:
    """Write ``model`` and ``tokenizer`` as a MarianMT directory (atomically: a temporary folder renamed)."""
    pretrained.save_hf(FAMILY, model, path, tokenizer)
