"""Hugging Face ALBERT checkpoints to and from ours: one declarative key map (seq2bert/models/keymap.py).

transformers keeps the E → H projection in the encoder (``encoder.embedding_hidden_mapping_in``) and the
layers as groups: ``encoder.albert_layer_groups.{g}.albert_layers.{j}`` is our layer module g·k + j (k =
inner_group_num). As in BERT, our layers fuse [W^Q; W^K; W^V]. The heads: ``predictions.*`` (MLM; its
decoder weight is the word embedding matrix), ``sop_classifier.classifier`` (SOP), and the task heads'
``classifier`` / ``qa_outputs``; a model with heads keeps the encoder under ``albert.``.

Our attention-only, feed-forward-only and unshared models (config ``share``) have no transformers
counterpart of their own; they are written as an unshared transformers ALBERT (num_hidden_groups = L, the
shared block repeated in every layer), which transformers reads and runs with equal outputs, and
config.json keeps ``share``, which brings them back as they were (the repeated blocks must be equal).
"""

from __future__ import annotations

from typing import Any

import torch

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models.albert.config import AlbertConfig
from seq2bert.models.bert.convert import tf_renamed
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear, pooled, task_heads, tied_decoder
from seq2bert.objectives.classification import labels_from_hf

RENAMED = {"classifier_dropout": "classifier_dropout_prob"}  # ours → transformers'
CONFIG_FIELDS = tuple(f for f in AlbertConfig.__dataclass_fields__ if f not in ("model_type", "id2label"))
LAYER = {
    "self_attn.qkv": ("attention.query", "attention.key", "attention.value"),
    "self_attn.out": ("attention.dense",),
    "self_attn_sublayer.norm": ("attention.LayerNorm",),
    "feed_forward.w_1": ("ffn",),
    "feed_forward.w_2": ("ffn_output",),
    "ffn_sublayer.norm": ("full_layer_layer_norm",),
}
SHARED = {"attention": ("self_attn.qkv", "self_attn.out"), "ffn": ("feed_forward.w_1", "feed_forward.w_2")}
MLM_HEAD = [
    *linear("mlm.dense", "predictions.dense"),
    *linear("mlm.norm", "predictions.LayerNorm"),
    ("mlm.decoder.bias", ("predictions.bias",)),
]
HEADS: dict[str, KeyMap] = {
    "AlbertModel": [],
    "AlbertForPreTraining": MLM_HEAD + linear("sop.classifier", "sop_classifier.classifier"),
    "AlbertForMaskedLM": MLM_HEAD,
    **task_heads("Albert"),
}
ARCHITECTURES = tuple(HEADS)
TIED = tied_decoder("albert", "predictions.decoder")  # the MLM decoder: the word embeddings


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> AlbertConfig:
    """Our config from a transformers AlbertConfig dictionary (with our ``share`` when we wrote it)."""
    if hf.get("model_type", AlbertConfig.model_type) != AlbertConfig.model_type:
        raise CheckpointError(
            f"{source}: model_type {hf.get('model_type')!r}, expected {AlbertConfig.model_type!r}"
        )
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(f"{source}: only ALBERTs with absolute positions are supported")
    fields = {k: hf[RENAMED.get(k, k)] for k in CONFIG_FIELDS if RENAMED.get(k, k) in hf}
    if fields.get("share", "all") != "all":  # written unshared for transformers (see above)
        if fields.get("num_hidden_groups") != fields.get("num_hidden_layers"):
            raise CheckpointError(f"{source}: share={fields['share']!r} needs one group per layer")
        fields["num_hidden_groups"] = 1
    try:
        fields.update(labels_from_hf(hf))  # JSON keys are strings
        return AlbertConfig(**fields)
    except (ConfigError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{source}: {e}") from None


def config_to_hf(cfg: AlbertConfig, architecture: str) -> dict[str, Any]:
    out = {
        "architectures": [architecture],
        "model_type": cfg.model_type,
        **{RENAMED.get(k, k): getattr(cfg, k) for k in CONFIG_FIELDS},
        "position_embedding_type": "absolute",
    }
    if cfg.share != "all":  # every layer its own group, the shared blocks repeated
        out["num_hidden_groups"] = cfg.num_hidden_layers
    out["id2label"] = {str(i): label for i, label in cfg.id2label.items()}
    out["label2id"] = {label: i for i, label in cfg.id2label.items()}
    return out


def layer_slots(cfg: AlbertConfig) -> list[tuple[int, int]]:
    """transformers' (group, inner layer) of each of our layer modules, in their order."""
    if cfg.share != "all":
        return [(i, 0) for i in range(cfg.num_hidden_layers)]
    k = cfg.inner_group_num
    return [(g, j) for g in range(cfg.num_hidden_groups) for j in range(k)]


def encoder_keymap(cfg: AlbertConfig, ours: str, theirs: str) -> KeyMap:
    """AlbertModel's keys but the pooler's, ours under prefix ``ours`` and theirs under ``theirs``."""
    e = f"{theirs}embeddings."
    out: KeyMap = [
        (f"{ours}embeddings.word_embeddings.weight", (f"{e}word_embeddings.weight",)),
        (f"{ours}embeddings.position_embeddings.weight", (f"{e}position_embeddings.weight",)),
        (f"{ours}embeddings.token_type_embeddings.weight", (f"{e}token_type_embeddings.weight",)),
        *linear(f"{ours}embeddings.norm", f"{e}LayerNorm"),
        *linear(f"{ours}embeddings.projection", f"{theirs}encoder.embedding_hidden_mapping_in"),
    ]
    for m, (g, j) in enumerate(layer_slots(cfg)):
        layer = f"{theirs}encoder.albert_layer_groups.{g}.albert_layers.{j}"
        for sub, parts in LAYER.items():
            out += linear(f"{ours}layers.{m}.{sub}", *(f"{layer}.{p}" for p in parts))
    return out


def check_shared(state: dict[str, torch.Tensor], cfg: AlbertConfig, ours: str, source: str) -> None:
    """The blocks our ``share`` mode shares were written once per layer: they must be equal."""
    for sub in SHARED.get(cfg.share, ()):
        for leaf in ("weight", "bias"):
            first = state[f"{ours}layers.0.{sub}.{leaf}"]
            for i in range(1, cfg.num_hidden_layers):
                if not torch.equal(state[f"{ours}layers.{i}.{sub}.{leaf}"], first):
                    raise CheckpointError(
                        f"{source}: share={cfg.share!r} but layer {i}'s {sub}.{leaf} differs from layer 0's"
                    )


def layout(cfg: AlbertConfig) -> HeadLayout:
    return HeadLayout(
        base="AlbertModel",
        prefix="albert",
        encoder=lambda ours, theirs: encoder_keymap(cfg, ours, theirs),
        heads=HEADS,
        head_modules=("predictions", "sop_classifier", "classifier", "qa_outputs"),
        dropped=("predictions", "sop_classifier"),  # the pretraining heads; another task's is an error
        pooler=lambda ours, theirs: linear(f"{ours}pooler", f"{theirs}pooler"),
        pooled=pooled("Albert"),
        tied={"AlbertForPreTraining": TIED, "AlbertForMaskedLM": TIED},
        load=tf_renamed,
        validate=lambda ours, prefix, source: check_shared(ours, cfg, prefix, source),
    )


# our state dict for any architecture from a transformers state dict of any of them, and back (tied
# tensors written under each of their names)
from_hf_state_dict, to_hf_state_dict = conversions(layout)
