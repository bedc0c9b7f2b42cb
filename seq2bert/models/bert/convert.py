"""Hugging Face BERT checkpoints to and from ours: one declarative key map (seq2bert/models/keymap.py).

Our encoder layers fuse [W^Q; W^K; W^V] into one matrix (``self_attn.qkv``); transformers keeps
``attention.self.query / key / value``. Everything else is a renaming. The heads: ``cls.predictions.*``
(MLM, and the left-to-right LM of BertLMHeadModel; its decoder weight is the word embedding matrix) and
``cls.seq_relationship`` (NSP); the task heads' ``classifier`` / ``qa_outputs``. A model with heads stores
the encoder under ``bert.``; a bare BertModel without that prefix — either loads into either (HeadLayout).
"""

from __future__ import annotations

from typing import Any

import torch

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear, pooled, task_heads, tied_decoder
from seq2bert.objectives.classification import labels_from_hf

LAYER = {
    "self_attn.qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "self_attn.out": ("attention.output.dense",),
    "self_attn_sublayer.norm": ("attention.output.LayerNorm",),
    "feed_forward.w_1": ("intermediate.dense",),
    "feed_forward.w_2": ("output.dense",),
    "ffn_sublayer.norm": ("output.LayerNorm",),
}
MLM_HEAD = [
    *linear("mlm.dense", "cls.predictions.transform.dense"),
    *linear("mlm.norm", "cls.predictions.transform.LayerNorm"),
    ("mlm.decoder.bias", ("cls.predictions.bias",)),
]
HEADS: dict[str, KeyMap] = {
    "BertModel": [],
    "BertForPreTraining": MLM_HEAD + linear("nsp", "cls.seq_relationship"),
    "BertForMaskedLM": MLM_HEAD,
    "BertLMHeadModel": MLM_HEAD,  # the left-to-right LM: the same head
    **task_heads("Bert"),
}
ARCHITECTURES = tuple(HEADS)
TIED = tied_decoder("bert", "cls.predictions.decoder")  # the MLM decoder: the word embeddings


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
        fields.update(labels_from_hf(hf))  # JSON keys are strings
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
    out.pop("pruned_heads", None)
    if getattr(cfg, "pruned_heads", None):  # JSON keys are strings
        out["pruned_heads"] = {str(layer): heads for layer, heads in cfg.pruned_heads.items()}
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


def encoder_keymap(cfg: BertConfig, ours: str, theirs: str) -> KeyMap:
    """BertModel's keys but the pooler's, ours under prefix ``ours`` and theirs under ``theirs`` ("" or
    "bert.")."""
    out = embeddings_keymap(ours, theirs)
    for i in range(cfg.num_hidden_layers):
        for sub, parts in LAYER.items():
            out += linear(f"{ours}layers.{i}.{sub}", *(f"{theirs}encoder.layer.{i}.{p}" for p in parts))
    return out


def tf_renamed(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """TF-era names (LayerNorm.gamma / beta) as transformers renames them."""
    return {
        k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias"): v
        for k, v in state.items()
    }


def layout(cfg: BertConfig) -> HeadLayout:
    return HeadLayout(
        base="BertModel",
        prefix="bert",
        encoder=lambda ours, theirs: encoder_keymap(cfg, ours, theirs),
        heads=HEADS,
        head_modules=("cls", "classifier", "qa_outputs"),
        dropped=("cls",),  # the pretraining heads (a masked LM drops NSP); another task's head is an error
        pooler=lambda ours, theirs: linear(f"{ours}pooler", f"{theirs}pooler.dense"),
        pooled=pooled("Bert"),
        tied={a: TIED for a in ("BertForPreTraining", "BertForMaskedLM", "BertLMHeadModel")},
        load=tf_renamed,
    )


# our state dict for any architecture from a transformers state dict of any of them, and back (tied
# tensors written under each of their names); ``new_heads`` (a fine-tuning run starting): the task head and
# pooler may be missing — the result then lacks them and the caller initialises them — and every head of
# the checkpoint is dropped
from_hf_state_dict, to_hf_state_dict = conversions(layout)
