"""Scoring a task model on its task's dev set — what fine-tuning does at every evaluation and after training,
task distillation for its teacher and student, and ``seq2bert evaluate`` for a fine-tuned checkpoint: the
model's raw outputs per feature in length-bucketed batches, which the task (tasks/task.py) turns into
predictions, scores and predictions.jsonl."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import torch

from seq2bert import config as config_io
from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.finetuning import collate, feature_length
from seq2bert.errors import ConfigError, DataError
from seq2bert.io import read_json, write_json
from seq2bert.models import registry
from seq2bert.models.family import max_input_length
from seq2bert.recipes.decoder_tasks import task_head
from seq2bert.recipes.scratch import batch_of, reads_words
from seq2bert.tasks.data import FinetuneDataConfig, labelled_dev
from seq2bert.tasks.files import THRESHOLD_KEY
from seq2bert.training import checkpoint as ckpt

log = logging.getLogger(__name__)


def fit_length(data: FinetuneDataConfig, config, checkpoint) -> FinetuneDataConfig:
    """The sequence length must fit the checkpoint's position embeddings: the task's default is cut to them
    (said in the log), a longer ``data.max_seq_length`` given explicitly is an error. A model without a
    position table (an LSTM) reads any length."""
    positions = max_input_length(config)
    if positions is None or data.seq_length <= positions:
        return data
    if data.max_seq_length:
        raise ConfigError(
            f"data.max_seq_length: {data.seq_length} is longer than the {positions} positions of {checkpoint} "
            f"(max_position_embeddings); set data.max_seq_length <= {positions}"
        )
    log.info(
        "%s has %d positions: sequences of at most %d tokens (the task's default is %d)",
        checkpoint,
        positions,
        positions,
        data.seq_length,
    )
    return replace(data, max_seq_length=positions)


def encode(
    data: FinetuneDataConfig,
    examples: list,
    tok,
    id2label,
    *,
    progress: bool = False,
    words: bool = False,
    decoder: bool = False,
) -> list[dict]:
    """Features of ``examples`` for the task of ``data`` (tasks/task.py ``Task.features``)."""
    return data.spec.features(examples, tok, id2label, data, progress=progress, words=words, decoder=decoder)


@torch.no_grad()
def predict(
    model,
    features: list[dict],
    pad_token_id: int,
    batch_size: int,
    device,
    shape: str | None = None,
    collate=collate,
) -> list[torch.Tensor]:
    """Raw outputs per feature, in feature order: logits (K,) / (T, K) / (C,), or (2, T) start and end.
    ``shape``: a decoder's features, of GPT-1's input transformation ``shape``; else batched by ``collate``."""
    plan = BucketBatchSampler([feature_length(f) for f in features], batch_size=batch_size, shuffle=False)
    out: list[torch.Tensor | None] = [None] * len(features)
    targets = ("labels", "mc_labels", "lm_labels", "start_positions", "end_positions")
    for indices in plan.batches(0):
        chunk = [features[i] for i in indices]
        batch = (
            gpt.collate(chunk, pad_token_id, shape, lm=False)
            if shape
            else batch_of(model, chunk, pad_token_id, collate)
        )
        o = model(**{k: v.to(device) for k, v in batch.items() if k not in targets})
        rows = torch.stack([o.start_logits, o.end_logits], 1) if hasattr(o, "start_logits") else o.logits
        rows = o.mc_logits if shape == "choice" else rows  # the double-heads model's choice scores
        for i, row in zip(indices, rows.float().cpu(), strict=True):
            n = feature_length(features[i])
            out[i] = row[..., :n] if hasattr(o, "start_logits") else (row[:n] if row.dim() == 2 else row)
    return out  # type: ignore[return-value]


def score(
    data: FinetuneDataConfig,
    model,
    examples: list,
    features: list[dict],
    pad_token_id: int,
    device,
    shape: str | None = None,
):
    """(metrics, one prediction per example) on labelled ``examples``; ``shape``: a decoder's (predict)."""
    preds = predictions(data, model, examples, features, pad_token_id, device, shape)
    return data.spec.metrics(examples, preds), preds


def predictions(
    data: FinetuneDataConfig,
    model,
    examples: list,
    features: list[dict],
    pad_token_id: int,
    device,
    shape: str | None = None,
) -> list:
    """One prediction per example, labelled or not."""
    task = data.spec
    outputs = predict(model, features, pad_token_id, data.batch_size, device, shape, task.collate)
    return task.predictions(outputs, examples, features, model.config.id2label, data)


