"""LoRA in a run (Hu et al. 2021; the layer is seq2bert/nn/lora.py): which parameters train, and what the
run's checkpoints hold.

- ``adapt``: the task model frozen, its attention and feed-forward Linear layers of the ``train.lora.targets``
  roles wrapped, the task's head and every parameter the checkpoint did not hold (a new pooler, new token
  rows) trained in full — a decoder's token embedding, which gains GPT-1's [start] [delim] [extract] as a
  new matrix (recipes/decoder_tasks.py), trains whole: not parameter-efficient there (its old rows move too);
- a checkpoint-<step>/ for resuming holds the trainable parameters alone (``lora.safetensors``, the
  settings in its metadata, checked on resume) — the frozen weights are the --init checkpoint's;
- best/ is the merged model, W = W_0 + (α/r) B A: a plain checkpoint of the family (transformers reads a
  Hugging Face family's), with no trace of LoRA.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from safetensors import safe_open
from torch import nn

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.io import save_tensors
from seq2bert.models.family import Family
from seq2bert.models.pretrained import write_hf_files
from seq2bert.nn.lora import apply_lora, load_trainable_state, merged_state_dict, trainable_state_dict
from seq2bert.training.config import LoRAConfig

log = logging.getLogger(__name__)

ADAPTER = "lora.safetensors"


def settings(cfg: LoRAConfig) -> dict:
    """What a checkpoint's adapter must agree with to be resumed (dropout may change)."""
    return {"r": cfg.r, "alpha": cfg.alpha, "targets": list(cfg.targets)}


def adapt(model: nn.Module, cfg: LoRAConfig, trainable: Iterable[str], source: str) -> list[str]:
    """LoRA on ``model`` in place (``cfg.r`` > 0): the names of the wrapped layers. ``trainable``: what
    trains in full (the head's modules, new parameters). A model without layers of the roles: ConfigError."""
    try:
        wrapped = apply_lora(
            model, r=cfg.r, alpha=cfg.alpha, dropout=cfg.dropout, targets=cfg.targets, trainable=trainable
        )
    except ValueError as e:
        raise ConfigError(f"train.lora: {source}: {e}") from None
    train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    log.info(
        "LoRA r=%d, alpha=%g on %d layers (%s): %s of %s parameters train (%.2f%%)",
        cfg.r,
        cfg.alpha,
        len(wrapped),
        ", ".join(cfg.targets),
        f"{train:,}",
        f"{total:,}",
        100 * train / max(total, 1),
    )
    return wrapped


def save_adapter(cfg: LoRAConfig, model: nn.Module, directory: Path) -> None:
    """``directory``/lora.safetensors: the trainable parameters, the settings in the file's metadata."""
    tensors = {k: v.detach().cpu().contiguous() for k, v in trainable_state_dict(model).items()}
    metadata = {"format": "pt", "lora": json.dumps(settings(cfg))}
    save_tensors(tensors, Path(directory) / ADAPTER, metadata=metadata)


def load_adapter(cfg: LoRAConfig, model: nn.Module, directory: Path) -> None:
    """Read back what ``save_adapter`` wrote into a model adapted as ``cfg`` says; one-line CheckpointError
    for a checkpoint of a run without LoRA, with other settings, or unreadable."""
    path = Path(directory) / ADAPTER
    if not path.is_file():
        raise CheckpointError(
            f"{directory}: no {ADAPTER} (a checkpoint of a run without LoRA: resume it without train.lora.r)"
        )
    try:
        with safe_open(str(path), framework="pt") as f:
            saved = json.loads((f.metadata() or {}).get("lora", "null"))
            state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iteration)
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{path}: unreadable ({str(e).splitlines()[0] if str(e) else e})") from None
    if saved != settings(cfg):
        raise CheckpointError(f"{path}: written with LoRA {saved}, this run has {settings(cfg)}")
    try:
        load_trainable_state(model, state, str(path))
    except ValueError as e:
        raise CheckpointError(str(e)) from None


def write_merged(family: Family, model: nn.Module, directory: Path) -> None:
    """The model with every W_0 + (α/r) B A folded in, as ``write_hf_files`` writes a plain one."""
    write_hf_files(family, model, directory, state=merged_state_dict(model))
