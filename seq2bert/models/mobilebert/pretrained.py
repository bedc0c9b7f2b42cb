"""MobileBERT in the registry: transformers' class names, the heads the jobs ask for and the conversions of
convert.py, as one ``Family`` record. Its checkpoints carry BERT's WordPiece vocabulary (vocab.txt); its
pretraining heads are BERT's (masked LM and next sentence prediction)."""

from __future__ import annotations

from seq2bert.models.family import Family
from seq2bert.models.keymap import builder, named
from seq2bert.models.mobilebert.config import MobileBertConfig
from seq2bert.models.mobilebert.convert import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    layout,
    to_hf_state_dict,
)
from seq2bert.models.mobilebert.model import (
    TASK_CLASSES,
    MobileBertForMaskedLM,
    MobileBertForPreTraining,
    MobileBertModel,
)

CLASSES = named(MobileBertModel, MobileBertForPreTraining, MobileBertForMaskedLM, *TASK_CLASSES.values())
build_mobilebert = builder(CLASSES, layout)  # a bare MobileBertModel has a pooler only if its weights do


FAMILY = Family(
    model_type="mobilebert",
    config_class=MobileBertConfig,
    architectures=CLASSES,
    heads={
        "base": "MobileBertModel",
        "masked_lm": "MobileBertForMaskedLM",
        "sequence": "MobileBertForSequenceClassification",
        "tokens": "MobileBertForTokenClassification",
        "qa": "MobileBertForQuestionAnswering",
        "choice": "MobileBertForMultipleChoice",
    },
    kind="encoder",
    base_model_prefix="mobilebert",
    tokenizer="wordpiece",
    config_from_hf=lambda hf, source: config_from_hf(hf, source=source),
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    build=build_mobilebert,
    head_modules=("mlm", "nsp", "classifier", "qa_outputs"),  # our names of the heads
)
