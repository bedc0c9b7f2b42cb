"""Hugging Face BERT checkpoints to and from ours: one declarative key map (seq2bert/models/keymap.py).

Our encoder layers fuse [W^Q; W^K; W^V] into one matrix (``self_attn.qkv``); transformers keeps
``attention.self.query / key / value``. Everything else is a renaming. The heads: ``cls.predictions.*``
(MLM, and the left-to-right LM of BertLMHeadModel; its decoder weight is the word embedding matrix) and
``cls.seq_relationship`` (NSP). A model with
heads stores the encoder under ``bert.``; a bare BertModel without that prefix — either loads into either.
"""

from __future__ import annotations

from typing import Any

import torch

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.keymap import KeyMap, Loader, linear, save

LAYER = {
    "self_attn.qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "self_attn.out": ("attention.output.dense",),
    "self_attn_sublayer.norm": ("attention.output.LayerNorm",),
    "feed_forward.w_1": ("intermediate.dense",),
    "feed_forward.w_2": ("output.dense",),
    "ffn_sublayer.norm": ("output.LayerNorm",),
}
# the task heads (tasks.py): the module each adds on top of the encoder, and whether it reads the pooler
TASK_HEADS = {
    "BertForSequenceClassification": ("classifier", True),
    "BertForTokenClassification": ("classifier", False),
    "BertForQuestionAnswering": ("qa_outputs", False),
    "BertForMultipleChoice": ("classifier", True),
}
LM_HEADS = ("BertForMaskedLM", "BertLMHeadModel")  # cls.predictions alone, no pooler
ARCHITECTURES = ("BertModel", "BertForPreTraining", *LM_HEADS, *TASK_HEADS)


