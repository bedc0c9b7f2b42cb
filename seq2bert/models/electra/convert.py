"""Hugging Face ELECTRA checkpoints to and from ours: BERT's encoder key map (models/bert/convert.py) plus
ELECTRA's projection and heads, declaratively (seq2bert/models/keymap.py).

    ours                                  transformers (under ``electra.`` in a head model)
    embeddings.*, layers.i.*              embeddings.*, encoder.layer.i.*       as BERT's
    embeddings.project                    embeddings_project                    E → H, when E ≠ H
    rtd.dense / rtd.dense_prediction      discriminator_predictions.dense / .dense_prediction
    mlm.dense / mlm.norm / mlm.decoder    generator_predictions.dense / .LayerNorm / generator_lm_head
                                          (its weight: the word embeddings, tied; written under both names)
    classifier.*, qa_outputs, sequence_summary.summary      the same names

A bare ElectraModel loads from a checkpoint of any head (dropping it, as transformers does); a head model
needs its head unless a task starts anew (``new_heads``); keys nobody knows are named in an error.
"""

from __future__ import annotations

from typing import Any

import torch

from seq2bert.errors import CheckpointError
from seq2bert.models.bert.convert import config_from_hf as bert_config_from_hf
from seq2bert.models.bert.convert import config_to_hf as bert_config_to_hf
from seq2bert.models.bert.convert import encoder_keymap, tf_renamed
from seq2bert.models.electra.config import ElectraConfig
from seq2bert.models.keymap import KeyMap, Loader, linear, save

HEADS: dict[str, KeyMap] = {
    "ElectraModel": [],
    "ElectraForPreTraining": [
        *linear("rtd.dense", "discriminator_predictions.dense"),
        *linear("rtd.dense_prediction", "discriminator_predictions.dense_prediction"),
    ],
    "ElectraForMaskedLM": [
        *linear("mlm.dense", "generator_predictions.dense"),
        *linear("mlm.norm", "generator_predictions.LayerNorm"),
        ("mlm.decoder.bias", ("generator_lm_head.bias",)),
    ],
    "ElectraForSequenceClassification": [
        *linear("classifier.dense", "classifier.dense"),
        *linear("classifier.out_proj", "classifier.out_proj"),
    ],
    "ElectraForTokenClassification": linear("classifier", "classifier"),
    "ElectraForQuestionAnswering": linear("qa_outputs", "qa_outputs"),
    "ElectraForMultipleChoice": [
        *linear("sequence_summary.summary", "sequence_summary.summary"),
        *linear("classifier", "classifier"),
    ],
}
ARCHITECTURES = tuple(HEADS)
# the top-level modules of their heads: a checkpoint's head that the model asked for has none is dropped
HEAD_MODULES = (
    "discriminator_predictions",
    "generator_predictions",
    "generator_lm_head",
    "classifier",
    "qa_outputs",
    "sequence_summary",
)


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> ElectraConfig:
    """Our config from a transformers ElectraConfig dictionary: BERT's reading, with ELECTRA's fields."""
    return bert_config_from_hf(hf, source, ElectraConfig)


config_to_hf = bert_config_to_hf  # every field of the dataclass, under transformers' names


def electra_keymap(cfg: ElectraConfig, ours: str, theirs: str) -> KeyMap:
    """ElectraModel's keys, ours under prefix ``ours`` and theirs under ``theirs`` ("" or "electra.")."""
    out = encoder_keymap(cfg, ours, theirs, pooler=False)
    if cfg.embedding_size != cfg.hidden_size:
        out += linear(f"{ours}embeddings.project", f"{theirs}embeddings_project")
    return out


def head_keymap(cfg: ElectraConfig, architecture: str) -> KeyMap:
    """The head of ``architecture`` (a multiple-choice summary without projection has no weights)."""
    if architecture not in HEADS:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")
    if architecture == "ElectraForMultipleChoice" and not cfg.summary_use_proj:
        return linear("classifier", "classifier")
    return HEADS[architecture]


def from_hf_state_dict(
    hf: dict[str, torch.Tensor],
    cfg: ElectraConfig,
    architecture: str,
    source: str = "",
    *,
    new_heads: bool = False,
) -> dict[str, torch.Tensor]:
    """Our state dict for ``architecture`` from a transformers state dict of any ELECTRA class.
    ``new_heads`` (a task starting): the head is loaded only when the checkpoint has it, and the result
    otherwise lacks it (the caller initialises it)."""
    head = head_keymap(cfg, architecture)
    hf = tf_renamed(hf)
    theirs = "electra." if any(k.startswith("electra.") for k in hf) else ""
    ours = "" if architecture == "ElectraModel" else "electra."
    taken = Loader(hf, source or "checkpoint")
    out = taken.load(electra_keymap(cfg, ours, theirs))
    if not new_heads or all(k in hf for _, keys in head for k in keys):
        out.update(taken.load(head))
    if architecture == "ElectraForMaskedLM":
        out["mlm.decoder.weight"] = out["electra.embeddings.word_embeddings.weight"]  # tied
        taken.ignore("generator_lm_head.weight")
    taken.ignore(f"{theirs}embeddings.position_ids", f"{theirs}embeddings.token_type_ids")
    taken.ignore(*[k for k in hf if k.split(".")[0] in HEAD_MODULES])  # another class's head
    taken.check_all_used()
    return out


def to_hf_state_dict(ours: dict[str, torch.Tensor], cfg: ElectraConfig, architecture: str) -> dict:
    """transformers' state dict of our model (the tied decoder written under its own name too)."""
    prefix = "" if architecture == "ElectraModel" else "electra."
    out = save(ours, electra_keymap(cfg, prefix, prefix) + head_keymap(cfg, architecture))
    if architecture == "ElectraForMaskedLM":
        out["generator_lm_head.weight"] = ours["mlm.decoder.weight"]
    return out
