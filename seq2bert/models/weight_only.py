"""A model's int8 weight-only twin for decoding (seq2bert/nn/weight_only.py): every Linear layer — the
attention and feed-forward projections, the output projection / LM head (a tied one gets its own int8
copy) — with int8 weights and a scale per output row; embeddings, LayerNorms and biases stay in the
activations' precision (bf16 or fp32). Where the CPU multiplies int8 by int8 natively (VNNI, AMX-INT8) the
inputs of those layers are quantised too, each token with its own scale (W8A8, dynamic): torch's weight-only
kernel is slower there than bf16 weights, the int8 × int8 one about twice as fast (benchmarks/RESULTS.md).

    twin = int8_twin(model, torch.bfloat16)     made once, kept beside the model until its weights change
    twin.generate(...)                          the same searches; a quarter of fp32's weight bytes per step

A recurrent model's cells (nn.LSTM, nn.GRU) keep their float weights: only their Linear layers (outputs,
attention) become int8.
"""

from __future__ import annotations

import copy
import threading
import weakref

import torch
from torch import nn

from seq2bert.errors import ConfigError
from seq2bert.nn.weight_only import GROUP, Int4Linear, Int8Linear, int8_linears

_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model → {dtype: (fingerprint, twin)}
_MAKING = threading.Lock()


def weight_only_int8(
    model: nn.Module,
    dtype: torch.dtype = torch.float32,
    bits: int = 8,
    int8_activations: bool | None = None,
) -> nn.Module:
    """A copy of ``model`` in eval mode with int8 Linear layers (``bits`` 4: int4 in groups, nn/weight_only.py)
    whose activations, embeddings and LayerNorms are ``dtype``; each float parameter is cast as it is copied
    (no second fp32 copy is made). ``int8_activations``: each token's inputs to the int8 layers quantised too
    (nn/weight_only.py, Eqs. 4–5); by default where the CPU multiplies int8 natively (VNNI, AMX)."""
    memo = {
        id(p): nn.Parameter(p.detach().to(dtype), requires_grad=False)
        for p in model.parameters()
        if p.is_floating_point()
    }
    twin = copy.deepcopy(model, memo).to(dtype).eval()
    if not int8_linears(twin, dtype, bits, int8_activations):
        raise ValueError(f"{type(model).__name__}: no Linear layer to make int8")
    return twin


def parameter_dtype(model: nn.Module) -> torch.dtype:
    """The dtype of the model's first floating parameter (fp32 when it has none)."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)


def is_weight_only_int8(model: nn.Module) -> bool:
    return any(isinstance(m, (Int8Linear, Int4Linear)) for m in model.modules())


def quantized_bits(int8: bool, int4: bool) -> int | None:
    """The weights' bits a decoding call asked for: 8 (``int8``), 4 (``int4``) or None (float weights)."""
    if int8 and int4:
        raise ConfigError("int8 and int4: ask for one of them")
    return 8 if int8 else 4 if int4 else None


def int8_description(twin: nn.Module, activations: str) -> str:
    """How an int8 twin computes, for logs and titles; ``activations``: the float precision between layers."""
    if any(isinstance(m, Int4Linear) for m in twin.modules()):
        some_int8 = any(isinstance(m, Int8Linear) for m in twin.modules())
        rest = " (int8 where the inputs make no whole groups)" if some_int8 else ""
        return f"int4 weights in groups of {GROUP}{rest}, {activations} activations"
    if any(getattr(m, "int8_activations", False) for m in twin.modules()):
        return f"int8 weights and int8 activations (a scale per token), {activations} between layers"
    return f"int8 weights, {activations} activations"


def _fingerprint(model: nn.Module) -> tuple:
    """What changes when the weights do: each parameter's storage and in-place version counter."""
    return tuple((p.data_ptr(), p._version) for p in model.parameters())


def int8_twin(model: nn.Module, dtype: torch.dtype = torch.float32, bits: int = 8) -> nn.Module:
    """``weight_only_int8(model, dtype)``, made once and kept beside ``model`` (weakly: it goes with the
    model) until one of the model's parameters is replaced or changed in place (an optimizer step). A model
    that is int8 already is its own twin."""
    if is_weight_only_int8(model):
        return model
    key = _fingerprint(model)
    with _MAKING:
        kept = _TWINS.setdefault(model, {})
        if (dtype, bits) not in kept or kept[dtype, bits][0] != key:
            kept[dtype, bits] = (key, weight_only_int8(model, dtype, bits))
        return kept[dtype, bits][1]
