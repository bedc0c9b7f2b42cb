"""Optimisers and learning-rate schedules of the engine.

Weight decay is applied to matrices only: biases, norms and other 1-D tensors are in a no-decay group (as in
BERT's AdamWeightDecay and nanoGPT). Schedules return a multiplier of the base learning rate per step.
"""

from __future__ import annotations

import math
import re

import torch
from torch import nn

from seq2bert.errors import ConfigError
from seq2bert.training.config import TrainConfig

# a parameter's layer: "….layers.3.…" (our Transformers), "….h.3.…" (GPT-2), "….weight_ih_l1" (torch's RNNs)
LAYER_INDEX = re.compile(r"(?:^|\.)(?:layer|layers|h|block|blocks)\.(\d+)(?:\.|$)|_l(\d+)(?:_reverse)?$")
EMBEDDING = re.compile(r"(?:^|\.)(?:\w*embeddings?|\w*embed|wte|wpe)(?:\.|$)")


def layer_groups(model: nn.Module, trainable_only: bool = True) -> list[list[nn.Parameter]]:
    """The parameters by depth, bottom first: the embeddings, each numbered layer (of a Transformer stack, or
    of a recurrent network), then everything above them (final norms, heads) — the groups of discriminative
    learning rates and of gradual unfreezing (ULMFiT, Howard & Ruder 2018, Sect. 3.2–3.3). A parameter the
    names do not place is counted with the head, and so is a recurrent network above a Transformer's stack
    (BERT's Table 5: a BiLSTM on top of the encoder is part of what fine-tuning adds)."""
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad or not trainable_only]
    found = {n: LAYER_INDEX.search(n) for n, _ in params}
    transformer = any(m and m.group(1) for m in found.values())
    embeddings: list[nn.Parameter] = []
    layers: dict[int, list[nn.Parameter]] = {}
    top: list[nn.Parameter] = []
    stacks = set()
    for name, p in params:
        layer = found[name]
        if layer and (layer.group(1) or not transformer):
            layers.setdefault(int(layer.group(1) or layer.group(2)), []).append(p)
            stacks.add(name[: layer.start()] if layer.group(1) else name.rpartition(".")[0])  # the RNN's path
        elif EMBEDDING.search(name):
            embeddings.append(p)
        else:
            top.append(p)
    if len(stacks) > 1:  # an encoder and a decoder (or two models): their layer i is no one depth
        raise ConfigError(
            f"layer groups: {len(stacks)} stacks of layers ({', '.join(sorted(stacks))}); discriminative rates "
            "and gradual unfreezing need a model with one stack (an encoder, a decoder, an LSTM)"
        )
    groups = [embeddings, *(layers[i] for i in sorted(layers)), top]
    return [g for g in groups if g]


def param_groups(
    model: nn.Module, weight_decay: float, layer_lr_decay: float = 1.0, lr: float = 1.0
) -> list[dict]:
    """Tensors of rank ≥ 2 (matrices, embeddings) with decay; biases and norm weights without. With
    ``layer_lr_decay`` ξ < 1, discriminative learning rates (ULMFiT Eq. 2; ELECTRA's layer-wise decay): the
    group l levels below the top (``layer_groups``) learns at lr · ξ^l (ULMFiT: ξ = 1/2.6)."""
    if layer_lr_decay == 1.0:
        depth = [[p for p in model.parameters() if p.requires_grad]]
    else:
        depth = layer_groups(model)
    groups = []
    for level, params in enumerate(reversed(depth)):  # the top first
        scale = {} if layer_lr_decay == 1.0 else {"lr": lr * layer_lr_decay**level}
        groups.append({"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay, **scale})
        groups.append({"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0, **scale})
    return groups if layer_lr_decay != 1.0 else groups[:2]


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW (Loshchilov & Hutter) — torch's fused kernel where every parameter allows it (floating point,
    on CPU or CUDA): one pass over each tensor instead of a dozen, about 7× faster on CPU for the same
    update (transformers' Trainer uses it by default too) — or plain SGD, or AdaGrad (both take the sparse
    gradients of the word-vector models)."""
    groups = param_groups(model, cfg.weight_decay, cfg.layer_lr_decay, cfg.lr)
    if cfg.layer_lr_decay != 1.0:  # a layer group without biases (or matrices) leaves an empty group behind
        groups = [g for g in groups if g["params"]]
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr)
    if cfg.optimizer == "adagrad":
        return torch.optim.Adagrad(groups, lr=cfg.lr, initial_accumulator_value=cfg.adagrad_initial)
    params = [p for g in groups for p in g["params"]]
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, fused=fused or None)


def clip_gradients(parameters: list[nn.Parameter], max_norm: float) -> float:
    """Scale the gradients so their global L2 norm is at most ``max_norm`` (inf: measure only); the norm before.
    Sparse gradients (the word-vector models' embeddings) are coalesced first — a row a batch touches several
    times holds the sum of its parts, as the update will — and measured by their values."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not any(g.is_sparse for g in grads):
        return float(torch.nn.utils.clip_grad_norm_(parameters, max_norm))
    for p in parameters:
        if p.grad is not None and p.grad.is_sparse:
            p.grad = p.grad.coalesce()
    norms = [
        (p.grad._values() if p.grad.is_sparse else p.grad).float().norm()
        for p in parameters
        if p.grad is not None
    ]
    total = float(torch.stack(norms).norm()) if norms else 0.0
    if total > max_norm:
        for p in parameters:
            if p.grad is not None:
                if p.grad.is_sparse:
                    p.grad._values().mul_(max_norm / (total + 1e-6))
                else:
                    p.grad.mul_(max_norm / (total + 1e-6))
    return total


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
    if cfg.schedule == "slanted_triangular":  # ULMFiT (Howard & Ruder 2018), Eq. 3
        cut = max(1, math.floor(total_steps * cfg.stlr_cut_frac))
        # the paper's cut · (1/cut_frac − 1) is T − cut when T · cut_frac is whole; T − cut ends at lr / ratio always
        p = s / cut if s < cut else 1 - (s - cut) / max(1, total_steps - cut)
        return (1 + max(0.0, p) * (cfg.stlr_ratio - 1)) / cfg.stlr_ratio
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
