"""Recipe: prune a fine-tuned encoder — `seq2bert prune DIR --heads P | --sparsity S --out OUT`
(models/pruning.py has the methods and their papers).

Heads (Michel et al. 2019): the fraction ``heads`` of all attention heads is removed in steps of ``step`` of
them, least important first; before each step every remaining head's importance I_h = |∂L/∂ξ_h| is measured
again on ``examples`` training examples of the checkpoint's task (its run.json, or --task and --data), with
the model's own loss. Weights: the fraction ``sparsity`` of the encoder layers' Linear weights, smallest
magnitude first, set to 0. Both may be asked at once (heads first).

OUT is a checkpoint directory of the model's family — the source's other files (tokenizer, run.json) copied
beside it — that every command reads (`seq2bert evaluate OUT` scores it on the same task), and prune.json:
what was removed, each step's importances, the parameters and the zeros before and after. Its heads are
laid out as transformers 4's prune_heads left them; ``dense`` writes them at full size, the removed heads'
weights 0, which transformers 5 (no head pruning) reads too.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path

import torch

from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.finetuning import feature_length
from seq2bert.errors import ConfigError
from seq2bert.io import atomic_write_text, check_output_dir, write_dir_atomically
from seq2bert.models import pruning, registry
from seq2bert.models.pretrained import write_hf_files
from seq2bert.recipes.scoring import checkpoint_task, encode
from seq2bert.recipes.scratch import batch_of, reads_words
from seq2bert.tasks.data import FinetuneDataConfig, task_examples

log = logging.getLogger(__name__)

REPORT = "prune.json"
WRITTEN = {"config.json", "model.safetensors", "pytorch_model.bin", "trainer_state.pt", REPORT}


def importance_batches(model, tok, data: FinetuneDataConfig, examples: int) -> list[dict]:
    """Labelled batches of ``examples`` training examples of the task (a seeded sample), as fine-tuning
    batches them."""
    train, _ = task_examples(replace(data, max_train_examples=examples), seed=0)
    features = encode(data, train, tok, model.config.id2label, words=reads_words(model))
    plan = BucketBatchSampler(
        [feature_length(f) for f in features], batch_size=data.batch_size, shuffle=False
    )
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    return [batch_of(model, [features[i] for i in idx], pad, data.spec.collate) for idx in plan.batches(0)]


def prune_heads_by_importance(model, batches: list[dict], fraction: float, step: float) -> list[dict]:
    """Remove ``fraction`` of the heads, ``step`` of them at a time (Michel et al.); returns each step's record."""
    total = pruning.count_heads(model)
    target, per_step = round(fraction * total), max(1, round(step * total))
    steps = []
    while (removed := total - pruning.count_heads(model)) < target:
        importance = pruning.head_importance(model, batches)
        numbers = [list(a.heads) for a in pruning.attention_layers(model)]  # of the heads measured
        chosen = pruning.least_important(importance, model, min(per_step, target - removed))
        if not chosen:  # every layer is down to one head
            log.info("every layer keeps one head: %d of %d heads removed", removed, total)
            break
        pruning.prune_heads(model, chosen)
        steps.append(
            {
                "removed": {str(k): v for k, v in chosen.items()},
                "importance": [
                    {str(h): round(float(s), 6) for h, s in zip(hs, scores, strict=True)}
                    for hs, scores in zip(numbers, importance, strict=True)
                ],
            }
        )
        log.info(
            "removed %d heads: %d of %d left",
            sum(map(len, chosen.values())),
            pruning.count_heads(model),
            total,
        )
    return steps


def prune_checkpoint(
    source: str | Path,
    out: str | Path,
    *,
    heads: float = 0.0,
    sparsity: float = 0.0,
    step: float = 0.1,
    examples: int = 2000,
    data: FinetuneDataConfig | None = None,
    dense: bool = False,
    overwrite: bool = False,
) -> dict:
    """Prune the checkpoint ``source`` into ``out`` (the module docstring); returns prune.json's record."""
    if not 0.0 <= heads < 1.0 or not 0.0 < step <= 1.0:
        raise ConfigError(f"--heads: a fraction in [0, 1) and --step in (0, 1], got {heads} and {step}")
    if not 0.0 <= sparsity < 1.0:
        raise ConfigError(f"--sparsity: a fraction in [0, 1), got {sparsity}")
    if not heads and not sparsity:
        raise ConfigError(
            "prune: give --heads P (a fraction of the attention heads) or --sparsity S (of the weights)"
        )
    source = registry.checkpoint_dir(source)
    out = check_output_dir(out, command="prune", mark=REPORT, inputs=(source,), overwrite=overwrite)
    model, tok = registry.load(source)
    family = registry.family_of(model)
    record: dict = {"source": str(source), "params_before": sum(p.numel() for p in model.parameters())}
    if heads:
        record["heads_before"] = pruning.count_heads(model)
        checkpoint, data = checkpoint_task(source, data)
        batches = importance_batches(model, tok, data, examples)
        record["steps"] = prune_heads_by_importance(model, batches, heads, step)
        record |= {"heads_after": pruning.count_heads(model), "pruned_heads": model.config.pruned_heads}
        record |= {"importance_examples": examples, "task": data.task}
    if sparsity:
        record["sparsity"] = pruning.prune_weights(model, sparsity)
    record["params_after"] = sum(p.numel() for p in model.parameters())
    written = pruning.dense(model) if dense and heads else model

    def write(tmp: Path) -> None:
        for f in source.iterdir():
            if f.is_dir():
                shutil.copytree(f, tmp / f.name)
            elif f.is_file() and f.name not in WRITTEN:
                shutil.copy2(f, tmp / f.name)
        write_hf_files(family, written.eval(), tmp)
        atomic_write_text(tmp / REPORT, json.dumps(record, indent=1, default=str) + "\n")

    with torch.no_grad():
        write_dir_atomically(out, write)
    return record
