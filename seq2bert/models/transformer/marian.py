"""MarianMT checkpoint directories in and out: config.json + model.safetensors + the SentencePiece tokenizer
(source.spm, target.spm, vocab.json), read into our Transformer and written back so that transformers'
``MarianMTModel.from_pretrained`` and ``MarianTokenizer.from_pretrained`` load them."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from seq2bert.data.marian import MarianTokenizer
from seq2bert.errors import CheckpointError
from seq2bert.models.transformer.convert import (
    config_from_marian,
    config_to_marian,
    from_marian_state_dict,
    to_marian_state_dict,
)
from seq2bert.models.transformer.model import Transformer
from seq2bert.training import checkpoint as ckpt


def is_marian_dir(path: str | Path) -> bool:
    """Whether ``path`` is a directory whose config.json says model_type "marian"."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type") == "marian"
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return False


def read_marian_weights(path: Path) -> dict[str, torch.Tensor]:
    """model.safetensors, or pytorch_model.bin read with weights_only=True (no pickled code runs)."""
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


def load_marian(path: str | Path, device: str | torch.device = "cpu") -> tuple[Transformer, MarianTokenizer]:
    """Our Transformer (eval mode) and the tokenizer of a MarianMT directory."""
    path = Path(path)
    cfg = config_from_marian(ckpt.read_json(path / "config.json"), source=str(path / "config.json"))
    model = Transformer(cfg)
    model.load_state_dict(from_marian_state_dict(read_marian_weights(path), cfg, source=str(path)))
    return model.to(device).eval(), MarianTokenizer(path)


def save_marian(model: Transformer, tokenizer: MarianTokenizer, path: str | Path) -> None:
    """Write ``model`` and ``tokenizer`` as a MarianMT directory (atomically: a temporary folder renamed)."""
    cfg = model.config
    weights = {
        k: v.detach().cpu().contiguous().clone()
        for k, v in to_marian_state_dict(model.state_dict(), cfg).items()
    }
    config = {**config_to_marian(cfg), "torch_dtype": "float32"}

    def write(tmp: Path) -> None:
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save(tmp)

    ckpt.write_dir_atomically(Path(path), write)
