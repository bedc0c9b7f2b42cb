"""Recipe: fine-tune a BERT checkpoint on one task (Devlin et al. 2018, Sect. 4; Figure 4) — or a GPT checkpoint
as GPT-1 was (Radford et al. 2018, Sect. 3.2–3.3; a family of kind "decoder") — or train a model from random
weights on it, the pre-Transformer baselines (``model``: a BiLSTM, models/bilstm/).

Read top to bottom:
1. the task names its shape (TASKS): GLUE tasks classify sentences or pairs (STS-B regresses), CoNLL-2003
   tags words, SQuAD extracts spans, SWAG chooses an ending;
2. its reader reads train and dev from the task's folder (data/glue.py, conll.py, squad.py, swag.py), and
   data/finetuning.py (data/qa.py for SQuAD's windows) turns them into features;
3. the model is the checkpoint's encoder with a new head (models/bert/tasks.py; ``random_init``: the same
   architecture from scratch, to measure what pretraining buys); or, with ``model`` in place of ``init``, a
   new model of that family with random weights and a tokenizer trained on the training texts (``vocab``:
   a whole-word vocabulary by default, the classic baseline). A decoder (GPT) reads each task through
   GPT-1's input transformations (data/gpt_finetuning.py: [start] … [delim] … [extract], the three tokens
   added to its vocabulary and embedding), classifies from the final state of [extract] (a pair of a
   similarity task in both orders, added; multiple choice with the double-heads model) and trains on
   L_3 = L_2 + λ·L_1, the language-model loss on the task's inputs as an auxiliary objective (``lm_coef``);
4. the engine trains with AdamW, linear warm-up over ``warmup_ratio`` of the steps then linear decay
   (Sect. A.3: batch 32, lr among 5e-5 / 3e-5 / 2e-5, 2–4 epochs), length-bucketed batches padded to their
   own longest; every evaluation scores dev with the task's metrics and keeps the best checkpoint;
5. the best checkpoint is a Hugging Face directory (config.json with id2label, model.safetensors,
   tokenizer), and its dev predictions are written to predictions.jsonl beside results.json.

    seq2bert finetune --task sst2 --init MODEL_DIR --data ../shared/data/sst2 --out runs/sst2
    seq2bert finetune --task sst2 --model bilstm --data ../shared/data/sst2 --out runs/sst2-bilstm
    seq2bert finetune --task conll2003 --model bilstm --features runs/elmo/best --data … --out runs/ner-elmo

``features`` (``--features DIR``): the model trained from scratch also reads the layers of a frozen
pretrained encoder at its input (feature-based transfer: ELMo's scalar mix, or BERT's Table 7 choices;
models/bilstm/features.py); the learned layer weights go to results.json (``feature_layer_weights``).
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seq2bert import config as config_io
from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.conll import label_list, read_conll
from seq2bert.data.finetuning import encode_choices, encode_sequences, encode_tagged, feature_length
from seq2bert.data.glue import GLUE_TASKS, read_glue_dir
from seq2bert.data.qa import make_features, postprocess
from seq2bert.data.squad import read_squad
from seq2bert.data.swag import read_swag
from seq2bert.errors import ConfigError, DataError
from seq2bert.evaluation.tasks import glue_metrics, ner_metrics, squad_metrics
from seq2bert.models import registry
from seq2bert.models.bilstm.config import FeaturesConfig
from seq2bert.models.family import max_input_length
from seq2bert.models.pretrained import init_task_model, load_hf_weights, write_hf_files
from seq2bert.recipes.decoder_tasks import decoder_inputs, decoder_loss, task_head
from seq2bert.recipes.scratch import (
    VocabConfig,
    batch_of,
    cache_word_layers,
    model_config,
    new_model,
    reads_features,
    reads_words,
)
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import count_parameters, seed_everything, write_results, write_run_config
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

# task → (shape, default max_seq_length); the shape names the head, which the checkpoint's family maps to
# its class (registry: BERT's "sequence" is BertForSequenceClassification); main metrics: data/glue.py for
# GLUE, MAIN_METRIC else
TASKS: dict[str, tuple[str, int]] = {
    **{name: ("sequence", 128) for name in GLUE_TASKS},
    "conll2003": ("tokens", 256),
    "squad": ("qa", 384),
    "squad_v2": ("qa", 384),
    "swag": ("choice", 128),
}
MAIN_METRIC = {"tokens": "f1", "qa": "f1", "choice": "accuracy"}


@dataclass
class FinetuneDataConfig:
    task: str = "sst2"
    path: str = ""  # the task's folder (GLUE TSVs, CoNLL train.txt / valid.txt, SQuAD JSON, SWAG CSV)
    max_seq_length: int = 0  # 0: the task's default (128; CoNLL 256; SQuAD 384)
    doc_stride: int = 128  # SQuAD: tokens between the starts of two windows of one context
    max_query_length: int = 64
    batch_size: int = 32
    max_train_examples: int = 0  # 0: all (a seeded random subset otherwise, to fit a time budget)
    max_eval_examples: int = 0  # 0: all (the first ones otherwise)
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0

    def validate(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"data.task: expected one of {', '.join(TASKS)}, got {self.task!r}")
        for name in ("batch_size", "doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
            if getattr(self, name) < 1:
                raise ConfigError(f"data.{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("max_seq_length", "max_train_examples", "max_eval_examples"):
            if getattr(self, name) < 0:
                raise ConfigError(f"data.{name}: must be >= 0, got {getattr(self, name)}")

    def __post_init__(self) -> None:
        self.validate()

    @property
    def kind(self) -> str:
        return TASKS[self.task][0]

    @property
    def seq_length(self) -> int:
        return self.max_seq_length or TASKS[self.task][1]


@dataclass
class FinetuneConfig:
    init: str = ""  # a checkpoint directory of an encoder family (BERT, …): pretrained, or fine-tuned already
    random_init: bool = False  # the checkpoint's architecture and vocabulary, but fresh weights
    # or, in place of init, a family to train from random weights (the model_type: "bilstm"): its config is
    # the family's defaults ← model_config (its own field names), its tokenizer trained as ``vocab`` says
    model: str = ""
    model_config: dict[str, Any] = field(default_factory=dict)
    vocab: VocabConfig = field(default_factory=VocabConfig)
    features: FeaturesConfig = field(default_factory=FeaturesConfig)  # path: a frozen encoder's features
    warmup_ratio: float = 0.1  # of all steps, when train.warmup_steps is 0
    # None: the checkpoint's own (BERT: 0.1). On a CPU, P_drop on the attention weights keeps torch from its
    # fused attention kernel: up to 2.25x the step time at 256 tokens (benchmarks/RESULTS.md)
    hidden_dropout_prob: float | None = None
    attention_probs_dropout_prob: float | None = None
    # a decoder (GPT): λ of L_3 = L_2 + λ·L_1, the auxiliary LM loss on the task's inputs (GPT-1 Sect. 3.2: 0.5;
    # 0: the task's loss alone). An encoder has no such term
    lm_coef: float = 0.5
    data: FinetuneDataConfig = field(default_factory=FinetuneDataConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            lr=5e-5, weight_decay=0.01, schedule="linear", max_epochs=3, metric="main"
        )
    )

    def __post_init__(self) -> None:
        for name, value in dropout_overrides(self).items():
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {value}")
        if not self.lm_coef >= 0:
            raise ConfigError(f"lm_coef: must be >= 0 (0: no auxiliary LM loss), got {self.lm_coef}")
        if self.init and self.model:
            raise ConfigError(
                "init and model: give one (--init DIR fine-tunes a checkpoint, --model TYPE "
                "trains a model from random weights)"
            )
        if self.model:
            model_config(self.model, self.model_config)  # the family exists, model_config holds its fields
            try:
                registry.get(self.model).architecture_for(self.data.kind)
            except KeyError as e:
                raise ConfigError(f"model: {e.args[0]}") from None
            for name in ("random_init", *dropout_overrides(self)):
                if getattr(self, name) not in (False, None):
                    raise ConfigError(f"{name}: a setting of --init; for --model set model_config.<field>")
        elif self.model_config:
            raise ConfigError(
                "model_config: the fields of a model trained from scratch; give model (--model)"
            )
        if self.features.encoder:
            raise ConfigError("features.encoder: set by the recipe from the checkpoint (--features DIR)")
        if self.features.path and not (self.model and reads_features(self.model)):
            readers = [t for t in registry.FAMILIES if reads_features(t)]
            raise ConfigError(
                f"features: read by a model trained from scratch (--model {' or '.join(readers)})"
            )


def from_scratch(model: str) -> FinetuneConfig:
    """The defaults of a run that trains ``model`` from random weights — a BiLSTM's, not BERT's fine-tuning:
    Adam (no weight decay) at a constant 1e-3 without warm-up, gradients clipped at norm 5, 5 epochs."""
    train = TrainConfig(
        lr=1e-3, weight_decay=0.0, schedule="constant", clip_norm=5.0, max_epochs=5, metric="main"
    )
    return FinetuneConfig(model=model, warmup_ratio=0.0, train=train)


def dropout_overrides(cfg: FinetuneConfig) -> dict[str, float]:
    """The dropout probabilities set for this run, in place of the checkpoint's (BertConfig field names)."""
    names = ("hidden_dropout_prob", "attention_probs_dropout_prob")
    return {name: getattr(cfg, name) for name in names if getattr(cfg, name) is not None}


