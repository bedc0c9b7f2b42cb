"""Optimisers and learning-rate schedules of the engine.

Weight decay is applied to matrices only: biases, norms and other 1-D tensors are in a no-decay group (as in
BERT's AdamWeightDecay and nanoGPT). Schedules return a multiplier of the base learning rate per step.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seq2bert.training.config import TrainConfig


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two groups: tensors of rank ≥ 2 (matrices, embeddings) with decay; biases and norm weights without."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 else no_decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW (Loshchilov & Hutter) — torch's fused kernel where every parameter allows it (floating point,
    on CPU or CUDA): one pass over each tensor instead of a dozen, about 7× faster on CPU for the same
    update (transformers' Trainer uses it by default too) — or plain SGD."""
    groups = param_groups(model, cfg.weight_decay)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr)
    params = [p for g in groups for p in g["params"]]
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, fused=fused or None)


def lr_multiplier(step: int, cfg: TrainConfig, total_steps: int, steps_per_epoch: int = 1) -> float:
    """Learning-rate multiplier for optimizer step ``step`` (counted from 0)."""
    s = step + 1
    w = cfg.warmup_steps
    if cfg.schedule == "constant":
        return min(1.0, s / w) if w else 1.0
    if cfg.schedule == "linear":  # BERT: linear warm-up, then linear decay towards 0 at total_steps
        if w and s <= w:
            return s / w
        return max(0.0, (total_steps - step) / max(1, total_steps - w))
    if cfg.schedule == "halving":  # Sutskever et al. Sect. 3.4
        epoch = step / steps_per_epoch
        if epoch < cfg.halving_start:
            return 1.0
        return 0.5 ** (1 + int((epoch - cfg.halving_start) / cfg.halving_every))
    if cfg.schedule == "noam":  # Vaswani et al. Eq. 3
        return cfg.noam_d_model**-0.5 * min(s**-0.5, s * w**-1.5)
    if cfg.schedule == "inverse_sqrt":
        return s / w if s < w else math.sqrt(w / s)
    raise ValueError(f"unknown schedule {cfg.schedule!r}")


def build_scheduler(
    optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int, steps_per_epoch: int = 1
):
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_multiplier(step, cfg, total_steps, steps_per_epoch)
    )