def labelled(examples: list) -> bool:
    return all(getattr(e, "label", 0) is not None for e in examples)


def with_threshold(data: FinetuneDataConfig, checkpoint: Path) -> FinetuneDataConfig:
    """A multi-label run's data with the threshold its checkpoint keeps (config.json's
    ``multi_label_threshold``, tuned on valid), unless data.threshold fixes one."""
    config = Path(checkpoint) / "config.json"
    if data.spec.problem_type != "multi_label_classification" or data.threshold or not config.is_file():
        return data
    kept = read_json(config).get(THRESHOLD_KEY)
    return replace(data, threshold=float(kept)) if kept else data


def keep_threshold(checkpoint: Path, threshold: float) -> None:
    """Write a multi-label model's tuned threshold into its config.json (transformers keeps an unknown key as
    an attribute of the config; seq2bert's predictions read it)."""
    config = Path(checkpoint) / "config.json"
    write_json(config, {**read_json(config), THRESHOLD_KEY: threshold})


def write_predictions(path: Path, data: FinetuneDataConfig, examples: list, preds: list, id2label) -> None:
    """One JSON line per dev example (id, prediction, label) and the task's own files beside them (SQuAD's
    ``predictions.json``, {question id: answer text}, the file the official evaluate scripts read)."""
    data.spec.write_predictions(path, examples, preds, id2label)


def checkpoint_task(
    checkpoint: str | Path, data: FinetuneDataConfig | None = None
) -> tuple[Path, FinetuneDataConfig]:
    """A fine-tuned checkpoint directory (a run's best/, or any directory with run.json: a fine-tuning's or a
    task distillation's) and its task: the ``data`` of its run.json, whose task and folder ``data`` overrides."""
    checkpoint = registry.local_path(checkpoint)  # a Hub model name: its folder in the cache
    checkpoint = ckpt.resolve_checkpoint(checkpoint) if (checkpoint / "best").is_dir() else checkpoint
    run = checkpoint / "run.json"
    recorded = ckpt.read_json(run).get("data") if run.is_file() else None  # fine-tuning's, distillation's
    trained = None if recorded is None else config_io.from_dict(FinetuneDataConfig, recorded, f"{run}: data.")
    if data is None:
        if trained is None:
            raise ConfigError(f"{checkpoint}: no run.json; give --task and --data")
        return checkpoint, trained
    if trained is not None:  # the run's windows, lengths and thresholds, on the task and folder given
        return checkpoint, replace(trained, task=data.task, path=data.path)
    return checkpoint, data


def evaluate_checkpoint(
    checkpoint: str | Path,
    data: FinetuneDataConfig | None = None,
    *,
    out: str | Path | None = None,
    device: str = "cpu",
) -> dict:
    """Dev metrics of a fine-tuned checkpoint directory (a run's best/, or any directory with run.json: a
    fine-tuning's or a task distillation's, whose ``data`` is read); ``data`` overrides the task and folder of
    its run.json. Writes predictions to ``out`` when given."""
    checkpoint, data = checkpoint_task(checkpoint, data)
    task = data.spec
    model, tok = registry.load(checkpoint, device=device)
    family = registry.family_of(model)
    decoder = family.kind == "decoder"
    needed = family.heads.get(task_head(family, data), f"{task.head} model")
    if type(model).__name__ != needed:
        raise ConfigError(f"{checkpoint}: a {type(model).__name__}, but task {data.task} needs a {needed}")
    if isinstance(task.labels, tuple) and model.config.num_labels != len(task.labels):
        raise ConfigError(
            f"{checkpoint}: has {model.config.num_labels} output(s) ({', '.join(model.config.id2label.values())}), "
            f"task {data.task} needs {len(task.labels)}"
        )
    data = fit_length(data, model.config, checkpoint)
    if tok is None:
        raise DataError(f"{checkpoint}: no tokenizer in the checkpoint")
    data = with_threshold(data, checkpoint)
    examples = labelled_dev(data)
    features = encode(data, examples, tok, model.config.id2label, words=reads_words(model), decoder=decoder)
    pad = model.config.pad_token_id if decoder else tok.pad_token_id or 0
    shape = task.decoder_shape if decoder else None
    metrics, preds = score(data, model, examples, features, pad, torch.device(device), shape)
    if out is not None:
        write_predictions(Path(out), data, examples, preds, model.config.id2label)
    return {
        "task": data.task,
        "checkpoint": str(checkpoint),
        "examples": len(examples),
        **{f"dev_{k}": v for k, v in metrics.items()},
    }