def main_metric(data: FinetuneDataConfig) -> str:
    if data.kind == "sequence":
        return GLUE_TASKS[data.task].main_metric
    return MAIN_METRIC[data.kind]


# --- 2. the data
def _find(folder: Path, patterns: tuple[str, ...]) -> Path | None:
    """The first file of ``folder`` matching one of ``patterns``, tried in order."""
    for pattern in patterns:
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
    return None


def read_task(data: FinetuneDataConfig) -> dict[str, list]:
    """{"train": examples, "dev": examples} of the task's folder."""
    folder = Path(data.path)
    if not folder.is_dir():
        raise DataError(f"data.path: {folder} is not a folder (give the task's data folder with --data)")
    if data.kind == "sequence":
        return read_glue_dir(data.task, folder)
    if data.kind == "tokens":
        files = {
            "train": _find(folder, ("train.txt",)),
            "dev": _find(folder, ("valid.txt", "dev.txt", "testa.txt")),
        }
        reader = read_conll
    elif data.kind == "qa":
        version = "v2.0" if data.task == "squad_v2" else "v1.1"
        files = {
            "train": _find(folder, (f"train-{version}*.json*",)),
            "dev": _find(folder, (f"dev-{version}*.json*",)),
        }
        reader = read_squad
    else:
        files = {"train": _find(folder, ("train.csv",)), "dev": _find(folder, ("val.csv", "dev.csv"))}
        reader = read_swag
    if files["dev"] is None:
        raise DataError(f"{folder}: no {data.task} dev file")
    return {split: reader(path) for split, path in files.items() if path is not None}


