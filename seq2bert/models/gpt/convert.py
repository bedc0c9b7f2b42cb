"""Hugging Face GPT ("openai-gpt") and GPT-2 ("gpt2") checkpoints to and from ours: one declarative key map
(seq2bert/models/keymap.py) for both, and the config fields one to one.

    ours                                    transformers (under ``transformer.`` in a head model)
    embeddings.token / .position            tokens_embed / positions_embed (GPT-1), wte / wpe (GPT-2)
    layers.i.self_attn.qkv                  h.i.attn.c_attn      [W^Q W^K W^V] as one matrix, as ours
    layers.i.self_attn.out                  h.i.attn.c_proj
    layers.i.self_attn_sublayer.norm        h.i.ln_1             after the attention (GPT-1), before it (GPT-2)
    layers.i.feed_forward.w_1 / .w_2        h.i.mlp.c_fc / h.i.mlp.c_proj
    layers.i.ffn_sublayer.norm              h.i.ln_2
    final_norm                              ln_f                 (GPT-2)
    lm_head                                 lm_head              the token embedding (tied), stored under both names
    multiple_choice_head.summary, score, classifier   the same names

Our own ``…ForSimilarity`` (GPT-1's similarity head, heads.py) is written as ForSequenceClassification's keys
under its own architecture name.

transformers keeps the four projections of a block in Conv1D modules, whose weight is (in, out): the transpose
of nn.Linear's (out, in). Those weights (``CONV1D``) are transposed on the way in and out. Buffers of older
checkpoints — the causal mask ``attn.bias``, ``attn.masked_bias``, ``position_ids`` — carry nothing and are
skipped; any other key the map does not use is an error that names it. A bare model loads from a checkpoint
of any head (dropping it, as transformers does); a head model needs its head (unless a task starts anew).
"""

from __future__ import annotations

import re
from typing import Any

import torch

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models.gpt.config import GPT2Config, GPTConfig, OpenAIGPTConfig
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear
from seq2bert.objectives.classification import labels_from_hf

