"""Hugging Face RoBERTa checkpoints to and from ours: BERT's encoder key map (models/bert/convert.py) under
``roberta.``, and RoBERTa's heads.

    ours                                    transformers
    roberta.embeddings …, roberta.layers …  roberta.embeddings …, roberta.encoder.layer …  (BERT's map)
    roberta.pooler                          roberta.pooler.dense     (RobertaModel, RobertaForMultipleChoice)
    mlm.dense, mlm.norm                     lm_head.dense, lm_head.layer_norm
    mlm.decoder.bias                        lm_head.bias             (= lm_head.decoder.bias, tied there)
    mlm.decoder.weight                      the word embeddings      (lm_head.decoder.weight, tied)
    classifier.dense, classifier.out_proj   the same                 (RobertaForSequenceClassification)
    classifier, qa_outputs                  the same                 (token classification, multiple choice, QA)

A bare model loads from a checkpoint of any head (dropping it, as transformers does); a head model needs its
head, unless a task starts anew (``new_heads``). Buffers (position_ids, token_type_ids) carry nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from seq2bert.errors import CheckpointError
from seq2bert.models.bert.convert import config_from_hf as bert_config_from_hf
from seq2bert.models.bert.convert import config_to_hf, encoder_keymap
from seq2bert.models.keymap import KeyMap, Loader, linear, save
from seq2bert.models.roberta.config import RobertaConfig

BASE, MLM = "RobertaModel", "RobertaForMaskedLM"
# each task head: its modules on top of the encoder, and whether it reads the pooler
TASK_HEADS = {
    "RobertaForSequenceClassification": (("classifier.dense", "classifier.out_proj"), False),
    "RobertaForTokenClassification": (("classifier",), False),
    "RobertaForQuestionAnswering": (("qa_outputs",), False),
    "RobertaForMultipleChoice": (("classifier",), True),
}
ARCHITECTURES = (BASE, MLM, *TASK_HEADS)
HEAD_MODULES = ("lm_head", "classifier", "qa_outputs")
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")

__all__ = ["ARCHITECTURES", "config_from_hf", "config_to_hf", "from_hf_state_dict", "to_hf_state_dict"]


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> RobertaConfig:
    """Our config from a transformers RobertaConfig dictionary."""
    return bert_config_from_hf(hf, source, RobertaConfig)


def has_pooler(architecture: str) -> bool:
    return architecture == BASE or TASK_HEADS.get(architecture, ((), False))[1]


def head_keymap(architecture: str) -> KeyMap:
    """The head's own keys (the MLM decoder's are the tied word embeddings and lm_head.bias)."""
    if architecture == MLM:
        return [*linear("mlm.dense", "lm_head.dense"), *linear("mlm.norm", "lm_head.layer_norm")]
    modules = TASK_HEADS.get(architecture, ((), False))[0]
    return [pair for m in modules for pair in linear(m, m)]


def _check(architecture: str) -> None:
    if architecture not in ARCHITECTURES:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")


def from_hf_state_dict(
    hf: dict[str, torch.Tensor],
    cfg: RobertaConfig,
    architecture: str,
    source: str = "",
    *,
    new_heads: bool = False,
) -> dict[str, torch.Tensor]:
    """Our state dict for ``architecture`` from a transformers state dict of any RoBERTa class.

    ``new_heads`` (a fine-tuning run starting): the task head and pooler may be missing — the result then
    lacks them and the caller initialises them — and every head of the checkpoint is dropped."""
    _check(architecture)
    theirs = "roberta." if any(k.startswith("roberta.") for k in hf) else ""
    ours = "" if architecture == BASE else "roberta."
    pooler = has_pooler(architecture)
    if architecture == BASE or new_heads:
        pooler = pooler and f"{theirs}pooler.dense.weight" in hf  # encoders often ship without a pooler
    taken = Loader(hf, source or "checkpoint")
    out = taken.load(encoder_keymap(cfg, ours, theirs, pooler))
    own = head_keymap(architecture)
    if own and not (new_heads and any(t not in hf for _, keys in own for t in keys)):
        out.update(taken.load(own))
    if architecture == MLM:
        out["mlm.decoder.bias"] = taken.first("lm_head.bias", "lm_head.decoder.bias")
        out["mlm.decoder.weight"] = out["roberta.embeddings.word_embeddings.weight"]  # tied
        taken.ignore("lm_head.decoder.weight")
    taken.ignore(*[k for k in hf if k.endswith(BUFFERS)])
    if not pooler:
        taken.ignore(*[k for k in hf if ".pooler." in f".{k}"])
    if architecture == BASE or new_heads:  # a bare model drops any head; a new task every head
        taken.ignore(*[k for k in hf if k.split(".")[0] in HEAD_MODULES])
    taken.check_all_used()
    return out


def to_hf_state_dict(
    ours: dict[str, torch.Tensor], cfg: RobertaConfig, architecture: str
) -> dict[str, torch.Tensor]:
    """transformers' state dict of our model (tied tensors written under each of their names)."""
    _check(architecture)
    prefix = "" if architecture == BASE else "roberta."
    out = save(ours, encoder_keymap(cfg, prefix, prefix, f"{prefix}pooler.weight" in ours))
    out.update(save(ours, head_keymap(architecture)))
    if architecture == MLM:
        out["lm_head.decoder.weight"] = ours["mlm.decoder.weight"]
        out["lm_head.bias"] = out["lm_head.decoder.bias"] = ours["mlm.decoder.bias"]
    return out
