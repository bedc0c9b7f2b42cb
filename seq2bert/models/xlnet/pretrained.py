"""XLNet in the registry: transformers' class names, the heads the jobs ask for and the conversions of
convert.py, as one ``Family`` record (seq2bert/models/family.py).

Its "pretraining" head is XLNetLMHeadModel, trained on the permutation language model (Sect. 2.2–2.3:
``pretraining_objective="permutation_lm"``, recipes/pretrain_permutation.py) over single documents (no
sentence task: XLNet drops NSP, Sect. 3.1's ablation). Its checkpoints carry a SentencePiece unigram vocabulary
with XLNet's specials and template (tokenizer.py), which a pretraining run trains when it is given none.
"""

from __future__ import annotations

from seq2bert.models.family import Family
from seq2bert.models.keymap import named
from seq2bert.models.xlnet.config import XLNetConfig, xlnet_mini
from seq2bert.models.xlnet.convert import config_from_hf, config_to_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.xlnet.heads import (
    XLNetForMultipleChoice,
    XLNetForQuestionAnsweringSimple,
    XLNetForSequenceClassification,
    XLNetForTokenClassification,
)
from seq2bert.models.xlnet.model import XLNetLMHeadModel, XLNetModel
from seq2bert.models.xlnet.tokenizer import save_tokenizer, train_tokenizer

HEADS = {
    "base": XLNetModel,
    "pretraining": XLNetLMHeadModel,
    "sequence": XLNetForSequenceClassification,
    "tokens": XLNetForTokenClassification,
    "qa": XLNetForQuestionAnsweringSimple,
    "choice": XLNetForMultipleChoice,
}

FAMILY = Family(
    model_type="xlnet",
    config_class=XLNetConfig,
    architectures=named(*HEADS.values()),
    heads={head: cls.__name__ for head, cls in HEADS.items()},
    kind="encoder",
    base_model_prefix="transformer",
    tokenizer="sentencepiece",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    head_modules=("lm_loss", "sequence_summary", "logits_proj", "classifier", "qa_outputs"),
    pretraining_objective="permutation_lm",
    sentence_pairs="none",
    presets={"mini": xlnet_mini},
    save_tokenizer=save_tokenizer,
    train_tokenizer=train_tokenizer,
)
