"""GPT-1 and GPT-2 in the registry: one ``Family`` record per Hugging Face model_type ("openai-gpt", "gpt2"),
each with transformers' class names (and our own similarity head), the heads the jobs ask for — pretraining
is the causal LM, fine-tuning GPT-1's (Sect. 3.3: sequence, similarity, multiple choice) — the conversions of
convert.py, and the tokenizer files of a checkpoint directory.

A directory carries its tokenizer as GPT's were published and as transformers reads them: ``vocab.json`` +
``merges.txt`` (GPT-2's byte-level BPE, GPT-1's BPE with ``</w>``; seq2bert/data/gpt_bpe.py), and/or a
``tokenizer.json``, which is read first when there is one (fine-tuning's added tokens travel in it). Saving
writes all three and a ``tokenizer_config.json`` naming transformers' class (``GPT2Tokenizer`` /
``OpenAIGPTTokenizer``), its special tokens and the context (``model_max_length`` = n_positions), so that
``AutoTokenizer`` reads the folder as we do. A BPE with more tokens than the model's ``vocab_size`` is not
this model's: a one-line CheckpointError naming the file (a smaller one is fine: a vocabulary may be
padded)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import nn

from seq2bert.data import gpt_bpe
from seq2bert.data.tokenization import Tokenizer
from seq2bert.data.tokenizer_files import save_with_config
from seq2bert.errors import CheckpointError
from seq2bert.io import read_json
from seq2bert.models.family import Family
from seq2bert.models.gpt.config import GPT2Config, GPTConfig, OpenAIGPTConfig, gpt1_mini, gpt2_mini
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

TOKENIZER_FILES = ("tokenizer.json", gpt_bpe.VOCAB_FILE)  # in the order they are read
TOKENIZER_CLASSES = {"gpt2": "GPT2Tokenizer", "openai-gpt": "OpenAIGPTTokenizer"}


def load_tokenizer(path: Path) -> Tokenizer | None:
    """The tokenizer of a GPT directory — tokenizer.json, else vocab.json + merges.txt — or None when it has
    neither; checked against the model's vocab_size (config.json)."""
    path = Path(path)
    source = next((path / name for name in TOKENIZER_FILES if (path / name).is_file()), None)
    if source is None:
        return None
    tokenizer = Tokenizer.from_file(source)
    vocab_size = read_json(path / "config.json").get("vocab_size")
    # the BPE's own tokens: a special token absent from them is given the next id, as transformers gives it
    # (GPT-1's <unk>, which its published vocab.json lacks and its embedding has no row for)
    n = tokenizer.backend.get_vocab_size(with_added_tokens=False)
    if isinstance(vocab_size, int) and n > vocab_size:
        raise CheckpointError(
            f"{source}: {n} tokens, more than the model's vocab_size {vocab_size} (config.json): "
            "not this model's tokenizer"
        )
    return tokenizer


def save_tokenizer(tokenizer: Any, directory: Path, config: GPTConfig) -> None:
    """tokenizer.json, vocab.json + merges.txt (Tokenizer.save) and the tokenizer_config.json of transformers'
    GPT2Tokenizer / OpenAIGPTTokenizer."""
    specials: dict[str, str] = {}
    settings: dict[str, Any] = {}
    if tokenizer.token_to_id(gpt_bpe.ENDOFTEXT) is not None:  # GPT-2: begins, ends, pads and is unknown
        specials = dict.fromkeys(("bos", "eos", "unk"), gpt_bpe.ENDOFTEXT)
        settings["add_prefix_space"] = False
    elif tokenizer.token_to_id(gpt_bpe.UNK) is not None:
        specials = {"unk": gpt_bpe.UNK}
    settings["model_max_length"] = config.n_positions
    save_with_config(tokenizer, directory, TOKENIZER_CLASSES[config.model_type], specials, **settings)


def gpt_family(
    model_type: str,
    config_class: type[GPTConfig],
    tokenizer: str,
    heads: dict[str, type[nn.Module]],
    mini: Callable[[], GPTConfig],
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
        config_from_hf=config_from_hf,
        config_to_hf=config_to_hf,
        state_from_hf=from_hf_state_dict,
        state_to_hf=to_hf_state_dict,
        load_tokenizer=load_tokenizer,
        save_tokenizer=save_tokenizer,
        head_modules=("lm_head", "multiple_choice_head", "score", "classifier"),
        pretraining_objective="causal_lm",
        presets={"mini": mini},
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
    gpt1_mini,
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
    gpt2_mini,
)
