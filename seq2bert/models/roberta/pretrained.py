"""RoBERTa in the registry: transformers' class names, the heads the jobs ask for and the conversions of
convert.py, as one ``Family`` record.

Its checkpoints carry a byte-level BPE (GPT-2's, Sect. 4.4) with the specials <s> <pad> </s> <unk> <mask>
(tokenizer.py; ``train_tokenizer`` learns one when a pretraining run is given none). Its "pretraining" head
is RobertaForMaskedLM — RoBERTa drops NSP (Sect. 4.2) — trained on FULL-SENTENCES instances (data/instances.py)
with dynamic masking (Sect. 4.1) unless the data section says otherwise; large batches (Sect. 4.3) are
train.accumulate micro-batches a step.
"""

from __future__ import annotations

from torch import nn

from seq2bert.models.family import Family, masked_lm_terms
from seq2bert.models.keymap import builder, named
from seq2bert.models.roberta.config import RobertaConfig, roberta_mini
from seq2bert.models.roberta.convert import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    layout,
    to_hf_state_dict,
)
from seq2bert.models.roberta.model import (
    RobertaForMaskedLM,
    RobertaForMultipleChoice,
    RobertaForQuestionAnswering,
    RobertaForSequenceClassification,
    RobertaForTokenClassification,
    RobertaModel,
)
from seq2bert.models.roberta.tokenizer import load_tokenizer, save_tokenizer, train_tokenizer

HEADS: dict[str, type[nn.Module]] = {
    "base": RobertaModel,
    "masked_lm": RobertaForMaskedLM,
    "sequence": RobertaForSequenceClassification,
    "tokens": RobertaForTokenClassification,
    "qa": RobertaForQuestionAnswering,
    "choice": RobertaForMultipleChoice,
}
CLASSES = named(*HEADS.values())
build_roberta = builder(CLASSES, layout)  # a bare RobertaModel has a pooler only if its weights do

FAMILY = Family(
    model_type="roberta",
    config_class=RobertaConfig,
    architectures=CLASSES,
    heads={**{head: cls.__name__ for head, cls in HEADS.items()}, "pretraining": RobertaForMaskedLM.__name__},
    kind="encoder",
    base_model_prefix="roberta",
    tokenizer="bytelevel-bpe",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    build=build_roberta,
    load_tokenizer=load_tokenizer,
    save_tokenizer=save_tokenizer,
    head_modules=("classifier", "mlm", "qa_outputs"),  # our names of the heads
    pretraining_options={"sparse_prediction": True},  # the MLM head at the masked positions only
    pretraining_data={"sentence_task": "full_sentences", "masking": "dynamic"},
    pretraining_terms=masked_lm_terms,  # the MLM head alone (no NSP, Sect. 4.2)
    presets={"mini": roberta_mini},
    train_tokenizer=train_tokenizer,
)
