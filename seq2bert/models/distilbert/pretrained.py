"""DistilBERT in the registry: transformers' class names, the heads the jobs ask for and the conversions of
convert.py, as one ``Family`` record. Its checkpoints carry BERT's WordPiece vocabulary (vocab.txt); its
masked LM reads single segments (no NSP: Sect. 3 trains on the MLM and distillation losses only)."""

from __future__ import annotations

from seq2bert.models.distilbert.config import DistilBertConfig
from seq2bert.models.distilbert.convert import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    to_hf_state_dict,
)
from seq2bert.models.distilbert.model import TASK_CLASSES, DistilBertForMaskedLM, DistilBertModel
from seq2bert.models.family import Family
from seq2bert.models.keymap import named

CLASSES = named(DistilBertModel, DistilBertForMaskedLM, *TASK_CLASSES.values())

FAMILY = Family(
    model_type="distilbert",
    config_class=DistilBertConfig,
    architectures=CLASSES,
    heads={
        "base": "DistilBertModel",
        "masked_lm": "DistilBertForMaskedLM",
        "sequence": "DistilBertForSequenceClassification",
        "tokens": "DistilBertForTokenClassification",
        "qa": "DistilBertForQuestionAnswering",
        "choice": "DistilBertForMultipleChoice",
    },
    kind="encoder",
    base_model_prefix="distilbert",
    tokenizer="wordpiece",
    config_from_hf=lambda hf, source: config_from_hf(hf, source=source),
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    head_modules=("mlm", "pre_classifier", "classifier", "qa_outputs"),  # our names of the heads
    sentence_pairs="none",
)
