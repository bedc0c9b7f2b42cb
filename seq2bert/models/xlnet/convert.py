"""Hugging Face XLNet checkpoints to and from ours: one declarative key map (seq2bert/models/keymap.py) and the
config fields one to one.

    ours (under ``transformer.`` in a head model)      transformers
    stack.embeddings.word_embedding                     word_embedding
    mask_emb                                            mask_emb               (1, 1, d_model)
    stack.layers.i.self_attn.qkv                        layer.i.rel_attn.q, k, v   (d_model, n_head, d_head) each
    stack.layers.i.self_attn.out                        layer.i.rel_attn.o
    stack.layers.i.self_attn.position.r                 layer.i.rel_attn.r     W_R
    stack.layers.i.self_attn.position.r_w_bias, …       layer.i.rel_attn.r_w_bias, r_r_bias, r_s_bias, seg_embed
    stack.layers.i.self_attn_sublayer.norm              layer.i.rel_attn.layer_norm
    stack.layers.i.feed_forward.w_1 / .w_2              layer.i.ff.layer_1 / layer_2
    stack.layers.i.ffn_sublayer.norm                    layer.i.ff.layer_norm
    lm_loss.bias                                        lm_loss.bias           (its weight: the tied embedding)
    sequence_summary.summary, logits_proj               the same names        (sequence, multiple choice)
    classifier, qa_outputs                              the same names        (tokens, question answering)

transformers keeps each projection as a (d_model, n_head, d_head) tensor applied by einsum: W^Q, W^K, W^V and
W_R are our Linear weights' transpose once the heads are flattened, W^O is our out.weight as it is. Those are
reshaped on the way in and out (``flattened`` / ``unflattened``).
"""

from __future__ import annotations

import re
from typing import Any

import torch

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear
from seq2bert.models.xlnet.config import XLNetConfig
from seq2bert.objectives.classification import labels_from_hf

PROJECTION = re.compile(r"(^|\.)layer\.\d+\.rel_attn\.([qkvor])$")
HEAD_MODULES = ("lm_loss", "sequence_summary", "logits_proj", "qa_outputs", "classifier")
SUMMARISED = linear("sequence_summary.summary", "sequence_summary.summary") + linear(
    "logits_proj", "logits_proj"
)
HEADS = {
    "XLNetModel": [],
    "XLNetLMHeadModel": [("lm_loss.bias", ("lm_loss.bias",))],
    "XLNetForSequenceClassification": SUMMARISED,
    "XLNetForTokenClassification": linear("classifier", "classifier"),
    "XLNetForQuestionAnsweringSimple": linear("qa_outputs", "qa_outputs"),
    "XLNetForMultipleChoice": SUMMARISED,
}
ARCHITECTURES = tuple(HEADS)


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> XLNetConfig:
    """Our config from a transformers XLNetConfig dictionary (its own field names)."""
    if hf.get("model_type") != "xlnet":
        raise CheckpointError(f"{source}: model_type {hf.get('model_type')!r}, expected 'xlnet'")
    fields = {k: hf[k] for k in XLNetConfig.__dataclass_fields__ if k in hf}
    try:
        fields.update(labels_from_hf(hf))  # JSON keys are strings
        if "d_head" in hf and hf["d_head"] != hf.get("d_model", 1024) // hf.get("n_head", 16):
            raise ConfigError(f"d_head: {hf['d_head']} is not d_model / n_head")
        return XLNetConfig(**fields)
    except (ConfigError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{source}: {e}") from None


def config_to_hf(cfg: XLNetConfig, architecture: str) -> dict[str, Any]:
    if architecture not in ARCHITECTURES:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")
    out = {"architectures": [architecture]}
    out.update({k: getattr(cfg, k) for k in XLNetConfig.__dataclass_fields__ if k != "id2label"})
    out["d_head"] = cfg.d_head
    out["id2label"] = {str(i): label for i, label in cfg.id2label.items()}
    out["label2id"] = {label: i for i, label in cfg.id2label.items()}
    out["tie_word_embeddings"] = True
    return out


def base_keymap(cfg: XLNetConfig, ours: str, theirs: str) -> KeyMap:
    """XLNetModel's keys, ours under prefix ``ours`` and theirs under ``theirs`` ("" or "transformer.")."""
    out: KeyMap = [
        (f"{ours}stack.embeddings.word_embedding.weight", (f"{theirs}word_embedding.weight",)),
        (f"{ours}mask_emb", (f"{theirs}mask_emb",)),
    ]
    for i in range(cfg.n_layer):
        a, layer = f"{theirs}layer.{i}.rel_attn.", f"{ours}stack.layers.{i}."
        out += [
            (f"{layer}self_attn.qkv.weight", (f"{a}q", f"{a}k", f"{a}v")),
            (f"{layer}self_attn.out.weight", (f"{a}o",)),
            (f"{layer}self_attn.position.r.weight", (f"{a}r",)),
            *[
                (f"{layer}self_attn.position.{p}", (f"{a}{p}",))
                for p in ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed")
            ],
            *linear(f"{layer}self_attn_sublayer.norm", f"{a}layer_norm"),
            *linear(f"{layer}feed_forward.w_1", f"{theirs}layer.{i}.ff.layer_1"),
            *linear(f"{layer}feed_forward.w_2", f"{theirs}layer.{i}.ff.layer_2"),
            *linear(f"{layer}ffn_sublayer.norm", f"{theirs}layer.{i}.ff.layer_norm"),
        ]
    return out


def flattened(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Their (d_model, n_head, d_head) projections → our Linear weights: (n_head·d_head, d_model) for W^Q,
    W^K, W^V, W_R; (d_model, n_head·d_head) for W^O."""
    out = {}
    for key, value in state.items():
        match = PROJECTION.search(key)
        if match and value.dim() == 3:
            value = value.flatten(1)  # (d_model, h·d)
            value = value if match.group(2) == "o" else value.t()
        out[key] = value
    return out


def unflattened(state: dict[str, torch.Tensor], num_heads: int) -> dict[str, torch.Tensor]:
    """The inverse of ``flattened``."""
    out = {}
    for key, value in state.items():
        match = PROJECTION.search(key)
        if match:
            value = value if match.group(2) == "o" else value.t()
            value = value.reshape(value.size(0), num_heads, -1).contiguous()
        out[key] = value
    return out


def layout(cfg: XLNetConfig) -> HeadLayout:
    tied = (("lm_loss.weight", "transformer.stack.embeddings.word_embedding.weight", "lm_loss.weight"),)
    return HeadLayout(
        base="XLNetModel",
        prefix="transformer",
        encoder=lambda ours, theirs: base_keymap(cfg, ours, theirs),
        heads=HEADS,
        head_modules=HEAD_MODULES,
        tied={"XLNetLMHeadModel": tied},
        load=flattened,
        dump=lambda state: unflattened(state, cfg.n_head),
    )


# our state dict for any architecture from a transformers state dict of any of the family's classes, and back
from_hf_state_dict, to_hf_state_dict = conversions(layout)
