"""ALBERT in the registry: its architectures (transformers' class names), the heads the jobs ask for and the
Hugging Face conversions of convert.py, as one ``Family`` (seq2bert/models/family.py).

ALBERT's vocabulary is a SentencePiece model (Sect. 4.1: "we tokenize using SentencePiece … a vocabulary
size of 30,000"); a published directory carries it as tokenizer.json (and spiece.model), which the generic
reader loads. Pretraining trains a SentencePiece unigram vocabulary with ALBERT's specials and normalisation
(tokenizer.py), and a checkpoint carries transformers' AlbertTokenizer settings beside it.
"""

from __future__ import annotations

from seq2bert.models.albert.config import AlbertConfig, albert_mini
from seq2bert.models.albert.convert import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    layout,
    to_hf_state_dict,
)
from seq2bert.models.albert.model import TASK_CLASSES, AlbertForMaskedLM, AlbertForPreTraining, AlbertModel
from seq2bert.models.albert.tokenizer import save_tokenizer, train_tokenizer
from seq2bert.models.family import Family, PretrainingTerms
from seq2bert.models.keymap import builder, named

CLASSES = named(AlbertModel, AlbertForPreTraining, AlbertForMaskedLM, *TASK_CLASSES.values())
build_albert = builder(CLASSES, layout)  # a bare AlbertModel has a pooler only if its weights do


FAMILY = Family(
    model_type="albert",
    config_class=AlbertConfig,
    architectures=CLASSES,
    heads={
        "base": "AlbertModel",
        "pretraining": "AlbertForPreTraining",
        "masked_lm": "AlbertForMaskedLM",
        "sequence": "AlbertForSequenceClassification",
        "tokens": "AlbertForTokenClassification",
        "qa": "AlbertForQuestionAnswering",
        "choice": "AlbertForMultipleChoice",
    },
    kind="encoder",
    base_model_prefix="albert",
    tokenizer="sentencepiece",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    build=build_albert,
    head_modules=("classifier", "mlm", "sop", "qa_outputs", "predictions", "sop_classifier"),
    # the MLM head (and the last layer) only at the predicted positions: the same loss for far less work
    pretraining_options={"sparse_prediction": True},
    # MLM + SOP (Lan et al. Sect. 3.1)
    pretraining_terms=lambda out: PretrainingTerms(
        out.mlm_loss, out.prediction_logits, out.sop_loss, out.sop_logits
    ),
    presets={"mini": albert_mini},
    sentence_pairs="sentence_order",  # SOP (Sect. 3.1)
    pretraining_data={"masking_strategy": "ngram"},  # n-gram masking, n ≤ 3 (Sect. 4.1)
    save_tokenizer=save_tokenizer,
    train_tokenizer=train_tokenizer,  # a SentencePiece unigram vocabulary (Sect. 4.1)
)
