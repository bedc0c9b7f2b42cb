"""MarianMT checkpoint directories in and out: config.json + model.safetensors + the SentencePiece tokenizer
(source.spm, target.spm, vocab.json), read into our Transformer and written back so that transformers'
``MarianMTModel.from_pretrained`` and ``MarianTokenizer.from_pretrained`` load them."""

from __future__ import annotations

from pathlib import Path

import torch

from seq2bert.data.marian import MarianTokenizer
from seq2bert.io import read_json
from seq2bert.models.hf import model_type_of, read_weights, write_model_dir
from seq2bert.models.transformer.convert import (
    config_from_marian,
    config_to_marian,
    from_marian_state_dict,
    to_marian_state_dict,
)
from seq2bert.models.transformer.model import Transformer


def is_marian_dir(path: str | Path) -> bool:
    """Whether ``path`` is a directory whose config.json says model_type "marian"."""
    return model_type_of(path) == "marian"


def load_marian(path: str | Path, device: str | torch.device = "cpu") -> tuple[Transformer, MarianTokenizer]:
    """Our Transformer (eval mode) and the tokenizer of a MarianMT directory."""
    path = Path(path)
    cfg = config_from_marian(read_json(path / "config.json"), source=str(path / "config.json"))
    model = Transformer(cfg)
    model.load_state_dict(from_marian_state_dict(read_weights(path), cfg, source=str(path)))
    return model.to(device).eval(), MarianTokenizer(path)


def save_marian(model: Transformer, tokenizer: MarianTokenizer, path: str | Path) -> None:
    """Write ``model`` and ``tokenizer`` as a MarianMT directory (atomically: a temporary folder renamed)."""
    cfg = model.config
    config = {**config_to_marian(cfg), "torch_dtype": "float32"}
    write_model_dir(path, config, to_marian_state_dict(model.state_dict(), cfg), tokenizer.save)
