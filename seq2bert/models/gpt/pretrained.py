"""GPT-1 and GPT-2 in the registry: one ``Family`` record per Hugging Face model_type ("openai-gpt", "gpt2"),
each with transformers' class names (and our own similarity head), the heads the jobs ask for — pretraining
is the causal LM, fine-tuning GPT-1's (Sect. 3.3: sequence, similarity, multiple choice) — and the
conversions of convert.py.

Tokenizers: a directory's tokenizer.json (or vocab.json + merges.txt) is read as it is — the minimum that
fine-tuning needs (the tokens it adds travel in tokenizer.json); special-token settings are not read yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.family import Family
from seq2bert.models.gpt.config import GPT2Config, GPTConfig, OpenAIGPTConfig
from seq2bert.models.gpt.convert import config_from_hf, config_to_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.gpt.heads import (
    GPT2DoubleHeadsModel,
    GPT2ForSequenceClassification,
    GPT2ForSimilarity,
    GPT2ForTokenClassification,
    GPT2LMHeadModel,
    OpenAIGPTDoubleHeadsModel,
    OpenAIGPTForSequenceClassification,
    OpenAIGPTForSimilarity,
    OpenAIGPTLMHeadModel,
)
from seq2bert.models.gpt.model import GPT2Model, OpenAIGPTModel


def gpt_tokenizer(path: Path) -> Any:
    """The tokenizer of a GPT directory: its tokenizer.json, else its vocab.json + merges.txt (None: neither)."""
    if any((Path(path) / name).is_file() for name in ("tokenizer.json", "vocab.json")):
        return Tokenizer.from_file(path)
    return None


def gpt_family(
    model_type: str, config_class: type[GPTConfig], tokenizer: str, heads: dict[str, type[nn.Module]]
) -> Family:
    """``heads``: what a job needs → our class (the first: the bare model)."""
    architectures = {cls.__name__: cls for cls in heads.values()}
    return Family(
        model_type=model_type,
        config_class=config_class,
        architectures=architectures,
        heads={head: cls.__name__ for head, cls in heads.items()},
        kind="decoder",
        base_model_prefix="transformer",
        tokenizer=tokenizer,
        config_from_hf=lambda hf, source: config_from_hf(hf, source=source),
        config_to_hf=config_to_hf,
        state_from_hf=lambda hf, cfg, arch, source, new_heads: from_hf_state_dict(
            hf, cfg, arch, source, new_heads=new_heads
        ),
        state_to_hf=to_hf_state_dict,
        load_tokenizer=gpt_tokenizer,
        head_modules=("lm_head", "multiple_choice_head", "score", "classifier"),
        pretraining_objective="causal_lm",
    )


OPENAI_GPT = gpt_family(
    "openai-gpt",
    OpenAIGPTConfig,
    "gpt1-bpe",
    {
        "base": OpenAIGPTModel,
        "causal_lm": OpenAIGPTLMHeadModel,
        "pretraining": OpenAIGPTLMHeadModel,
        "choice": OpenAIGPTDoubleHeadsModel,
        "sequence": OpenAIGPTForSequenceClassification,
        "similarity": OpenAIGPTForSimilarity,
    },
)
GPT2 = gpt_family(
    "gpt2",
    GPT2Config,
    "bytelevel-bpe",
    {
        "base": GPT2Model,
        "causal_lm": GPT2LMHeadModel,
        "pretraining": GPT2LMHeadModel,
        "choice": GPT2DoubleHeadsModel,
        "sequence": GPT2ForSequenceClassification,
        "similarity": GPT2ForSimilarity,
        "tokens": GPT2ForTokenClassification,
    },
)
