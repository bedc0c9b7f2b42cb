"""The one registry of model families, keyed by the Hugging Face ``model_type`` (or seq2bert's own, for
families transformers has no class for). Each family describes itself once (seq2bert/models/family.py);
this file lists them. ``seq2bert.from_pretrained``, the pipelines, the CLI, inspection, pretraining and
fine-tuning find a family here — by a checkpoint directory's config.json, a config or a model — and
never by its name.

A new family: its package under models/ (config.py, model.py, convert.py, a ``FAMILY``), plus one line in
the list below; or, for one of your own, ``register(Family(...))`` at run time — in a plugin module, which
the CLI imports when $SEQ2BERT_PLUGINS names it (seq2bert/cli.py) — and the recipes' model sections offer
it like a built-in one (``--set model.model_type=…``; ``model_section`` below). The table itself and its
lookups (``FAMILIES``, ``register``, ``get``, ``family_of``) live in models/family.py, below the families,
and loading in models/pretrained.py; this module lists the built-in families and re-exports both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from torch import nn

from seq2bert.config import Tagged
from seq2bert.models import pretrained
from seq2bert.models.albert.pretrained import FAMILY as ALBERT
from seq2bert.models.attention.bahdanau import RNNSearch
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.attention.luong import LuongNMT
from seq2bert.models.bert.pretrained import FAMILY as BERT
from seq2bert.models.bilstm.model import FAMILY as BILSTM
from seq2bert.models.cove import FAMILY as COVE
from seq2bert.models.distilbert.pretrained import FAMILY as DISTILBERT
from seq2bert.models.electra.pretrained import FAMILY as ELECTRA
from seq2bert.models.elmo.model import FAMILY as ELMO
from seq2bert.models.family import FAMILIES, Family, families, family_of, get, register
from seq2bert.models.fasttext.model import FAMILY as FASTTEXT
from seq2bert.models.glove.model import FAMILY as GLOVE
from seq2bert.models.gpt.pretrained import GPT2, OPENAI_GPT
from seq2bert.models.hub import as_given, local_path
from seq2bert.models.mobilebert.pretrained import FAMILY as MOBILEBERT
from seq2bert.models.pretrained import checkpoint_dir, family_at, load
from seq2bert.models.rnn_lm.model import FAMILY as RNN_LM
from seq2bert.models.roberta.pretrained import FAMILY as ROBERTA
from seq2bert.models.seq2seq.cho import ChoEncoderDecoder
from seq2bert.models.seq2seq.config import ChoConfig, Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq
from seq2bert.models.spanbert.pretrained import FAMILY as SPANBERT
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.marian import FAMILY as MARIAN
from seq2bert.models.transformer.model import Transformer
from seq2bert.models.word2vec.model import FAMILY as WORD2VEC
from seq2bert.models.xlnet.pretrained import FAMILY as XLNET

__all__ = [
    "FAMILIES",
    "LMModelConfig",
    "ModelConfig",
    "TRANSLATION_FAMILIES",
    "as_given",
    "build_model",
    "checkpoint_dir",
    "families",
    "family_at",
    "family_of",
    "get",
    "load",
    "local_path",
    "model_config_from_dict",
    "model_section",
    "register",
    "translation_families",
]


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


for _family in (
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
    XLNET,
    DISTILBERT,
    MOBILEBERT,
    BILSTM,
    ELMO,
    COVE,
    OPENAI_GPT,
    GPT2,
    WORD2VEC,
    GLOVE,
    FASTTEXT,
):
    register(_family)


# the model sections of the recipes' configurations: the config of a registered family (built-in or a plugin's)
# chosen by model.model_type, looked up when a configuration is read (seq2bert/config.py, Tagged)
def model_section(where: Callable[[Family], bool], default: str, preset: str | None = None) -> Any:
    """The type of a configuration's model section: the config of any registered family that satisfies
    ``where``, chosen by ``model_type`` (``default`` when a mapping names none); when ``model_type`` switches,
    the new model starts from its family's ``preset`` (``Family.presets``) or its config's defaults."""

    def defaults(model_type: str) -> Callable[[], Any] | None:
        return FAMILIES[model_type].presets.get(preset) if preset and model_type in FAMILIES else None

    return Annotated[Any, Tagged(lambda: families(where), default, defaults)]


def translates(f: Family) -> bool:
    """A family the translation recipe trains: an encoder-decoder in seq2bert's checkpoint layout."""
    return f.kind == "encoder-decoder" and not f.huggingface


# `seq2bert train` (recipes/translation.py) and `seq2bert train-lm` (recipes/lm.py: a token stream's LM)
ModelConfig = model_section(translates, default="seq2seq")
LMModelConfig = model_section(lambda f: f.stream_lm, default="rnn-lm")


def translation_families() -> list[Family]:
    """The registered families the translation recipe trains (built-in or a plugin's)."""
    return [f for f in FAMILIES.values() if translates(f)]


TRANSLATION_FAMILIES = translation_families()  # the built-in ones


def model_config_from_dict(data: dict[str, Any], source: str | Path = "config") -> Any:
    """The config dataclass named by ``data["model_type"]``, checked key by key."""
    return pretrained.config_from_dict(get(data.get("model_type"), source), data, source)


def build_model(config: Any, architecture: str | None = None) -> nn.Module:
    """A new model (fresh weights) for ``config``: the bare architecture unless another is named."""
    return family_of(config).make(config, architecture)
