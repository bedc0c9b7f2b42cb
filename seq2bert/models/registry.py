"""The one registry of model families, keyed by the Hugging Face ``model_type`` (or seq2bert's own, for
families transformers has no class for). Each family describes itself once (seq2bert/models/family.py);
this file lists them. ``seq2bert.from_pretrained``, the pipelines, the CLI, inspection, pretraining and
fine-tuning find a family here — by a checkpoint directory's config.json, a config or a model — and
never by its name.

A new family: its package under models/ (config.py, model.py, convert.py, a ``FAMILY``), plus one line in
FAMILIES below; or, for one of your own, ``register(Family(...))`` at run time (docs/architecture.md).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Union

import torch
from torch import nn

from seq2bert.errors import CheckpointError
from seq2bert.io import read_json, resolve_checkpoint
from seq2bert.models import pretrained
from seq2bert.models.albert.pretrained import FAMILY as ALBERT
from seq2bert.models.attention.bahdanau import RNNSearch
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.attention.luong import LuongNMT
from seq2bert.models.bert.pretrained import FAMILY as BERT
from seq2bert.models.bilstm.model import FAMILY as BILSTM
from seq2bert.models.distilbert.pretrained import FAMILY as DISTILBERT
from seq2bert.models.electra.pretrained import FAMILY as ELECTRA
from seq2bert.models.elmo.model import FAMILY as ELMO
from seq2bert.models.family import Family
from seq2bert.models.gpt.pretrained import GPT2, OPENAI_GPT
from seq2bert.models.hf import model_type_of
from seq2bert.models.mobilebert.pretrained import FAMILY as MOBILEBERT
from seq2bert.models.rnn_lm.model import FAMILY as RNN_LM
from seq2bert.models.roberta.pretrained import FAMILY as ROBERTA
from seq2bert.models.seq2seq.cho import ChoEncoderDecoder
from seq2bert.models.seq2seq.config import ChoConfig, Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq
from seq2bert.models.spanbert.pretrained import FAMILY as SPANBERT
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.marian import FAMILY as MARIAN
from seq2bert.models.transformer.model import Transformer

log = logging.getLogger(__name__)


def translation_family(model_type: str, config_class: type, model_class: type[nn.Module]) -> Family:
    """An encoder-decoder trained by seq2bert's translation recipe, in seq2bert's checkpoint layout."""
    return Family(
        model_type,
        config_class,
        {model_class.__name__: model_class},
        heads={"seq2seq": model_class.__name__},
        kind="encoder-decoder",
        layout="seq2bert",
    )


FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        translation_family("seq2seq", Seq2SeqConfig, Seq2Seq),
        translation_family("cho", ChoConfig, ChoEncoderDecoder),
        translation_family("bahdanau", BahdanauConfig, RNNSearch),
        translation_family("luong", LuongConfig, LuongNMT),
        translation_family("transformer", TransformerConfig, Transformer),
        RNN_LM,
        MARIAN,
        BERT,
        ELECTRA,
        ROBERTA,
        ALBERT,
        SPANBERT,
        DISTILBERT,
        MOBILEBERT,
        BILSTM,
        ELMO,
        OPENAI_GPT,
        GPT2,
    )
}

# the families the translation recipe trains (seq2bert's own layout), and the model section of its run
# configuration: one of their configs, chosen by its model_type (seq2bert/config.py)
TRANSLATION_FAMILIES = [f for f in FAMILIES.values() if f.kind == "encoder-decoder" and not f.huggingface]
ModelConfig = Union[tuple(f.config_class for f in TRANSLATION_FAMILIES)]  # noqa: UP007 (built from a list)

# the language models `seq2bert train-lm` trains on a token stream (recipes/lm.py), and the model section of
# its configuration: the first is the default
LM_FAMILIES = [RNN_LM, ELMO]
LMModelConfig = Union[tuple(f.config_class for f in LM_FAMILIES)]  # noqa: UP007 (built from a list)


def register(family: Family) -> Family:
    """Add a family (one of your own: a model_type not taken yet)."""
    if family.model_type in FAMILIES and FAMILIES[family.model_type] is not family:
        raise ValueError(f"model_type {family.model_type!r} is already registered")
    FAMILIES[family.model_type] = family
    return family


def get(model_type: str | None, source: str | Path = "config.json") -> Family:
    """The family of ``model_type``; a one-line error naming the known ones otherwise."""
    if model_type not in FAMILIES:
        raise CheckpointError(f"{source}: model_type {model_type!r} is not one of {', '.join(FAMILIES)}")
    return FAMILIES[model_type]


def family_of(model_or_config: Any) -> Family:
    """The family of a model or config (by its ``model_type``)."""
    config = getattr(model_or_config, "config", model_or_config)
    return get(getattr(config, "model_type", None), type(config).__name__)


def checkpoint_dir(path: str | Path) -> Path:
    """A checkpoint directory itself (anything with a config.json), or a run directory's best checkpoint."""
    path = Path(path)
    return path if (path / "config.json").is_file() else resolve_checkpoint(path)