def subset(examples: list, n: int, seed: int | None) -> list:
    """The first n examples (seed None) or n drawn at random, in their original order; n = 0: all."""
    if not n or n >= len(examples):
        return examples
    if seed is None:
        return examples[:n]
    keep = np.sort(np.random.default_rng(seed).choice(len(examples), n, replace=False))
    return [examples[i] for i in keep]


def task_examples(data: FinetuneDataConfig, seed: int) -> tuple[list, list]:
    """The task's training and dev examples (``data``'s subsets of them), every one labelled."""
    splits = read_task(data)
    if "train" not in splits:
        raise DataError(f"{data.path}: no {data.task} training file")
    train, dev = (
        subset(splits["train"], data.max_train_examples, seed),
        subset(splits["dev"], data.max_eval_examples, None),
    )
    for split, examples in (("train", train), ("dev", dev)):
        require_labels(split, examples, data)
    return train, dev


def problem_type_of(data: FinetuneDataConfig) -> str | None:
    """Regression or single-label classification for GLUE tasks, so that a checkpoint fine-tuned on another
    task (transformers saves ``problem_type`` in config.json) cannot impose its own loss."""
    if data.kind != "sequence":
        return None
    return "regression" if GLUE_TASKS[data.task].labels is None else "single_label_classification"


