"""Pruning an encoder: attention heads by their importance, and Linear weights by their magnitude.

Heads (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?", Sect. 4). Each head's output
is multiplied by a gate ξ_h (1 when the model runs); a head's importance is how much the loss changes when
its gate moves,

    I_h = E_x | ∂L(x) / ∂ξ_h |                                                          Eq. 2

normalised within each layer by the layer's ℓ2 norm (Sect. 4.2: "normalizing the importance scores by layer
… is important"), and the least important heads are removed — their rows of W^Q, W^K, W^V and columns of
W^O —, a fraction at a time, the importances measured again after each step. Departures: the expectation is
taken over batches (|∂L_batch/∂ξ_h| summed), not single examples; a layer keeps at least one head. The
result is laid out as transformers' ``prune_heads`` leaves a model: smaller matrices, and ``pruned_heads``
(layer → the original numbers of its removed heads) in config.json, so transformers reads the directory.

Weights (global magnitude pruning; Han et al. 2015, Gordon et al. 2020 for BERT): the fraction ``sparsity``
of the encoder layers' Linear weights with the smallest |w|, over all of them at once, set to 0 with
torch.nn.utils.prune and made permanent. The embeddings, the pooler and the task head are left whole. The
matrices stay dense: the zeros cost the same time until a sparse kernel reads them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
from torch import nn
from torch.nn.utils import prune

from seq2bert.errors import ConfigError
from seq2bert.nn.multihead import MultiHeadAttention
from seq2bert.nn.stack import TransformerStack


def attention_layers(model: nn.Module) -> list[MultiHeadAttention]:
    """The self-attention of each layer of ``model``'s one encoder stack, whose heads its config records
    (``pruned_heads``: BERT, RoBERTa, ELECTRA, SpanBERT)."""
    stacks = [m for m in model.modules() if isinstance(m, TransformerStack)]
    if len(stacks) != 1 or not hasattr(getattr(model, "config", None), "pruned_heads"):
        raise ConfigError(
            f"prune: heads of an encoder whose config records pruned_heads (BERT, RoBERTa, ELECTRA, SpanBERT); "
            f"not a {type(model).__name__}"
        )
    stack = stacks[0]
    attentions = [stack.layer(i).self_attn for i in range(stack.num_layers)]
    if len(set(map(id, attentions))) != len(attentions) or not all(
        isinstance(a, MultiHeadAttention) for a in attentions
    ):
        raise ConfigError(f"prune: a {type(model).__name__} shares its layers or has no multi-head attention")
    return attentions


def prune_heads(model: nn.Module, heads: dict[int, Iterable[int]]) -> None:
    """Remove ``heads`` (layer → original head numbers) from ``model`` and record them in its config."""
    attentions = attention_layers(model)
    pruned = {int(k): set(v) for k, v in model.config.pruned_heads.items()}
    for layer, numbers in heads.items():
        attentions[layer].prune_heads(numbers)
        pruned.setdefault(layer, set()).update(numbers)
    model.config.pruned_heads = {k: sorted(v) for k, v in sorted(pruned.items()) if v}


def head_importance(
    model: nn.Module, batches: Iterable[dict], *, normalise: bool = True
) -> list[torch.Tensor]:
    """I_h of every head still in the model (Eq. 2), one tensor (h_ℓ,) per layer, in the order of
    ``MultiHeadAttention.heads``: |∂L/∂ξ_h| summed over ``batches`` (model inputs with labels: the model's
    loss), each layer's scores divided by their ℓ2 norm when ``normalise``. Leaves the weights' gradients
    untouched and the model in the mode it was in."""
    attentions = attention_layers(model)
    device = next(model.parameters()).device
    gates = [torch.ones(a.h, device=device, requires_grad=True) for a in attentions]
    total = [torch.zeros(a.h, device=device) for a in attentions]
    training = model.training
    model.eval()  # no dropout: the gradient of the model as it predicts
    try:
        for attention, gate in zip(attentions, gates, strict=True):
            attention.head_gate = gate
        for batch in batches:
            loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
            grads = torch.autograd.grad(loss, gates)  # ∂L/∂ξ only: the weights' .grad stay as they were
            for t, g in zip(total, grads, strict=True):
                t += g.abs()
    finally:
        for attention in attentions:
            attention.head_gate = None
        model.train(training)
    if normalise:
        total = [t / t.norm().clamp(min=1e-20) for t in total]
    return total


def least_important(importance: list[torch.Tensor], model: nn.Module, count: int) -> dict[int, list[int]]:
    """The ``count`` heads of lowest importance over all layers (layer → original numbers), a layer keeping at
    least one."""
    attentions = attention_layers(model)
    ranked = sorted(
        (float(score), layer, attentions[layer].heads[i])
        for layer, scores in enumerate(importance)
        for i, score in enumerate(scores)
    )
    left = {layer: a.h for layer, a in enumerate(attentions)}
    chosen: dict[int, list[int]] = {}
    for _, layer, head in ranked:
        if len([h for hs in chosen.values() for h in hs]) == count:
            break
        if left[layer] > 1:
            chosen.setdefault(layer, []).append(head)
            left[layer] -= 1
    return chosen


@torch.no_grad()
def dense(model: nn.Module) -> nn.Module:
    """A copy of ``model`` at its full number of heads, each removed head's weights 0 (the module docstring),
    ``pruned_heads`` empty."""
    model = copy.deepcopy(model)
    A = model.config.num_attention_heads
    for attention in attention_layers(model):
        if attention.h == A:
            continue
        hk, d_k, d_v = attention.h * attention.d_k, attention.d_k, attention.d_v
        qkv, out = attention.qkv, attention.out
        full_qkv = nn.Linear(qkv.in_features, A * (2 * d_k + d_v), bias=qkv.bias is not None).to(qkv.weight)
        full_out = nn.Linear(A * d_v, out.out_features, bias=out.bias is not None).to(out.weight)
        for layer in (full_qkv, full_out):
            layer.weight.zero_()
        if full_qkv.bias is not None:
            full_qkv.bias.zero_()
        if full_out.bias is not None:
            full_out.bias.copy_(out.bias)
        for i, head in enumerate(attention.heads):  # the kept head i sits at its original number
            for ours, theirs, d in (
                (0, 0, d_k),
                (hk, A * d_k, d_k),
                (2 * hk, 2 * A * d_k, d_v),
            ):  # W^Q, W^K, W^V
                src, dst = (
                    slice(ours + i * d, ours + (i + 1) * d),
                    slice(theirs + head * d, theirs + (head + 1) * d),
                )
                full_qkv.weight[dst] = qkv.weight[src]
                if qkv.bias is not None:
                    full_qkv.bias[dst] = qkv.bias[src]
            full_out.weight[:, head * d_v : (head + 1) * d_v] = out.weight[:, i * d_v : (i + 1) * d_v]
        attention.qkv, attention.out = full_qkv, full_out
        attention.heads, attention.h = list(range(A)), A
    model.config.pruned_heads = {}
    return model


def count_heads(model: nn.Module) -> int:
    return sum(a.h for a in attention_layers(model))


def encoder_linears(model: nn.Module) -> list[nn.Linear]:
    """The Linear layers inside the encoder's layers (attention and feed-forward), those magnitude pruning
    reads."""
    stacks = [m for m in model.modules() if isinstance(m, TransformerStack)]
    if len(stacks) != 1:
        raise ConfigError(
            f"prune: weights of a model with one Transformer stack; not a {type(model).__name__}"
        )
    return [m for m in stacks[0].layers.modules() if isinstance(m, nn.Linear)]


@torch.no_grad()
def prune_weights(model: nn.Module, sparsity: float) -> float:
    """Set the fraction ``sparsity`` of the encoder layers' Linear weights with the smallest |w| to 0 (one
    threshold over all of them); returns the fraction of those weights that are 0 afterwards."""
    if not 0.0 <= sparsity < 1.0:
        raise ConfigError(f"--sparsity: a fraction in [0, 1), got {sparsity}")
    linears = encoder_linears(model)
    if sparsity > 0:
        prune.global_unstructured(
            [(m, "weight") for m in linears], pruning_method=prune.L1Unstructured, amount=sparsity
        )
        for m in linears:
            prune.remove(m, "weight")  # the zeros written into the weight itself
    zeros = sum(int((m.weight == 0).sum()) for m in linears)
    return zeros / sum(m.weight.numel() for m in linears)
