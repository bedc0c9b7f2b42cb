"""Low-rank adaptation, LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", Sect. 4.1).

A pretrained weight W_0 ∈ R^{d×k} stays frozen; its update is constrained to a low-rank product:

    h = W_0 x + ΔW x = W_0 x + B A x,   B ∈ R^{d×r},  A ∈ R^{r×k},  r ≪ min(d, k)             Eq. 3

"We use a random Gaussian initialization for A and zero for B, so ΔW = BA is zero at the beginning of
training. We then scale ΔW x by α/r, where α is a constant in r." Only A and B train; at deployment
W = W_0 + (α/r) B A is computed once and stored ("no additional inference latency", Sect. 4.1).

Departures, both as in the authors' own code (loralib) and in peft: A is initialised as ``nn.Linear``
initialises its weight (Kaiming-uniform, a = √5) rather than from a Gaussian — either keeps BA = 0 at the
start, since B = 0 —, and dropout may be put on the input of the low-rank path (``dropout``; 0: none).

Which Linear layers a model has for LoRA is told by its blocks: a block with a method ``linear_roles()``
returns {attribute: ((role, output rows), …)} — MultiHeadAttention's fused ``qkv`` holds the rows of
the query, key and value projections, its ``out`` W^O, the feed-forward network's ``w_1`` and ``w_2``
W_1 and W_2. A fused Linear gets one pair (A_i, B_i) per adapted role, exactly as separate Linear layers
would (the authors' ``MergedLinear``), so adapting W_q and W_v (the paper's Sect. 7.1 choice) adds
r·(k + d_q) + r·(k + d_v) parameters to a fused [W_q W_k W_v].

    apply_lora(model, r=8, alpha=8, targets=("query", "value"), trainable=("classifier",))
    …train…
    merge_lora(model)        # plain nn.Linear layers again, W = W_0 + (α/r) B A
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

# the roles a block's Linear layers play (Table 5's W_q, W_k, W_v, W_o; the feed-forward network's W_1, W_2)
ROLES = ("query", "key", "value", "output", "ffn_in", "ffn_out")


class LoRALinear(nn.Module):
    """Eq. 3 around a frozen ``base`` Linear: x (…, k) → W_0 x + b + (α/r) B A dropout(x), (…, d).

    ``parts``: the rows of the base's output, in order, as (rows, adapted) — a fused projection adapts some
    of its blocks only; default: all rows, adapted. A_i (r × k) of the adapted parts are stacked in
    ``lora_A`` (n·r × k), B_i (d_i × r) in ``lora_B`` (Σ d_i × r)."""

    def __init__(
        self,
        base: nn.Linear,
        r: int,
        alpha: float,
        dropout: float = 0.0,
        parts: Sequence[tuple[int, bool]] | None = None,
    ):
        super().__init__()
        if r < 1:
            raise ValueError(f"r: the rank must be >= 1, got {r}")
        if not alpha > 0:
            raise ValueError(f"alpha: must be > 0, got {alpha}")
        self.parts = tuple((int(rows), bool(on)) for rows, on in (parts or [(base.out_features, True)]))
        if sum(rows for rows, _ in self.parts) != base.out_features:
            raise ValueError(f"parts: {self.parts} do not add up to the {base.out_features} output rows")
        adapted = [rows for rows, on in self.parts if on]
        if not adapted:
            raise ValueError("parts: no part is adapted")
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)  # W_0 and its bias: frozen
        self.r, self.alpha = r, alpha
        self.scaling = alpha / r  # "we then scale ΔWx by α/r"
        like = dict(device=base.weight.device, dtype=base.weight.dtype)
        self.lora_A = nn.Parameter(torch.empty(len(adapted) * r, base.in_features, **like))  # [A_1; …; A_n]
        self.lora_B = nn.Parameter(torch.zeros(sum(adapted), r, **like))  # [B_1; …; B_n], zero: ΔW = 0
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_dropout = nn.Dropout(dropout)

    # what code reading a Linear's attributes finds: the adapted layer as one Linear
    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    @property
    def weight(self) -> torch.Tensor:
        """W_0 + (α/r) B A (d × k): what the layer computes, without dropout."""
        return self.base.weight + self.delta_weight()

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    def delta_weight(self) -> torch.Tensor:
        """ΔW = (α/r) B A (d × k), zero on the rows of the parts not adapted."""
        rows, a, b = [], 0, 0
        for size, on in self.parts:
            if on:
                rows.append(self.lora_B[b : b + size] @ self.lora_A[a : a + self.r])  # B_i A_i: (d_i, k)
                a, b = a + self.r, b + size
            else:
                rows.append(self.lora_A.new_zeros(size, self.in_features))
        return torch.cat(rows) * self.scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.base(x)  # W_0 x + b: (…, d)
        z = F.linear(self.lora_dropout(x), self.lora_A)  # A x: (…, n·r)
        if len(self.parts) == 1:
            return h + self.scaling * F.linear(z, self.lora_B)  # Eq. 3, scaled: W_0 x + (α/r) B A x
        pieces, a, b = [], 0, 0
        for size, on in self.parts:
            if on:
                pieces.append(F.linear(z[..., a : a + self.r], self.lora_B[b : b + size]))  # B_i A_i x
                a, b = a + self.r, b + size
            else:
                pieces.append(h.new_zeros(*h.shape[:-1], size))
        return h + self.scaling * torch.cat(pieces, dim=-1)

    def merged(self) -> nn.Linear:
        """The base Linear with W = W_0 + (α/r) B A folded in (the base itself, changed in place)."""
        with torch.no_grad():
            self.base.weight.add_(self.delta_weight())
        return self.base

    def extra_repr(self) -> str:
        roles = ", ".join(f"{rows}{'' if on else ' (frozen)'}" for rows, on in self.parts)
        return f"r={self.r}, alpha={self.alpha}, rows=[{roles}]"


def _matches(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def apply_lora(
    model: nn.Module,
    *,
    r: int,
    alpha: float,
    dropout: float = 0.0,
    targets: Iterable[str] = ROLES,
    trainable: Iterable[str] = (),
) -> list[str]:
    """Freeze ``model`` and wrap the Linear layers its blocks name for the ``targets`` roles (ROLES) in
    LoRALinear, in place; the modules or parameters named in ``trainable`` (a task's new head, say) train in
    full. Returns the names of the wrapped layers (a ValueError when there is none, or a role is unknown)."""
    targets = tuple(targets)
    unknown = [t for t in targets if t not in ROLES]
    if unknown or not targets:
        raise ValueError(f"targets: expected some of {', '.join(ROLES)}, got {', '.join(unknown) or 'none'}")
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = []
    for name, module in list(model.named_modules()):
        roles = getattr(module, "linear_roles", None)
        if not callable(roles):
            continue
        for attr, parts in roles().items():
            linear = getattr(module, attr)
            if isinstance(linear, LoRALinear):
                raise ValueError(f"{name}.{attr}: adapted already (apply_lora once)")
            adapted = [(rows, role in targets) for role, rows in parts]
            if any(on for _, on in adapted):
                setattr(module, attr, LoRALinear(linear, r, alpha, dropout, adapted))
                wrapped.append(f"{name}.{attr}" if name else attr)
    if not wrapped:
        raise ValueError(f"{type(model).__name__} has no Linear layer of the roles {', '.join(targets)}")
    trainable = tuple(trainable)
    for name, p in model.named_parameters():
        if _matches(name, trainable):
            p.requires_grad_(True)
    return wrapped


def lora_layers(model: nn.Module) -> dict[str, LoRALinear]:
    return {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}


def merge_lora(model: nn.Module) -> nn.Module:
    """Every LoRALinear of ``model`` replaced, in place, by its base Linear with (α/r) B A folded in: the
    plain model, whose state dict is the family's own. Returns ``model``."""
    for name, layer in lora_layers(model).items():
        parent_name, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent_name), attr, layer.merged())
    return model


