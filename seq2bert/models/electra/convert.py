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

from seq2bert.models.bert.convert import config_from_hf as bert_config_from_hf
from seq2bert.models.bert.convert import config_to_hf as bert_config_to_hf
from seq2bert.models.bert.convert import encoder_keymap, tf_renamed
from seq2bert.models.electra.config import ElectraConfig
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear

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
    out = encoder_keymap(cfg, ours, theirs)
    if cfg.embedding_size != cfg.hidden_size:
        out += linear(f"{ours}embeddings.project", f"{theirs}embeddings_project")
    return out


def layout(cfg: ElectraConfig) -> HeadLayout:
    # a multiple-choice summary without projection has no weights
    summary = {} if cfg.summary_use_proj else {"ElectraForMultipleChoice": linear("classifier", "classifier")}
    return HeadLayout(
        base="ElectraModel",
        prefix="electra",
        encoder=lambda ours, theirs: electra_keymap(cfg, ours, theirs),
        heads={**HEADS, **summary},
        head_modules=HEAD_MODULES,
        tied={
            "ElectraForMaskedLM": (
                (
                    "mlm.decoder.weight",
                    "electra.embeddings.word_embeddings.weight",
                    "generator_lm_head.weight",
                ),
            )
        },
        load=tf_renamed,
    )


# our state dict for any ELECTRA class from a transformers state dict of any of them, and back (the tied
# decoder written under its own name too); ``new_heads`` (a task starting): the head is loaded only when the
# checkpoint has it, and the result otherwise lacks it (the caller initialises it)
from_hf_state_dict, to_hf_state_dict = conversions(layout)
