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
from torch import nn

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


def task_heads(name: str) -> dict[str, KeyMap]:
    """The four task heads of BERT's descendants in transformers (``name`` + ForSequenceClassification, …): one
    Linear each, under the same name on both sides (``classifier``; ``qa_outputs`` for question answering)."""
    return {
        f"{name}ForSequenceClassification": linear("classifier", "classifier"),
        f"{name}ForTokenClassification": linear("classifier", "classifier"),
        f"{name}ForQuestionAnswering": linear("qa_outputs", "qa_outputs"),
        f"{name}ForMultipleChoice": linear("classifier", "classifier"),
    }


def pooled(name: str) -> frozenset[str]:
    """The classes of a BERT-like family that read its pooler, tanh(W h_[CLS] + b): the bare model, the
    pretraining model (NSP / SOP) and the sentence-level task heads."""
    return frozenset(
        name + c for c in ("Model", "ForPreTraining", "ForSequenceClassification", "ForMultipleChoice")
    )


def tied_decoder(prefix: str, theirs: str) -> tuple[tuple[str, str, str], ...]:
    """A masked LM's decoder as transformers stores it, at ``theirs``: its weight is the word embedding matrix
    (ours under ``prefix``), and its bias a second name of the head's bias."""
    return (
        ("mlm.decoder.weight", f"{prefix}.embeddings.word_embeddings.weight", f"{theirs}.weight"),
        ("mlm.decoder.bias", "mlm.decoder.bias", f"{theirs}.bias"),
    )


Transform = Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]


def same(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return state


@dataclass(frozen=True)
class HeadLayout:
    """One family's key map, declaratively: how its transformers classes lay out their checkpoints. A bare
    model (``base``) keeps the encoder's keys at the top, a head model under ``prefix``; each architecture
    adds its head's keys (``heads``) and, when it is in ``pooled``, the pooler's; some of their keys are
    copies of ours (``tied``: the MLM decoder's weight is the word embedding matrix). ``from_hf`` / ``to_hf``
    run it either way, for every family (BERT, RoBERTa, ALBERT, ELECTRA, GPT, DistilBERT, MobileBERT):

    - the prefix of the checkpoint is detected (a head model's encoder is under ``prefix.``);
    - a bare model loads from a checkpoint of any class, dropping its heads (``head_modules``, as
      transformers does), and so does a task starting anew (``new_heads``: the task's head and pooler loaded
      only when the checkpoint has them — the caller initialises them); a head model needs its own head and
      drops only the heads in ``dropped`` (None: any; BERT's masked LM drops a pretraining checkpoint's NSP),
      another's being an error that names its keys; a bare model has a pooler only when the checkpoint does
      (sentence encoders often ship without one);
    - keys that carry nothing (``buffers``: position_ids, …, matched as key endings) are skipped, and keys
      nobody knows are named in an error (Loader.check_all_used).

    ``encoder(ours, theirs)``: the encoder's map, our keys under prefix ``ours``, theirs under ``theirs``;
    ``pooler`` likewise, for the architectures in ``pooled``; ``tied[architecture]``: (our key, the key of
    ours it equals, their key of the copy). A family's own habits: ``load`` / ``dump`` rewrite their state
    dict on the way in / out (TF-era LayerNorm names; GPT's Conv1D weights, transposed); ``aliases(theirs)``:
    {their key: another name it may be stored under} (a tied matrix saved under the head's name only);
    ``validate(ours, prefix, source)`` checks what was loaded (ALBERT's shared blocks)."""

    base: str
    prefix: str
    encoder: Callable[[str, str], KeyMap]
    heads: dict[str, KeyMap]
    head_modules: tuple[str, ...]  # their top-level modules of every head
    dropped: tuple[str, ...] | None = None  # those a head model drops (None: all of them)
    pooler: Callable[[str, str], KeyMap] | None = None
    pooled: frozenset[str] = frozenset()
    tied: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    buffers: tuple[str, ...] = ("embeddings.position_ids", "embeddings.token_type_ids")
    load: Transform = same
    dump: Transform = same
    aliases: Callable[[str], dict[str, str]] = lambda theirs: {}
    validate: Callable[[dict[str, torch.Tensor], str, str], None] | None = None

    def check(self, architecture: str) -> None:
        if architecture not in self.heads:
            raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(self.heads)}")

    def from_hf(
        self, hf: dict[str, torch.Tensor], architecture: str, source: str = "", *, new_heads: bool = False
    ) -> dict[str, torch.Tensor]:
        """Our state dict for ``architecture`` from a transformers state dict of any of the family's classes."""
        self.check(architecture)
        hf = self.load(hf)
        theirs = f"{self.prefix}." if any(k.startswith(f"{self.prefix}.") for k in hf) else ""
        ours = "" if architecture == self.base else f"{self.prefix}."
        missing = {k: v for k, v in self.aliases(theirs).items() if k not in hf and v in hf}
        hf = {**hf, **{k: hf[v] for k, v in missing.items()}}
        taken = Loader(hf, source or "checkpoint")
        out = taken.load(self.encoder(ours, theirs))
        if self.validate is not None:
            self.validate(out, ours, source or "checkpoint")
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
        taken.ignore(*missing.values(), *[k for k in hf if k.endswith(self.buffers)])
        # other heads go: a bare model and a new task drop them all, a masked LM a pretraining checkpoint's NSP
        everything = architecture == self.base or new_heads or self.dropped is None
        drop = self.head_modules if everything else self.dropped
        taken.ignore(*[k for k in hf if k.split(".")[0] in drop])
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
        return self.dump(out)

    def has_pooler(self, weights: dict[str, torch.Tensor] | None) -> bool:
        """Whether a bare model reading ``weights`` (None: new ones) has a pooler: when it has weights of its
        own, only if the checkpoint has them."""
        if weights is None or self.pooler is None:
            return True
        keys = [t for _, theirs in self.pooler("", "") for t in theirs]
        return any(k.endswith(keys[0]) for k in self.load(weights))


