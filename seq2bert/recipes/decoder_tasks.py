"""What the fine-tuning recipe (finetune.py) does for a decoder — a family of kind "decoder", GPT — as GPT-1 was
fine-tuned (Radford et al. 2018, Sect. 3.2–3.3): the head each task needs, the three tokens of the input
transformations added to the tokenizer and the embedding, and the loss L_3 = L_2 + λ·L_1. Tagging, which
GPT-1 did not do, reads the words as running text (data/gpt_finetuning.py) and trains on L_2 alone: the token
classifier (transformers' GPT2ForTokenClassification) has no LM head for L_1."""

from __future__ import annotations

import torch

from seq2bert.data import gpt_finetuning as gpt
from seq2bert.errors import ConfigError
from seq2bert.models.family import Family
from seq2bert.objectives.causal_lm import with_auxiliary_lm
from seq2bert.tasks import registry as task_registry


def task_head(family: Family, data) -> str:
    """The head a task needs of ``family``: its shape ("sequence", "tokens", "qa", "choice"); for a decoder a
    pair of a similarity task is read in both orders ("similarity", GPT-1 Sect. 3.3)."""
    task = data.spec
    if family.kind != "decoder":
        return task.head
    if task.decoder_shape is None:
        covered = [t.name for t in task_registry.TASKS.values() if t.decoder_shape is not None]
        raise ConfigError(
            f"data.task: {family.model_type} is a decoder; task {task.name}: a decoder fine-tunes on "
            f"{', '.join(covered)} (GPT-1's input transformations, Sect. 3.3, and tagging)"
        )
    return "similarity" if task.decoder_shape == "similarity" else task.head


def decoder_inputs(model, tok, shape: str):
    """GPT-1 Sect. 3.3 for a decoder's task model of input transformation ``shape``: [start], [delim],
    [extract] added to the tokenizer and, as new rows, to the token embedding (unless there already; not for
    tagging, which adds no token); the padding id — the config's, else the tokenizer's [PAD], end of text or
    unknown token — after which the classifier finds [extract]. Returns the tokenizer."""
    if shape != "tokens":
        tok = gpt.with_task_tokens(tok)
    if tok.vocab_size > model.config.vocab_size:
        model.resize_token_embeddings(tok.vocab_size)
    if model.config.pad_token_id is None:
        candidates = (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id, 0)
        model.config.pad_token_id = next(i for i in candidates if i is not None)
    return tok


def auxiliary_lm(shape: str, lm_coef: float) -> bool:
    """Whether a decoder's task model of ``shape`` adds λ·L_1: λ > 0 and a head with an LM (not tagging)."""
    return lm_coef > 0 and shape != "tokens"


def decoder_loss(model, batch: dict, shape: str, lm_coef: float) -> torch.Tensor:
    """L_3 = L_2 + λ·L_1 (GPT-1 Eq. 5) of a decoder's task model on a batch of ``gpt.collate``: the task's loss
    (the double-heads model's ``mc_loss`` for multiple choice) plus λ times the LM loss on the same inputs;
    tagging's L_2 alone."""
    out = model(**batch)
    if shape == "tokens":
        return out.loss
    if shape == "choice":
        return with_auxiliary_lm(out.mc_loss, out.loss, lm_coef)
    return with_auxiliary_lm(out.loss, out.lm_loss, lm_coef)