def require_labels(split: str, examples: list, data: FinetuneDataConfig) -> None:
    """Training and dev examples must all carry a label (a GLUE test file, say, has none)."""
    unlabelled = [e for e in examples if getattr(e, "label", 0) is None]
    if unlabelled:
        raise DataError(
            f"{data.path}: {len(unlabelled)} {data.task} {split} example(s) have no label (e.g. id "
            f"{getattr(unlabelled[0], 'id', '?')}); fine-tuning and scoring need labelled train and dev files"
        )


def labels_of(data: FinetuneDataConfig, examples: list) -> dict[int, str] | None:
    """id2label of the task (None: the checkpoint's own); for tagging, every tag of ``examples`` (train and
    dev, so that a tag seen only in dev is a label the model never predicts rather than a crash)."""
    if data.kind == "sequence":
        labels = GLUE_TASKS[data.task].labels
        return {0: "score"} if labels is None else dict(enumerate(labels))
    if data.kind == "tokens":
        return dict(enumerate(label_list(examples)))
    return None


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
    """Features of ``examples`` (QA: several per example, each with its ``example_index``); ``words``: with
    the words of each (a model that reads a frozen encoder's features of them); for a ``decoder`` GPT-1's
    input transformations."""
    L = data.seq_length
    if decoder:
        return gpt.encode_task(examples, tok, gpt.shape_of(data.task), L)
    if data.kind == "sequence":
        return encode_sequences(examples, tok, L, progress=progress, words=words)
    if data.kind == "tokens":
        label2id = {label: i for i, label in id2label.items()}
        return encode_tagged(examples, tok, label2id, L, progress=progress, words=words)
    if data.kind == "choice":
        return encode_choices(examples, tok, L, progress=progress)
    features = make_features(
        examples,
        tok,
        max_seq_length=L,
        doc_stride=data.doc_stride,
        max_query_length=data.max_query_length,
        progress=progress,
    )
    return [
        {
            "input_ids": f.input_ids,
            "token_type_ids": f.token_type_ids,
            "start_position": f.start_position,
            "end_position": f.end_position,
            "example_index": f.example_index,
            "qa": f,
        }
        for f in features
    ]


