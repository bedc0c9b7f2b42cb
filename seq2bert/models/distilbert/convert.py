"""Hugging Face DistilBERT checkpoints to and from ours, declaratively (seq2bert/models/keymap.py HeadLayout).

ours                                    transformers (under ``distilbert.`` in a head model)
embeddings.word_embeddings / norm       embeddings.word_embeddings / LayerNorm
embeddings.position_embeddings.weight   embeddings.position_embeddings.weight   (learned)
embeddings.position_embeddings.table    the same key                            (sinusoidal_pos_embds)
layers.i.self_attn.qkv                  transformer.layer.i.attention.q_lin, k_lin, v_lin (fused)
layers.i.self_attn.out                  transformer.layer.i.attention.out_lin
layers.i.self_attn_sublayer.norm        transformer.layer.i.sa_layer_norm
layers.i.feed_forward.w_1 / w_2         transformer.layer.i.ffn.lin1 / lin2
layers.i.ffn_sublayer.norm              transformer.layer.i.output_layer_norm
mlm.dense / mlm.norm / mlm.decoder.bias vocab_transform / vocab_layer_norm / vocab_projector.bias
mlm.decoder.weight                      the word embeddings (vocab_projector.weight, tied)
pre_classifier, classifier, qa_outputs  the same names
"""

from __future__ import annotations

from typing import Any

from seq2bert.models.bert.convert import config_from_hf as bert_config_from_hf
from seq2bert.models.bert.convert import config_to_hf as bert_config_to_hf
from seq2bert.models.distilbert.config import DistilBertConfig
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear

LAYER = {
    "self_attn.qkv": ("attention.q_lin", "attention.k_lin", "attention.v_lin"),
    "self_attn.out": ("attention.out_lin",),
    "self_attn_sublayer.norm": ("sa_layer_norm",),
    "feed_forward.w_1": ("ffn.lin1",),
    "feed_forward.w_2": ("ffn.lin2",),
    "ffn_sublayer.norm": ("output_layer_norm",),
}
MLM = "DistilBertForMaskedLM"
HEADS: dict[str, KeyMap] = {
    "DistilBertModel": [],
    MLM: [
        *linear("mlm.dense", "vocab_transform"),
        *linear("mlm.norm", "vocab_layer_norm"),
        ("mlm.decoder.bias", ("vocab_projector.bias",)),
    ],
    "DistilBertForSequenceClassification": linear("pre_classifier", "pre_classifier")
    + linear("classifier", "classifier"),
    "DistilBertForTokenClassification": linear("classifier", "classifier"),
    "DistilBertForQuestionAnswering": linear("qa_outputs", "qa_outputs"),
    "DistilBertForMultipleChoice": linear("pre_classifier", "pre_classifier")
    + linear("classifier", "classifier"),
}
ARCHITECTURES = tuple(HEADS)


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> DistilBertConfig:
    """Our config from a transformers DistilBertConfig dictionary (its own field names)."""
    return bert_config_from_hf(hf, source, DistilBertConfig)


def config_to_hf(cfg: DistilBertConfig, architecture: str) -> dict[str, Any]:
    out = bert_config_to_hf(cfg, architecture)
    del out["position_embedding_type"], out["classifier_dropout"]  # BERT's fields DistilBERT has not
    return out


def encoder_keymap(cfg: DistilBertConfig, ours: str, theirs: str) -> KeyMap:
    """DistilBertModel's keys, ours under prefix ``ours`` and theirs under ``theirs`` ("" or "distilbert.")."""
    e, positions = f"{theirs}embeddings.", "table" if cfg.sinusoidal_pos_embds else "weight"
    out: KeyMap = [
        (f"{ours}embeddings.word_embeddings.weight", (f"{e}word_embeddings.weight",)),
        (f"{ours}embeddings.position_embeddings.{positions}", (f"{e}position_embeddings.weight",)),
        *linear(f"{ours}embeddings.norm", f"{e}LayerNorm"),
    ]
    for i in range(cfg.n_layers):
        for sub, parts in LAYER.items():
            out += linear(f"{ours}layers.{i}.{sub}", *(f"{theirs}transformer.layer.{i}.{p}" for p in parts))
    return out


def layout(cfg: DistilBertConfig) -> HeadLayout:
    return HeadLayout(
        base="DistilBertModel",
        prefix="distilbert",
        encoder=lambda ours, theirs: encoder_keymap(cfg, ours, theirs),
        heads=HEADS,
        head_modules=(
            "vocab_transform",
            "vocab_layer_norm",
            "vocab_projector",
            "pre_classifier",
            "classifier",
            "qa_outputs",
        ),
        tied={
            MLM: (
                (
                    "mlm.decoder.weight",
                    "distilbert.embeddings.word_embeddings.weight",
                    "vocab_projector.weight",
                ),
            )
        },
    )


# our state dict from a transformers state dict of any of its classes, and back (tied tensors written
# under each of their names)
from_hf_state_dict, to_hf_state_dict = conversions(layout)
