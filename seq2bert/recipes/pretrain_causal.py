"""The causal LM's held-out measures and samples for `seq2bert pretrain` (recipes/pretrain.py): perplexity per
token and per word over blocks of the held-out documents, and the continuations a run ends with; and which
runs train one (``left_to_right``): a GPT's, and BERT's "LTR & No NSP" ablation (model.is_decoder)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from seq2bert.data.lm import Blocks, TokenStream
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.models.family import Family
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.training.config import check_seed

log = logging.getLogger("seq2bert.recipes.pretrain")  # the samples are the pretraining run's log lines


@dataclass
class SampleConfig:
    """What a causal LM writes at the end of its pretraining: for each prompt (read as the start of a document,
    after the end-of-text token) a greedy continuation and one sampled at ``temperature`` from the ``top_k``
    most probable tokens (seeded), ``max_new_tokens`` each (0: none)."""

    prompts: list[str] = field(default_factory=lambda: ["The", "It was a", "She said"])
    max_new_tokens: int = 30
    temperature: float = 0.8
    top_k: int = 40
    seed: int = 0

    def validate(self) -> None:
        if self.max_new_tokens < 0 or self.top_k < 0:
            raise ConfigError("max_new_tokens and top_k must be >= 0")
        if not self.temperature > 0:
            raise ConfigError(f"temperature: must be > 0, got {self.temperature}")
        check_seed("seed", self.seed)

    def __post_init__(self) -> None:
        self.validate()


def left_to_right(family: Family, model: Any, sentence_task: str) -> str | None:
    """The head a causal-LM run trains ("causal_lm", or the family's "pretraining" head when that is its
    objective), None for another objective. BERT with ``model.is_decoder`` is Devlin et al.'s "LTR & No NSP"
    (Sect. 5.1, Table 5): BertLMHeadModel on the GPT's blocks; it has no sentence task."""
    if not getattr(model, "is_decoder", False):
        return "pretraining" if family.pretraining_objective == "causal_lm" else None
    if "causal_lm" not in family.heads:
        raise ConfigError(
            f"model.is_decoder: {family.model_type} has no left-to-right LM to pretrain (bert has)"
        )
    if sentence_task not in ("auto", "none"):
        raise ConfigError(
            f"data.sentence_task: {sentence_task} needs a bidirectional model (model.is_decoder)"
        )
    return "causal_lm"


@torch.no_grad()
def evaluate_causal_lm(
    model, blocks: Blocks, indices: list[int], device, words_per_token: float | None = None
) -> dict:
    """Held-out perplexity exp(−(1/N) Σ_t log p(w_t | w_<t)) over the N tokens the blocks ``indices`` predict
    (each block is its own context: its first token is not predicted), the next-token accuracy, and — given the
    text's whitespace ``words_per_token`` — the perplexity per word, exp(NLL / words), comparable across
    vocabularies. ``loss`` is the mean NLL, the training objective."""
    nll = correct = 0.0
    n = 0
    for start in range(0, len(indices), blocks.batch_size):
        batch = {
            k: v.to(device) for k, v in blocks.collate(indices[start : start + blocks.batch_size]).items()
        }
        logits = model(batch["input_ids"], batch["attention_mask"]).logits[:, :-1].float()  # (B, T − 1, V)
        labels = batch["labels"][:, 1:]  # (B, T − 1): the next tokens
        real = labels.ne(IGNORE_INDEX)
        nll += float(F.cross_entropy(logits[real], labels[real], reduction="sum"))
        correct += float((logits[real].argmax(-1) == labels[real]).sum())
        n += int(real.sum())
    loss = nll / max(n, 1)
    out = {
        "loss": loss,
        "perplexity": math.exp(min(loss, 50.0)),
        "accuracy": 100.0 * correct / max(n, 1),
        "tokens": n,
    }
    if words_per_token:
        out["word_perplexity"] = math.exp(min(nll / max(n * words_per_token, 1e-9), 50.0))
    return out


def words_per_token(tok: Tokenizer, stream: TokenStream, limit: int) -> float | None:
    """Whitespace words per token of the first documents of ``stream`` (about ``limit`` tokens), decoded: the
    factor that turns a per-token perplexity into a per-word one (None: no words)."""
    words = tokens = 0
    for d in range(len(stream.documents)):
        ids = stream.document(d)[:-1]  # without the end-of-text token
        words += len(tok.decode(ids.tolist()).split())
        tokens += len(ids)
        if tokens >= limit:
            break
    return words / tokens if words and tokens else None


@torch.no_grad()
def continuations(model, tok: Tokenizer, s: SampleConfig, device) -> list[dict]:
    """For each prompt, read as a document's start (after the end-of-text token): a greedy continuation and a
    sampled one (temperature, top-k, seeded), each cut at the first end of text."""
    model.eval()
    eot, out = tok.eos_token_id, []
    for i, prompt in enumerate(s.prompts):
        ids = torch.tensor([[eot, *tok.ids_batch([prompt])[0]]], device=device)  # (1, P)
        row = {"prompt": prompt}
        for name, options in (
            ("greedy", {}),
            ("sampled", dict(do_sample=True, temperature=s.temperature, top_k=s.top_k, seed=s.seed + i)),
        ):
            new = model.generate(ids, torch.ones_like(ids), max_new_tokens=s.max_new_tokens, **options)[
                0, ids.size(1) :
            ]
            new = new.tolist()
            row[name] = tok.decode(new[: new.index(eot)] if eot in new else new)
        out.append(row)
        log.info("sample %r → greedy: %r | sampled: %r", prompt, row["greedy"], row["sampled"])
    return out