def family_at(path: str | Path) -> Family:
    """The family of a checkpoint or run directory, from its config.json."""
    directory = checkpoint_dir(path)
    return get(model_type_of(directory), directory / "config.json")


def load(
    path: str | Path,
    *,
    architecture: str | None = None,
    head: str | tuple[str, ...] | None = None,
    device: str | torch.device = "cpu",
) -> tuple[nn.Module, Any]:
    """(model in eval mode, tokenizer) of a checkpoint or run directory, of whichever family it is: the
    ``architecture`` asked for, or the one that has ``head`` ("base", "masked_lm", "sequence", …) — of several
    heads, the one config.json names, else the first's —, or the one its config.json names. A head the
    checkpoint keeps in a directory of its own (``Family.head_dirs``: an ELECTRA run's generator/) comes from
    there when the model config.json names lacks it."""
    directory = checkpoint_dir(path)
    family = family_at(directory)
    named = candidates = None
    if head is not None:
        heads = (head,) if isinstance(head, str) else head
        named = (read_json(directory / "config.json").get("architectures") or [None])[0]
        try:
            candidates = [family.architecture_for(h) for h in heads if h in family.heads or h == heads[0]]
        except KeyError as e:
            raise CheckpointError(f"{path}: {e.args[0]}") from None
        inside = [directory / family.head_dirs[h] for h in heads if h in family.head_dirs]
        if named not in candidates and inside and (inside[0] / "config.json").is_file():
            log.info("%s: a %s; its %s head is the model in %s", path, named, heads[0], inside[0])
            return load(inside[0], architecture=architecture, head=head, device=device)
        architecture = named if named in candidates else candidates[0]
    if not family.huggingface:
        return pretrained.load_native(family, directory, device)
    try:
        return pretrained.load_hf(family, directory, architecture, device)
    except CheckpointError as e:
        if named is None or named in candidates:
            raise
        kept = "".join(f"; a checkpoint keeps it in {d}/" for h, d in family.head_dirs.items() if h in heads)
        raise CheckpointError(f"{e} (a {named} has no {heads[0]} head{kept})") from None


def model_config_from_dict(data: dict[str, Any], source: str | Path = "config") -> Any:
    """The config dataclass named by ``data["model_type"]``, checked key by key."""
    return pretrained.config_from_dict(get(data.get("model_type"), source), data, source)


def read_model_config(directory: str | Path) -> Any:
    directory = Path(directory)
    return model_config_from_dict(read_json(directory / "config.json"), directory / "config.json")


def build_model(config: Any, architecture: str | None = None) -> nn.Module:
    """A new model (fresh weights) for ``config``: the bare architecture unless another is named."""
    return family_of(config).make(config, architecture)
