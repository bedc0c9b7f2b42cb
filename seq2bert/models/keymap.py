"""Declarative key maps between our state dicts and Hugging Face checkpoints, shared by every family.

A map is a list of ``(our key, (their keys …))`` pairs. One key on their side is a renaming; several are
concatenated along the first axis on the way in (their separate W^Q, W^K, W^V become our fused [W^Q; W^K;
W^V]) and split back into equal blocks on the way out. Loading tracks which of their keys were used, so a
checkpoint with keys the map does not know is an error that names them, not a silent partial load.
"""

from __future__ import annotations

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
