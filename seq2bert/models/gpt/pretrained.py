"""GPT-1 and GPT-2 in the registry: one ``Family`` record per Hugging Face model_type ("openai-gpt", "gpt2"),
each with transformers' class names, the heads the jobs ask for, and the conversions of convert.py.

Tokenizers are not read here yet: a directory loads its model, and its (byte-level) BPE files are left to
the tokenizer that reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from seq2bert.models.family import Family
from seq2bert.models.gpt.config import GPT2Config, GPTConfig, OpenAIGPTConfig
from seq2bert.models.gpt.convert import config_from_hf, config_to_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.gpt.heads import (
    GPT2DoubleHeadsModel,
    GPT2ForSequenceClassification,
    GPT2ForTokenClassification,
    GPT2LMHeadModel,
    OpenAIGPTDoubleHeadsModel,
    OpenAIGPTForSequenceClassification,
    OpenAIGPTLMHeadModel,
)
from seq2bert.models.gpt.model import GPT2Model, OpenAIGPTModel


def no_tokenizer(path: Path) -> Any:
    """The BPE tokenizer files of a GPT directory are not read by this family (yet)."""
    return None


def gpt_family(model_type: str, config_class: type[GPTConfig], classes: list[type[nn.Module]]) -> Family:
    architectures = {cls.__name__: cls for cls in classes}
    base, lm, _, sequence, *tokens = architectures
    heads = {"base": base, "causal_lm": lm, "sequence": sequence}
    if tokens:
        heads["tokens"] = tokens[0]
    return Family(
        model_type=model_type,
        config_class=config_class,
        architectures=architectures,
        heads=heads,
        kind="decoder",
        base_model_prefix="transformer",
        tokenizer="bpe",
        config_from_hf=lambda hf, source: config_from_hf(hf, source=source),
        config_to_hf=config_to_hf,
        state_from_hf=lambda hf, cfg, arch, source, new_heads: from_hf_state_dict(
            hf, cfg, arch, source, new_heads=new_heads
        ),
        state_to_hf=to_hf_state_dict,
        load_tokenizer=no_tokenizer,
        head_modules=("lm_head", "multiple_choice_head", "score", "classifier"),
    )


OPENAI_GPT = gpt_family(
    "openai-gpt",
    OpenAIGPTConfig,
    [OpenAIGPTModel, OpenAIGPTLMHeadModel, OpenAIGPTDoubleHeadsModel, OpenAIGPTForSequenceClassification],
)
GPT2 = gpt_family(
    "gpt2",
    GPT2Config,
    [
        GPT2Model,
        GPT2LMHeadModel,
        GPT2DoubleHeadsModel,
        GPT2ForSequenceClassification,
        GPT2ForTokenClassification,
    ],
)