def merged_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict ``merge_lora(model)`` would have, ``model`` left as it is (a checkpoint written in the
    middle of training): each adapted layer's ``weight`` is W_0 + (α/r) B A, its A and B dropped."""
    layers = lora_layers(model)
    state = {}
    for key, value in model.state_dict().items():
        prefix, _, leaf = key.rpartition(".")
        owner, _, inner = prefix.rpartition(".")  # "…qkv.base.weight": owner "…qkv", inner "base"
        if prefix in layers and leaf in ("lora_A", "lora_B"):
            continue
        if inner == "base" and owner in layers:
            name = f"{owner}.{leaf}" if owner else leaf
            state[name] = (value + layers[owner].delta_weight()).detach() if leaf == "weight" else value
        else:
            state[key] = value
    return state


def trainable_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that train (A and B of every adapted layer, the ``trainable`` ones), each once."""
    return {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model: nn.Module, state: dict[str, torch.Tensor], source: str) -> None:
    """Load what ``trainable_state_dict`` gave into a model adapted the same way; ValueError (naming
    ``source``) when the names or shapes differ."""
    ours = dict(model.named_parameters())
    expected = {name for name, p in ours.items() if p.requires_grad}
    missing, unexpected = sorted(expected - state.keys()), sorted(state.keys() - expected)
    if missing or unexpected:
        raise ValueError(
            f"{source}: its parameters are not this model's trainable ones "
            f"(missing: {missing[:3]}, unexpected: {unexpected[:3]})"
        )
    for name, value in state.items():
        if value.shape != ours[name].shape:
            raise ValueError(
                f"{source}: {name} has shape {tuple(value.shape)}, the model {tuple(ours[name].shape)}"
            )
    with torch.no_grad():
        for name, value in state.items():
            ours[name].copy_(value)