def conversions(layout_of: Callable[[Any], HeadLayout]) -> tuple[Callable[..., dict], Callable[..., dict]]:
    """A family's ``state_from_hf(hf, cfg, architecture, source="", new_heads=False)`` and ``state_to_hf(ours,
    cfg, architecture)`` (Family's signatures) from its ``layout_of(cfg)``."""

    def state_from_hf(hf, cfg, architecture: str, source: str = "", new_heads: bool = False) -> dict:
        return layout_of(cfg).from_hf(hf, architecture, source, new_heads=new_heads)

    def state_to_hf(ours, cfg, architecture: str) -> dict:
        return layout_of(cfg).to_hf(ours, architecture)

    return state_from_hf, state_to_hf


def builder(
    classes: dict[str, type[nn.Module]], layout_of: Callable[[Any], HeadLayout]
) -> Callable[..., nn.Module]:
    """A family's ``build(cfg, architecture, weights)`` (Family.build): the class of ``architecture``; a bare
    model takes ``add_pooling_layer`` — a pooler only if the weights it will read have one (HeadLayout.has_pooler)."""

    def build(cfg: Any, architecture: str, weights: dict[str, torch.Tensor] | None = None) -> nn.Module:
        if architecture not in classes:
            raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(classes)}")
        layout = layout_of(cfg)
        if architecture == layout.base and layout.pooler is not None:
            return classes[architecture](cfg, add_pooling_layer=layout.has_pooler(weights))
        return classes[architecture](cfg)

    return build


def named(*classes: type[nn.Module]) -> dict[str, type[nn.Module]]:
    """A family's architectures table, {class name: class} (transformers' names are our classes' names)."""
    return {cls.__name__: cls for cls in classes}