CONFIGS: dict[str, type[GPTConfig]] = {"openai-gpt": OpenAIGPTConfig, "gpt2": GPT2Config}
PREFIXES = {"openai-gpt": "OpenAIGPT", "gpt2": "GPT2"}  # transformers' class names: prefix + head
LAYER = {
    "self_attn.qkv": "attn.c_attn",
    "self_attn.out": "attn.c_proj",
    "self_attn_sublayer.norm": "ln_1",
    "feed_forward.w_1": "mlp.c_fc",
    "feed_forward.w_2": "mlp.c_proj",
    "ffn_sublayer.norm": "ln_2",
}
EMBEDDINGS = {"openai-gpt": ("tokens_embed", "positions_embed"), "gpt2": ("wte", "wpe")}
CONV1D = re.compile(r"(^|\.)h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
HEAD_MODULES = ("lm_head", "multiple_choice_head", "score", "classifier")
HEADS = ("Model", "LMHeadModel", "DoubleHeadsModel", "ForSequenceClassification", "ForTokenClassification")
# seq2bert's own head (GPT-1 Sect. 3.3, heads.py), no transformers class: ForSequenceClassification's weights
OWN_HEADS = ("ForSimilarity",)
TIED = ("LMHeadModel", "DoubleHeadsModel")  # the heads whose lm_head is the token embedding


def architectures(model_type: str) -> tuple[str, ...]:
    """The class names of ``model_type``: transformers' (GPT-1 has no token classifier), then our own."""
    heads = HEADS if model_type == "gpt2" else HEADS[:-1]
    return tuple(PREFIXES[model_type] + head for head in heads + OWN_HEADS)


def head_of(cfg: GPTConfig, architecture: str) -> str:
    """ "GPT2LMHeadModel" → "LMHeadModel"; an error for a name that is not one of the family's."""
    if architecture not in architectures(cfg.model_type):
        raise CheckpointError(
            f"architecture {architecture!r}: expected one of {', '.join(architectures(cfg.model_type))}"
        )
    return architecture[len(PREFIXES[cfg.model_type]) :]


# --- config.json
def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> GPTConfig:
    """Our config from a transformers OpenAIGPTConfig or GPT2Config dictionary; what we do not implement —
    cross-attention, an output layer not tied to the embeddings — is refused."""
    model_type = hf.get("model_type")
    if model_type not in CONFIGS:
        raise CheckpointError(f"{source}: model_type {model_type!r}, expected one of {', '.join(CONFIGS)}")
    if hf.get("add_cross_attention"):
        raise CheckpointError(f"{source}: GPT-2 with cross-attention (add_cross_attention) is not supported")
    if hf.get("tie_word_embeddings", True) is False:
        raise CheckpointError(f"{source}: an LM head not tied to the token embeddings is not supported")
    cls = CONFIGS[model_type]
    fields = {k: hf[k] for k in cls.__dataclass_fields__ if k in hf and k != "model_type"}
    try:
        fields.update(labels_from_hf(hf))  # JSON keys are strings
        return cls(**fields)
    except (ConfigError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{source}: {e}") from None


def config_to_hf(cfg: GPTConfig, architecture: str) -> dict[str, Any]:
    head_of(cfg, architecture)
    skip = ("model_type", "id2label")
    out = {"architectures": [architecture], "model_type": cfg.model_type}
    out.update({k: getattr(cfg, k) for k in type(cfg).__dataclass_fields__ if k not in skip})
    out["id2label"] = {str(i): label for i, label in cfg.id2label.items()}
    out["label2id"] = {label: i for i, label in cfg.id2label.items()}
    out["tie_word_embeddings"] = True
    return out


# --- weights
def base_keymap(cfg: GPTConfig, ours: str, theirs: str) -> KeyMap:
    """The bare model's keys, ours under prefix ``ours`` and theirs under ``theirs`` ("" or "transformer.")."""
    token, position = EMBEDDINGS[cfg.model_type]
    out: KeyMap = [
        (f"{ours}embeddings.token.weight", (f"{theirs}{token}.weight",)),
        (f"{ours}embeddings.position.weight", (f"{theirs}{position}.weight",)),
    ]
    for i in range(cfg.n_layer):
        for sub, part in LAYER.items():
            out += linear(f"{ours}layers.{i}.{sub}", f"{theirs}h.{i}.{part}")
    if cfg.model_type == "gpt2":
        out += linear(f"{ours}final_norm", f"{theirs}ln_f")
    return out


def head_keymap(cfg: GPTConfig, head: str) -> KeyMap:
    """The head's own keys (the tied lm_head is not one: it is the token embedding)."""
    if head == "DoubleHeadsModel" and cfg.summary_use_proj:
        return linear("multiple_choice_head.summary", "multiple_choice_head.summary")
    if head in ("ForSequenceClassification", "ForSimilarity"):
        return [("score.weight", ("score.weight",))]  # no bias
    if head == "ForTokenClassification":
        return linear("classifier", "classifier")
    return []


def transposed(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Conv1D weights (in, out) ↔ Linear weights (out, in): the same map both ways."""
    return {k: v.t() if CONV1D.search(k) else v for k, v in state.items()}


def layout(cfg: GPTConfig) -> HeadLayout:
    prefix, heads = PREFIXES[cfg.model_type], architectures(cfg.model_type)
    token = EMBEDDINGS[cfg.model_type][0]
    tied = (("lm_head.weight", "transformer.embeddings.token.weight", "lm_head.weight"),)
    return HeadLayout(
        base=prefix + "Model",
        prefix="transformer",
        encoder=lambda ours, theirs: base_keymap(cfg, ours, theirs),
        heads={name: head_keymap(cfg, name[len(prefix) :]) for name in heads},
        head_modules=HEAD_MODULES,
        dropped=("lm_head",),  # the tied copy of the token embedding; another head is an error
        tied={prefix + head: tied for head in TIED},
        buffers=(".attn.bias", ".attn.masked_bias", "position_ids"),  # the causal mask of older checkpoints
        load=transposed,
        dump=transposed,
        # the tied matrix under the head's name only (GPT-1's DoubleHeads: transformers ties it the other way)
        aliases=lambda theirs: {f"{theirs}{token}.weight": "lm_head.weight"},
    )


# our state dict for any architecture from a transformers state dict of any of the family's classes, and back
# (the tied lm_head written under its own name too); ``new_heads`` (a task starting): the task head may be
# missing — the result then lacks it and the caller initialises it — and every head of the checkpoint is dropped
from_hf_state_dict, to_hf_state_dict = conversions(layout)
