"""BERT in the registry: its architectures, heads and Hugging Face conversions as one ``Family``
(seq2bert/models/family.py), and the BERT-named helpers written before the registry (load_bert, save_bert,
init_task_model, …), which are the generic ones of seq2bert/models/pretrained.py bound to this family."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from torch import nn

from seq2bert.errors import CheckpointError
from seq2bert.models import pretrained
from seq2bert.models.bert.config import BertConfig, bert_mini
from seq2bert.models.bert.convert import (
    ARCHITECTURES,
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    to_hf_state_dict,
)
from seq2bert.models.bert.model import BertForMaskedLM, BertForPreTraining, BertLMHeadModel, BertModel
from seq2bert.models.bert.tasks import TASK_CLASSES
from seq2bert.models.family import Family

CLASSES: dict[str, type[nn.Module]] = {
    "BertModel": BertModel,
    "BertForPreTraining": BertForPreTraining,
    "BertForMaskedLM": BertForMaskedLM,
    "BertLMHeadModel": BertLMHeadModel,
    **TASK_CLASSES,
}


def build_bert(cfg: BertConfig, architecture: str, *, pooler: bool = True) -> nn.Module:
    if architecture not in CLASSES:
        raise CheckpointError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")
    if architecture == "BertModel":
        return BertModel(cfg, add_pooling_layer=pooler)
    return CLASSES[architecture](cfg)


def _build(cfg: BertConfig, architecture: str, weights: dict | None) -> nn.Module:
    """Sentence encoders often ship without a pooler: a bare BertModel has one only if its weights do."""
    pooler = weights is None or any(k.endswith("pooler.dense.weight") for k in weights)
    return build_bert(cfg, architecture, pooler=pooler)


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
    config_from_hf=lambda hf, source: config_from_hf(hf, source=source),
    config_to_hf=config_to_hf,
    state_from_hf=lambda hf, cfg, arch, source, new_heads: from_hf_state_dict(
        hf, cfg, arch, source, new_heads=new_heads
    ),
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
