"""BERT in the registry: its architectures, heads and Hugging Face conversions as one ``Family``
(seq2bert/models/family.py), and the BERT-named helpers written before the registry (load_bert, save_bert,
init_task_model, …), which are the generic ones of seq2bert/models/pretrained.py bound to this family."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from torch import nn

from seq2bert.models import pretrained
from seq2bert.models.bert.config import BertConfig, bert_mini
from seq2bert.models.bert.convert import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    layout,
    to_hf_state_dict,
)
from seq2bert.models.bert.model import BertForMaskedLM, BertForPreTraining, BertLMHeadModel, BertModel
from seq2bert.models.bert.tasks import TASK_CLASSES
from seq2bert.models.family import Family
from seq2bert.models.keymap import builder, named

CLASSES = named(BertModel, BertForPreTraining, BertForMaskedLM, BertLMHeadModel, *TASK_CLASSES.values())
_build = builder(CLASSES, layout)  # a bare BertModel has a pooler only if its weights do


def build_bert(cfg: BertConfig, architecture: str, *, pooler: bool = True) -> nn.Module:
    return _build(cfg, architecture, None if pooler else {})


FAMILY = Family(
    model_type="bert",
    config_class=BertConfig,
    architectures=CLASSES,
    heads={
        "base": "BertModel",
        "pretraining": "BertForPreTraining",
        "masked_lm": "BertForMaskedLM",
        "causal_lm": "BertLMHeadModel",  # left to right with is_decoder (the paper's LTR ablation)
        "sequence": "BertForSequenceClassification",
        "tokens": "BertForTokenClassification",
        "qa": "BertForQuestionAnswering",
        "choice": "BertForMultipleChoice",
    },
    kind="encoder",
    base_model_prefix="bert",
    tokenizer="wordpiece",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    build=_build,
    head_modules=("classifier", "cls", "mlm", "nsp", "qa_outputs"),
    # the MLM head (and the last layer) only at the predicted positions: the same loss for far less work
    pretraining_options={"sparse_prediction": True},
    presets={"mini": bert_mini},
)


architecture_of = FAMILY.architecture_of
load_bert = partial(pretrained.load_hf, FAMILY)
init_task_model = partial(pretrained.init_task_model, FAMILY)
write_bert_files = partial(pretrained.write_hf_files, FAMILY)


def save_bert(model: nn.Module, path: str | Path, tokenizer=None) -> None:
    """Write ``model`` (and ``tokenizer``) as a transformers BERT directory, atomically."""
    pretrained.save_hf(FAMILY, model, path, tokenizer)