# --- 4. evaluation
@torch.no_grad()
def predict(
    model, features: list[dict], pad_token_id: int, batch_size: int, device, shape: str | None = None
) -> list[torch.Tensor]:
    """Raw outputs per feature, in feature order: logits (K,) / (T, K) / (C,), or (2, T) start and end.
    ``shape``: a decoder's features, of GPT-1's input transformation ``shape``."""
    plan = BucketBatchSampler([feature_length(f) for f in features], batch_size=batch_size, shuffle=False)
    out: list[torch.Tensor | None] = [None] * len(features)
    targets = ("labels", "mc_labels", "lm_labels", "start_positions", "end_positions")
    for indices in plan.batches(0):
        chunk = [features[i] for i in indices]
        batch = (
            gpt.collate(chunk, pad_token_id, shape, lm=False)
            if shape
            else batch_of(model, chunk, pad_token_id)
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
    outputs = predict(model, features, pad_token_id, data.batch_size, device, shape)
    id2label = model.config.id2label
    if data.kind == "sequence":
        if GLUE_TASKS[data.task].labels is None:
            preds = [float(o[0]) for o in outputs]
        else:
            preds = [int(o.argmax()) for o in outputs]
        metrics = glue_metrics(data.task, preds, [e.label for e in examples])
        shown = preds if GLUE_TASKS[data.task].labels is None else [id2label[p] for p in preds]
        return metrics, shown
    if data.kind == "tokens":
        preds = []
        for f, o in zip(features, outputs, strict=True):
            tags = ["O"] * f["num_words"]  # words cut by max_seq_length stay "O"
            for w, k in zip(f["word_ids"], o.argmax(-1).tolist(), strict=True):
                if w >= 0:
                    tags[w] = id2label[k]
            preds.append(tags)
        return ner_metrics([e.tags for e in examples], preds), preds
    if data.kind == "choice":
        preds = [int(o.argmax()) for o in outputs]
        labels = [e.label for e in examples]
        return {
            "accuracy": 100.0 * float(np.mean([p == y for p, y in zip(preds, labels, strict=True)]))
        }, preds
    found = postprocess(
        examples,
        [f["qa"] for f in features],
        [o[0] for o in outputs],
        [o[1] for o in outputs],
        n_best_size=data.n_best_size,
        max_answer_length=data.max_answer_length,
        version_2=data.task == "squad_v2",
        null_score_diff_threshold=data.null_score_diff_threshold,
    )
    texts = {i: p.text for i, p in found.items()}
    return squad_metrics(texts, examples, version_2=data.task == "squad_v2"), [
        texts.get(e.id, "") for e in examples
    ]


def gold(data: FinetuneDataConfig, example, id2label):
    if data.kind == "sequence":
        return example.label if GLUE_TASKS[data.task].labels is None else id2label[example.label]
    if data.kind == "tokens":
        return example.tags
    if data.kind == "qa":
        return [a.text for a in example.answers]
    return example.label


def write_predictions(path: Path, data: FinetuneDataConfig, examples: list, preds: list, id2label) -> None:
    """One JSON line per dev example (id, prediction, label); for SQuAD also ``predictions.json`` beside it,
    {question id: answer text}, the file the official evaluate-v1.1.py / evaluate-v2.0.py scripts read."""
    lines = [
        json.dumps({"id": e.id, "prediction": p, "label": gold(data, e, id2label)}, ensure_ascii=False)
        for e, p in zip(examples, preds, strict=True)
    ]
    config_io.atomic_write_text(path, "\n".join(lines) + "\n")
    if data.kind == "qa":
        official = {e.id: p for e, p in zip(examples, preds, strict=True)}
        config_io.atomic_write_text(
            path.with_suffix(".json"), json.dumps(official, ensure_ascii=False) + "\n"
        )


# --- the run
@ckpt.holds_run_dir
def finetune(
    cfg: FinetuneConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Fine-tune ``cfg.init`` — or train ``cfg.model`` from random weights — on ``cfg.data.task``; returns a
    results row (dev metrics of the best checkpoint)."""
    out_dir = Path(out_dir)
    data = cfg.data
    if not cfg.init and not cfg.model:
        raise ConfigError(
            "init: give the checkpoint to start from (--init DIR), or a model to train from "
            "random weights (--model bilstm)"
        )
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # the checkpoint's family (or the one named) gives the class with this task's head
    family = registry.get(cfg.model, "model") if cfg.model else registry.family_at(cfg.init)
    decoder = family.kind == "decoder"  # fine-tuned as GPT-1 was: input transformations, L_3 = L_2 + λ·L_1
    try:
        architecture = family.architecture_for(task_head(family, data))
    except KeyError as e:
        raise ConfigError(f"{cfg.model or cfg.init}: {e.args[0]}") from None
    # 2. the data
    train_examples, dev_examples = task_examples(data, cfg.train.seed)
    # 3. the model
    seed_everything(cfg.train.seed)
    id2label = labels_of(data, train_examples + dev_examples)
    if cfg.model:  # random weights, a tokenizer trained on the training texts (recipes/scratch.py)
        model, tok = new_model(
            cfg.model,
            cfg.model_config,
            cfg.vocab,
            data.kind,
            train_examples,
            architecture,
            id2label=id2label,
            problem_type=problem_type_of(data),
            features=cfg.features,
            resume_from=ckpt.latest_checkpoint(out_dir) if resume else None,
        )
        new = []
    else:
        model, tok, new = init_task_model(
            family,
            cfg.init,
            architecture,
            id2label=id2label,
            problem_type=problem_type_of(data),
            random_init=cfg.random_init,
            overrides=dropout_overrides(cfg),
        )
    data = fit_length(data, model.config, cfg.init)
    if tok is None:
        raise DataError(f"{cfg.init}: no tokenizer (vocab.txt or tokenizer.json) in the checkpoint")
    if not cfg.random_init and new:
        log.info("new parameters (trained from scratch): %s", ", ".join(new))
    shape = gpt.shape_of(data.task) if decoder else None
    if decoder:
        tok = decoder_inputs(model, tok)
    pad = model.config.pad_token_id if decoder else tok.pad_token_id if tok.pad_token_id is not None else 0
    words = reads_words(model)
    train_features = encode(
        data, train_examples, tok, model.config.id2label, progress=progress_bar, words=words, decoder=decoder
    )
    dev_features = encode(
        data, dev_examples, tok, model.config.id2label, progress=progress_bar, words=words, decoder=decoder
    )
    if words and cfg.features.cache:  # the frozen encoder's layers at the words, once per example
        started = time.perf_counter()
        for split in (train_features, dev_features):
            cache_word_layers(model, split, batch_size=2 * data.batch_size, progress=progress_bar)
        log.info("features of %s computed once: %.1f s", cfg.features.path, time.perf_counter() - started)
    plan = BucketBatchSampler(
        [feature_length(f) for f in train_features],
        batch_size=data.batch_size,
        shuffle=True,
        seed=cfg.train.seed,
        num_replicas=dist.world_size,
        rank=dist.rank,
    )
    # 4. the engine
    train_cfg = cfg.train
    if train_cfg.metric == "main":
        train_cfg = replace(train_cfg, metric=main_metric(data), higher_is_better=True)
    total = train_cfg.max_steps or train_cfg.max_epochs * math.ceil(
        len(plan.batches(0)) / train_cfg.accumulate
    )
    if train_cfg.warmup_steps == 0 and cfg.warmup_ratio > 0:
        train_cfg = replace(train_cfg, warmup_steps=max(1, round(cfg.warmup_ratio * total)))
    torch.manual_seed(cfg.train.seed + dist.rank)

    def write_extra(directory: Path) -> None:
        tok.save(directory)
        write_run_config(directory, cfg)

    latest: dict = {}  # the last evaluation's predictions: the best checkpoint's when training ended on it

    def evaluate(m) -> dict:
        metrics, preds = score(data, m, dev_examples, dev_features, pad, device, shape)
        latest.update(metrics=metrics, preds=preds)
        return metrics

    def collate_batch(indices: list[int]) -> dict:
        chunk = [train_features[i] for i in indices]
        return gpt.collate(chunk, pad, shape, lm=cfg.lm_coef > 0) if decoder else batch_of(model, chunk, pad)

    def loss_fn(m, batch: dict) -> torch.Tensor:
        return decoder_loss(m, batch, shape, cfg.lm_coef) if decoder else m(**batch).loss

    trainer = Trainer(
        model,
        train_cfg,
        plan=plan,
        collate=collate_batch,
        out_dir=out_dir,
        evaluate=evaluate,
        write_extra=write_extra,
        loss_fn=loss_fn,
        count_tokens=lambda batch: int(batch["attention_mask"].sum()),
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=partial(write_hf_files, family),
        load_model=partial(load_hf_weights, family),
        plot_curves=plot_training_curves,
    )
    log.info(
        "%s on %s: %s parameters; %d training examples (%d features), %d dev",
        architecture,
        data.task,
        f"{count_parameters(model):,}",
        len(train_examples),
        len(train_features),
        len(dev_examples),
    )
    result = trainer.fit(resume=resume)
    row = {
        "task": data.task,
        "init": "random" if cfg.random_init or cfg.model else cfg.init,
        **({"model": cfg.model} if cfg.model else {}),
        "params": count_parameters(model),
        "train_examples": len(train_examples),
        "steps": result.progress.step,
        "train_seconds": result.progress.train_seconds,
        "tokens_per_s": result.tokens_per_second,
        **({"lm_coef": cfg.lm_coef} if decoder else {}),
    }
    if dist.is_main and (out_dir / "best").is_dir():
        # 5. the best checkpoint's dev predictions, in fp32 as `seq2bert evaluate` gives them: scored again unless
        # the last evaluation was of these weights (no checkpoint averaging since) in fp32 (no bf16 autocast)
        p = result.progress
        reuse = p.best_step == p.eval_step == p.step and train_cfg.average_last <= 1 and not trainer.bf16
        if latest and reuse:
            metrics, preds = latest["metrics"], latest["preds"]
        else:
            load_hf_weights(family, model, out_dir / "best")
            model.eval()
            metrics, preds = score(data, model, dev_examples, dev_features, pad, device, shape)
        row.update({f"dev_{k}": v for k, v in metrics.items()}, best_step=result.progress.best_step)
        write_predictions(out_dir / "predictions.jsonl", data, dev_examples, preds, model.config.id2label)
        mismatched = replace(data, task="mnli_mismatched")
        if data.task == "mnli" and (Path(data.path) / GLUE_TASKS["mnli_mismatched"].dev_file).is_file():
            mm_examples = subset(read_task(mismatched)["dev"], data.max_eval_examples, None)
            mm_features = encode(
                mismatched, mm_examples, tok, model.config.id2label, words=words, decoder=decoder
            )
            metrics, preds = score(mismatched, model, mm_examples, mm_features, pad, device, shape)
            row.update({f"dev_mm_{k}": v for k, v in metrics.items()})  # MNLI-mm beside MNLI-m
            write_predictions(
                out_dir / "predictions_mismatched.jsonl",
                mismatched,
                mm_examples,
                preds,
                model.config.id2label,
            )
        features = registry.family_of(model).base_model(model).features if words else None
        if features is not None and features.layer_weights() is not None:  # which layers the task reads
            row["feature_layer_weights"] = features.layer_weights()
            log.info(
                "learned layer weights of %s: s_j = %s, gamma = %s",
                cfg.features.path,
                row["feature_layer_weights"]["s"],
                row["feature_layer_weights"]["gamma"],
            )
        row["run_dir"] = str(out_dir)
        write_results(out_dir, row)
    cleanup()
    return row


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
    checkpoint = (
        ckpt.resolve_checkpoint(checkpoint) if (Path(checkpoint) / "best").is_dir() else Path(checkpoint)
    )
    run = checkpoint / "run.json"
    recorded = ckpt.read_json(run).get("data") if run.is_file() else None  # fine-tuning's, distillation's
    trained = None if recorded is None else config_io.from_dict(FinetuneDataConfig, recorded, f"{run}: data.")
    if data is None:
        if trained is None:
            raise ConfigError(f"{checkpoint}: no run.json; give --task and --data")
        data = trained
    elif trained is not None:  # the run's windows, lengths and thresholds, on the task and folder given
        data = replace(trained, task=data.task, path=data.path)
    model, tok = registry.load(checkpoint, device=device)
    family = registry.family_of(model)
    decoder = family.kind == "decoder"
    needed = family.heads.get(task_head(family, data), f"{data.kind} model")
    if type(model).__name__ != needed:
        raise ConfigError(f"{checkpoint}: a {type(model).__name__}, but task {data.task} needs a {needed}")
    if data.kind == "sequence" and model.config.num_labels != len(GLUE_TASKS[data.task].labels or [0]):
        raise ConfigError(
            f"{checkpoint}: has {model.config.num_labels} output(s) ({', '.join(model.config.id2label.values())}), "
            f"task {data.task} needs {len(GLUE_TASKS[data.task].labels or [0])}"
        )
    data = fit_length(data, model.config, checkpoint)
    if tok is None:
        raise DataError(f"{checkpoint}: no tokenizer in the checkpoint")
    examples = subset(read_task(data)["dev"], data.max_eval_examples, None)
    require_labels("dev", examples, data)
    features = encode(data, examples, tok, model.config.id2label, words=reads_words(model), decoder=decoder)
    pad = model.config.pad_token_id if decoder else tok.pad_token_id or 0
    shape = gpt.shape_of(data.task) if decoder else None
    metrics, preds = score(data, model, examples, features, pad, torch.device(device), shape)
    if out is not None:
        write_predictions(Path(out), data, examples, preds, model.config.id2label)
    return {
        "task": data.task,
        "checkpoint": str(checkpoint),
        "examples": len(examples),
        **{f"dev_{k}": v for k, v in metrics.items()},
    }
