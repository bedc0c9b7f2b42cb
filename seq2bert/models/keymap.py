"""Declarative key maps between our state dicts and Hugging Face checkpoints, shared by every family.

A map is a list of ``(our key, (their keys …))`` pairs. One key on their side is a renaming; several are
concatenated along the first axis on the way in (their separate W^Q, W^K, W^V become our fused [W^Q; W^K;
W^V]) and split back into equal blocks on the way out. Loading tracks which of their keys were used, so a
checkpoint with keys the map does not know is an error that names them, not a silent partial load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from seq2bert.errors import CheckpointError

KeyMap = list[tuple[str, tuple[str, ...]]]


def linear(ours: str, *theirs: str) -> KeyMap:
    """A Linear or LayerNorm module: its weight and bias (``theirs`` are module prefixes)."""
    return [(f"{ours}.{leaf}", tuple(f"{t}.{leaf}" for t in theirs)) for leaf in ("weight", "bias")]


class Loader:
    """Takes tensors out of a checkpoint's state dict by key and knows which keys are left."""

    def __init__(self, state: dict[str, torch.Tensor], source: str = "checkpoint"):
        self.state, self.source = state, source
        self.left = set(state)

    def take(self, *keys: str) -> torch.Tensor:
        """The tensors of ``keys`` concatenated along the first axis (one key: that tensor)."""
        missing = [k for k in keys if k not in self.state]
        if missing:
            raise CheckpointError(f"{self.source}: no {', '.join(missing)} in the checkpoint")
        self.left.difference_update(keys)
        return self.state[keys[0]] if len(keys) == 1 else torch.cat([self.state[k] for k in keys])

    def first(self, *candidates: str) -> torch.Tensor:
        """The first of ``candidates`` present (copies of one tied matrix); every present one counts as used."""
        found = [k for k in candidates if k in self.state]
        if not found:
            raise CheckpointError(f"{self.source}: none of {', '.join(candidates)} in the checkpoint")
        self.left.difference_update(found)
        return self.state[found[0]]

    def load(self, keymap: KeyMap) -> dict[str, torch.Tensor]:
        return {ours: self.take(*theirs) for ours, theirs in keymap}

    def ignore(self, *keys: str) -> None:
        """Keys that carry nothing to load (buffers such as position_ids)."""
        self.left.difference_update(keys)

    def check_all_used(self) -> None:
        if self.left:
            raise CheckpointError(
                f"{self.source}: keys not used by the conversion: {', '.join(sorted(self.left))}"
            )


def save(ours: dict[str, torch.Tensor], keymap: KeyMap) -> dict[str, torch.Tensor]:
    """Their state dict from ours: each of our tensors split into equal blocks, one per key of theirs."""
    out = {}
    for key, theirs in keymap:
        for name, block in zip(theirs, ours[key].chunk(len(theirs)), strict=True):
            out[name] = block.contiguous()
    return out


@dataclass(frozen=True)
class HeadLayout:
    """How a family's transformers classes lay out their checkpoints, declaratively: a bare model (``base``)
    keeps the encoder's keys at the top, a head model under ``prefix``; each architecture adds its head's keys
    (``heads``) and, when it has one, the pooler's; some of their keys are copies of ours (``tied``: the MLM
    decoder's weight is the word embedding matrix). ``from_hf`` / ``to_hf`` convert either way, as the
    families written before this (RoBERTa's convert.py) do by hand:

    - a model loads from a checkpoint of any class, dropping the heads it has not (as transformers does); a
      head model needs its own head, unless a task starts anew (``new_heads``: the task's head and pooler
      loaded only when the checkpoint has them — the caller initialises them);
    - keys nobody knows are named in an error (Loader.check_all_used).

    ``encoder(ours, theirs)``: the encoder's map, our keys under prefix ``ours``, theirs under ``theirs``;
    ``pooler`` likewise, for the architectures in ``pooled``; ``tied[architecture]``: (our key, the key of
    ours it equals, their key of the copy)."""

    base: str
    prefix: str
    encoder: Callable[[str, str], KeyMap]
    heads: dict[str, KeyMap]
    head_modules: tuple[str, ...]  # their top-level modules of every head
    pooler: Callable[[str, str], KeyMap] | None = None
    pooled: frozenset[str] = frozenset()
    tied: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    buffers: tuple[str, ...] = ("embeddings.position_ids", "embeddings.token_type_ids")

    def check(self, architecture: str) -> None:
        if architecture not in self.heads:
            raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(self.heads)}")

    def from_hf(
        self, hf: dict[str, torch.Tensor], architecture: str, source: str = "", *, new_heads: bool = False
    ) -> dict[str, torch.Tensor]:
        """Our state dict for ``architecture`` from a transformers state dict of any of the family's classes."""
        self.check(architecture)
        theirs = f"{self.prefix}." if any(k.startswith(f"{self.prefix}.") for k in hf) else ""
        ours = "" if architecture == self.base else f"{self.prefix}."
        taken = Loader(hf, source or "checkpoint")
        out = taken.load(self.encoder(ours, theirs))
        pooler = self.pooler(ours, theirs) if self.pooler is not None and architecture in self.pooled else []
        if architecture == self.base or new_heads:  # encoders often ship without a pooler
            pooler = pooler if all(t in hf for _, keys in pooler for t in keys) else []
        out.update(taken.load(pooler))
        if self.pooler is not None and not pooler:
            taken.ignore(*[t for _, keys in self.pooler(theirs, theirs) for t in keys])
        head = self.heads[architecture]
        if not (new_heads and any(t not in hf for _, keys in head for t in keys)):
            out.update(taken.load(head))
        for key, same_as, copy in self.tied.get(architecture, ()):
            if same_as in out:
                out[key] = out[same_as]
            taken.ignore(copy)
        taken.ignore(*[k for k in hf if k.endswith(self.buffers)])
        # any other head goes: a bare model drops them all, a masked LM a pretraining checkpoint's NSP, …
        taken.ignore(*[k for k in hf if k.split(".")[0] in self.head_modules])
        taken.check_all_used()
        return out

    def to_hf(self, ours: dict[str, torch.Tensor], architecture: str) -> dict[str, torch.Tensor]:
        """transformers' state dict of our model (tied tensors written under each of their names)."""
        self.check(architecture)
        prefix = "" if architecture == self.base else f"{self.prefix}."
        pooler = self.pooler(prefix, prefix) if self.pooler is not None else []
        pooler = pooler if all(k in ours for k, _ in pooler) else []
        out = save(ours, self.encoder(prefix, prefix) + pooler + self.heads[architecture])
        for _, same_as, copy in self.tied.get(architecture, ()):
            out[copy] = ours[same_as]
        return out


def conversions(layout_of: Callable[[Any], HeadLayout]) -> tuple[Callable[..., dict], Callable[..., dict]]:
    """A family's ``state_from_hf(hf, cfg, architecture, source="", new_heads=False)`` and ``state_to_hf(ours,
    cfg, architecture)`` (Family's signatures) from its ``layout_of(cfg)``."""

    def state_from_hf(hf, cfg, architecture: str, source: str = "", new_heads: bool = False) -> dict:
        return layout_of(cfg).from_hf(hf, architecture, source, new_heads=new_heads)

    def state_to_hf(ours, cfg, architecture: str) -> dict:
        return layout_of(cfg).to_hf(ours, architecture)

    return state_from_hf, state_to_hf