def config_from_hf(
    hf: dict[str, Any], source: str = "config.json", config_class: type[BertConfig] = BertConfig
) -> BertConfig:
    """Our config from a transformers BertConfig dictionary (or a variant's: ``config_class``, a subclass
    of BertConfig with its own model_type and fields); variants we do not implement — relative positions,
    a decoder with cross-attention — are refused (a decoder without it, ``is_decoder``, is read)."""
    model_type = config_class.model_type
    if hf.get("model_type", model_type) != model_type:
        raise CheckpointError(f"{source}: model_type {hf.get('model_type')!r}, expected {model_type!r}")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(f"{source}: only absolute positions are supported")
    if hf.get("add_cross_attention"):
        raise CheckpointError(
            f"{source}: add_cross_attention: decoders with cross-attention are not supported"
        )
    fields = {k: hf[k] for k in config_class.__dataclass_fields__ if k in hf and k != "model_type"}
    try:
        if "id2label" in fields:  # JSON keys are strings
            fields["id2label"] = {int(i): str(label) for i, label in fields["id2label"].items()}
        elif "num_labels" in hf:
            fields["id2label"] = {i: f"LABEL_{i}" for i in range(int(hf["num_labels"]))}
        return config_class(**fields)
    except (ConfigError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{source}: {e}") from None


def config_to_hf(cfg: BertConfig, architecture: str) -> dict[str, Any]:
    out = {
        "architectures": [architecture],
        "model_type": cfg.model_type,
        **{k: getattr(cfg, k) for k in type(cfg).__dataclass_fields__ if k != "model_type"},
        "position_embedding_type": "absolute",
    }
    out["id2label"] = {str(i): label for i, label in cfg.id2label.items()}
    out["label2id"] = {label: i for i, label in cfg.id2label.items()}
    return out


def embeddings_keymap(ours: str, theirs: str) -> KeyMap:
    """BertEmbeddings' keys (token, position and segment tables, LayerNorm), ours under prefix ``ours``, theirs
    under ``theirs``."""
    e = f"{theirs}embeddings."
    return [
        (f"{ours}embeddings.word_embeddings.weight", (f"{e}word_embeddings.weight",)),
        (f"{ours}embeddings.position_embeddings.weight", (f"{e}position_embeddings.weight",)),
        (f"{ours}embeddings.token_type_embeddings.weight", (f"{e}token_type_embeddings.weight",)),
        *linear(f"{ours}embeddings.norm", f"{e}LayerNorm"),
    ]


def encoder_keymap(cfg: BertConfig, ours: str, theirs: str, pooler: bool) -> KeyMap:
    """BertModel's keys, ours under prefix ``ours`` and theirs under ``theirs`` ("" or "bert.")."""
    out = embeddings_keymap(ours, theirs)
    for i in range(cfg.num_hidden_layers):
        for sub, parts in LAYER.items():
            out += linear(f"{ours}layers.{i}.{sub}", *(f"{theirs}encoder.layer.{i}.{p}" for p in parts))
    if pooler:
        out += linear(f"{ours}pooler", f"{theirs}pooler.dense")
    return out


def heads_keymap(nsp: bool) -> KeyMap:
    out = [
        *linear("mlm.dense", "cls.predictions.transform.dense"),
        *linear("mlm.norm", "cls.predictions.transform.LayerNorm"),
        ("mlm.decoder.bias", ("cls.predictions.bias",)),
    ]
    return out + (linear("nsp", "cls.seq_relationship") if nsp else [])


def tf_renamed(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """TF-era names (LayerNorm.gamma / beta) as transformers renames them."""
    return {
        k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias"): v
        for k, v in state.items()
    }


def from_hf_state_dict(
    hf: dict[str, torch.Tensor],
    cfg: BertConfig,
    architecture: str,
    source: str = "",
    *,
    new_heads: bool = False,
) -> dict:
    """Our state dict for ``architecture`` (any of ARCHITECTURES) from a transformers state dict of any of
    them. Heads missing from the checkpoint are an error; heads present but not needed, and keys nobody
    knows, are named in the error too — except the heads of a bare encoder load (BertModel from a
    pretraining checkpoint drops them, as transformers does).

    ``new_heads`` (starting a fine-tuning run): the task head and pooler may be missing — the result then
    lacks them and the caller initialises them — and every head of the checkpoint is dropped."""
    hf = tf_renamed(hf)
    theirs = "bert." if any(k.startswith("bert.") for k in hf) else ""
    ours = "" if architecture == "BertModel" else "bert."
    taken = Loader(hf, source or "checkpoint")
    head, pooler = TASK_HEADS.get(architecture, (None, architecture not in LM_HEADS))
    has_pooler = f"{theirs}pooler.dense.weight" in hf
    if architecture == "BertModel" or (new_heads and pooler):
        pooler = pooler and has_pooler  # sentence encoders often ship without a pooler
    out = taken.load(encoder_keymap(cfg, ours, theirs, pooler))
    if architecture in ("BertForPreTraining", *LM_HEADS):
        out.update(taken.load(heads_keymap(nsp=architecture == "BertForPreTraining")))
        out["mlm.decoder.weight"] = out["bert.embeddings.word_embeddings.weight"]  # tied
    elif head is not None and not (new_heads and f"{head}.weight" not in hf):
        out.update(taken.load(linear(head, head)))
    taken.ignore(
        "cls.predictions.decoder.weight", "cls.predictions.decoder.bias", f"{theirs}embeddings.position_ids"
    )
    if architecture != "BertForPreTraining":  # heads a smaller model does not have
        taken.ignore(*[k for k in hf if k.startswith("cls.") or (not pooler and ".pooler." in f".{k}")])
    if new_heads:
        taken.ignore(*[k for k in hf if k.split(".")[0] in ("classifier", "qa_outputs")])
    taken.check_all_used()
    return out


def to_hf_state_dict(
    ours: dict[str, torch.Tensor], cfg: BertConfig, architecture: str
) -> dict[str, torch.Tensor]:
    """transformers' state dict of our model (tied matrices written under each of their names)."""
    prefix = "" if architecture == "BertModel" else "bert."
    pooler = f"{prefix}pooler.weight" in ours
    out = save(ours, encoder_keymap(cfg, prefix, prefix, pooler))
    if architecture in TASK_HEADS:
        head = TASK_HEADS[architecture][0]
        out.update(save(ours, linear(head, head)))
    elif architecture != "BertModel":
        out.update(save(ours, heads_keymap(nsp=architecture == "BertForPreTraining")))
        out["cls.predictions.decoder.weight"] = ours["mlm.decoder.weight"]
        out["cls.predictions.decoder.bias"] = ours["mlm.decoder.bias"]
    return out
