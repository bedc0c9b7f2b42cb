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

from seq2bert.models.bert.convert import config_from_hf as bert_config_from_hf
from seq2bert.models.bert.convert import config_to_hf, encoder_keymap
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear, tied_decoder
from seq2bert.models.roberta.config import RobertaConfig

BASE, MLM = "RobertaModel", "RobertaForMaskedLM"
HEADS: dict[str, KeyMap] = {
    BASE: [],
    MLM: [
        *linear("mlm.dense", "lm_head.dense"),
        *linear("mlm.norm", "lm_head.layer_norm"),
        ("mlm.decoder.bias", ("lm_head.bias",)),
    ],
    "RobertaForSequenceClassification": linear("classifier.dense", "classifier.dense")
    + linear("classifier.out_proj", "classifier.out_proj"),
    "RobertaForTokenClassification": linear("classifier", "classifier"),
    "RobertaForQuestionAnswering": linear("qa_outputs", "qa_outputs"),
    "RobertaForMultipleChoice": linear("classifier", "classifier"),
}
ARCHITECTURES = tuple(HEADS)
TIED = tied_decoder("roberta", "lm_head.decoder")  # the MLM decoder: the word embeddings

__all__ = ["ARCHITECTURES", "config_from_hf", "config_to_hf", "from_hf_state_dict", "to_hf_state_dict"]


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> RobertaConfig:
    """Our config from a transformers RobertaConfig dictionary."""
    return bert_config_from_hf(hf, source, RobertaConfig)


def layout(cfg: RobertaConfig) -> HeadLayout:
    return HeadLayout(
        base=BASE,
        prefix="roberta",
        encoder=lambda ours, theirs: encoder_keymap(cfg, ours, theirs),
        heads=HEADS,
        head_modules=("lm_head", "classifier", "qa_outputs"),
        dropped=(),  # a head model reads its own head, and no other
        pooler=lambda ours, theirs: linear(f"{ours}pooler", f"{theirs}pooler.dense"),
        pooled=frozenset((BASE, "RobertaForMultipleChoice")),
        tied={MLM: TIED},
        aliases=lambda theirs: {"lm_head.bias": "lm_head.decoder.bias"},  # either name of the one bias
    )


# our state dict for any RoBERTa class from a transformers state dict of any of them, and back (tied tensors
# written under each of their names)
from_hf_state_dict, to_hf_state_dict = conversions(layout)
