"""Recipe: fine-tune a BERT checkpoint on one task (Devlin et al. 2018, Sect. 4; Figure 4) — or a GPT checkpoint
as GPT-1 was (Radford et al. 2018, Sect. 3.2–3.3; a family of kind "decoder") — or train a model from random
weights on it, the pre-Transformer baselines (``model``: a BiLSTM, models/bilstm/).

Read top to bottom:
1. the task is a record of the task registry (seq2bert/tasks/): its shape names the head — GLUE tasks classify
   sentences or pairs (STS-B regresses), CoNLL-2003 tags words, SQuAD extracts spans, SWAG chooses an ending,
   and a plugin's task whatever its shape says;
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
   a tagging task, which GPT-1 did not do, it reads as running text and tags at each word's first piece,
   on L_2 alone (GPT2ForTokenClassification has no LM head);
4. the engine trains with AdamW, linear warm-up over ``warmup_ratio`` of the steps then linear decay
   (Sect. A.3: batch 32, lr among 5e-5 / 3e-5 / 2e-5, 2–4 epochs), length-bucketed batches padded to their
   own longest; every evaluation scores dev with the task's metrics (recipes/scoring.py) and keeps the best
   checkpoint;
5. the best checkpoint is a Hugging Face directory (config.json with id2label, model.safetensors,
   tokenizer), and its dev predictions are written to predictions.jsonl beside results.json; a test file
   (``data.test``, --test, of a task over your own files) is predicted by it into test_predictions.jsonl and
   scored as ``test_*`` in results.json.

    seq2bert finetune --task sst2 --init MODEL_DIR --data ../shared/data/sst2 --out runs/sst2
    seq2bert finetune --task sst2 --model bilstm --data ../shared/data/sst2 --out runs/sst2-bilstm
    seq2bert finetune --task conll2003 --model bilstm --features runs/elmo/best --data … --out runs/ner-elmo

``features`` (``--features DIR``): the model trained from scratch also reads the layers of a frozen
pretrained encoder at its input (feature-based transfer: ELMo's scalar mix, or BERT's Table 7 choices;
models/bilstm/features.py); the learned layer weights go to results.json (``feature_layer_weights``).

``sesame`` (``--set sesame.squeeze_excitation=true --set sesame.gaussian_blur=true``): SesameBERT's options
on the encoder (Su & Cheng 2019; models/sesame.py) — the last layer scaled by a gate computed from every
layer's output, and every self-attention's output blurred along the sequence. ``bilstm_top``
(``--set bilstm_top.enabled=true``): BERT's Table 5 "+ BiLSTM" — a new BiLSTM over the encoder's output, before
the head (models/lstm_top.py). Both are kept in the checkpoint beside the family's layout.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch

from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.finetuning import feature_length
from seq2bert.errors import ConfigError, DataError
from seq2bert.models import encoder_options, registry
from seq2bert.models.bilstm.config import FeaturesConfig
from seq2bert.models.lstm_top import BiLSTMSettings
from seq2bert.models.pretrained import init_task_model, load_hf_weights, write_hf_files
from seq2bert.models.sesame import SesameSettings
from seq2bert.nn.lora import merge_lora
from seq2bert.recipes.decoder_tasks import auxiliary_lm, decoder_inputs, decoder_loss, task_head
from seq2bert.recipes.scoring import (
    encode,
    evaluate_checkpoint,
    fit_length,
    keep_threshold,
    labelled,
    predictions,
    score,
    write_predictions,
)
from seq2bert.recipes.scratch import (
    VectorsInitConfig,
    VocabConfig,
    batch_of,
    cache_word_layers,
    model_config,
    new_model,
    reads_features,
    reads_words,
    starts_from_lm,
)
from seq2bert.recipes.sentence_embedding import EmbeddingConfig, dropout_overrides, train_embeddings
from seq2bert.tasks import registry as task_registry
from seq2bert.tasks.data import (
    FinetuneDataConfig,
    labelled_dev,
    read_task,
    subset,
    task_examples,
    with_labels,
)
from seq2bert.training import checkpoint as ckpt
from seq2bert.training import lora as lora_run
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import (
    check_model_fits,
    check_out_dir,
    count_parameters,
    folder_bytes,
    peak_memory,
    seed_everything,
    trainable_parameters,
    write_results,
    write_run_config,
)
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

# where they lived before the task registry (seq2bert/tasks/) and scoring (recipes/scoring.py) took them
__all__ = [
    "FinetuneConfig",
    "FinetuneDataConfig",
    "encode",
    "evaluate_checkpoint",
    "finetune",
    "fit_length",
    "from_scratch",
    "read_task",
    "score",
    "subset",
    "task_examples",
    "write_predictions",
]

log = logging.getLogger(__name__)


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
    vectors: VectorsInitConfig = field(default_factory=VectorsInitConfig)  # path: static word vectors
    warmup_ratio: float = 0.1  # of all steps, when train.warmup_steps is 0
    # None: the checkpoint's own (BERT: 0.1). On a CPU, P_drop on the attention weights keeps torch from its
    # fused attention kernel: up to 2.25x the step time at 256 tokens (benchmarks/RESULTS.md)
    hidden_dropout_prob: float | None = None
    attention_probs_dropout_prob: float | None = None
    # a decoder (GPT): λ of L_3 = L_2 + λ·L_1, the auxiliary LM loss on the task's inputs (GPT-1 Sect. 3.2: 0.5;
    # 0: the task's loss alone). An encoder has no such term, nor a decoder's tagger (no LM head)
    lm_coef: float = 0.5
    # options on the encoder (models/encoder_options.py): SesameBERT's (Su & Cheng 2019), BERT's "+ BiLSTM"
    sesame: SesameSettings = field(default_factory=SesameSettings)
    bilstm_top: BiLSTMSettings = field(default_factory=BiLSTMSettings)
    data: FinetuneDataConfig = field(default_factory=FinetuneDataConfig)
    embedding: EmbeddingConfig = field(
        default_factory=EmbeddingConfig
    )  # --task sentence-embedding's settings
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            lr=5e-5, weight_decay=0.01, schedule="linear", max_epochs=3, metric="main"
        )
    )

    def encoder_options(self) -> dict:
        """The options on the encoder, name → settings (models/encoder_options.py)."""
        return {"sesame": self.sesame, "bilstm_top": self.bilstm_top}

    def __post_init__(self) -> None:
        for name, value in dropout_overrides(self).items():
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {value}")
        if not self.lm_coef >= 0:
            raise ConfigError(f"lm_coef: must be >= 0 (0: no auxiliary LM loss), got {self.lm_coef}")
        if self.data.spec.head == "embedding":
            for name, settings in self.encoder_options().items():
                if settings.enabled:
                    raise ConfigError(
                        f"{name}: an option of a task model; the sentence-embedding task pools the encoder"
                    )
            if self.model:
                raise ConfigError(
                    "model: the sentence-embedding task trains a pretrained encoder; give --init DIR"
                )
        if self.init and self.model and not starts_from_lm(self.model):
            raise ConfigError(
                "init and model: give one (--init DIR fine-tunes a checkpoint, --model TYPE "
                "trains a model from random weights)"
            )
        if self.model:
            model_config(self.model, self.model_config)  # the family exists, model_config holds its fields
            try:
                registry.get(self.model).architecture_for(self.data.spec.head)
            except KeyError as e:
                raise ConfigError(f"model: {e.args[0]}") from None
            # random_init with a language model (--init): its tokenizer and shape, fresh weights (Dai & Le's
            # baseline at an equal budget)
            settings = ("random_init",) if not (self.init and starts_from_lm(self.model)) else ()
            for name in (*settings, *dropout_overrides(self)):
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
        if self.init and self.model and (self.vectors.path or self.features.path):
            raise ConfigError(
                "init: a model that starts from a language model takes its embeddings and LSTM from it; "
                "not with vectors or features"
            )
        if self.vectors.path and not self.model:
            raise ConfigError(
                "vectors: the word embeddings of a model trained from scratch start from them (--model bilstm)"
            )
        if self.train.lora.r and (self.model or self.random_init):
            raise ConfigError(
                "train.lora.r: LoRA adapts a pretrained checkpoint (--init); a model with random weights "
                "(--model, random_init) trains every weight"
            )
        if self.train.lora.r and self.train.average_last > 1:
            raise ConfigError(
                "train.average_last: not with train.lora.r (the mean of the factors B and A over "
                "checkpoints is not the mean of the weights)"
            )


def from_scratch(model: str) -> FinetuneConfig:
    """The defaults of a run that trains ``model`` from random weights — a BiLSTM's, not BERT's fine-tuning:
    Adam (no weight decay) at a constant 1e-3 without warm-up, gradients clipped at norm 5, 5 epochs."""
    train = TrainConfig(
        lr=1e-3, weight_decay=0.0, schedule="constant", clip_norm=5.0, max_epochs=5, metric="main"
    )
    return FinetuneConfig(model=model, warmup_ratio=0.0, train=train)


def main_metric(data: FinetuneDataConfig) -> str:
    return data.spec.main_metric_for(data)


# --- the run
def before_start(cfg: FinetuneConfig, out_dir: Path) -> None:
    """What a run refuses before its directory is made: an ``out_dir`` among its inputs (the checkpoint it
    starts from, the task's folder, the features), a model from scratch larger than the machine's memory."""
    if cfg.data.spec.head != "embedding" and cfg.embedding != EmbeddingConfig():
        raise ConfigError(f"embedding: the settings of --task sentence-embedding, not of {cfg.data.task}")
    check_out_dir(
        out_dir, (cfg.init, cfg.data.path, cfg.data.train, cfg.data.valid, cfg.data.test, cfg.features.path)
    )
    if cfg.model:
        config = model_config(cfg.model, cfg.model_config)
        check_model_fits(
            lambda: registry.build_model(config), config, cfg.train.optimizer, key="model_config"
        )


@ckpt.holds_run_dir(check=before_start, lora=True)
def finetune(
    cfg: FinetuneConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Fine-tune ``cfg.init`` — or train ``cfg.model`` from random weights — on ``cfg.data.task``; returns a
    results row (dev metrics of the best checkpoint)."""
    out_dir = Path(out_dir)
    cfg = replace(cfg, data=with_labels(cfg.data))  # a task over your files: its classes, kept in run.json
    data, task = cfg.data, cfg.data.spec
    if task.head == "embedding":  # a bi-encoder: no head, the encoder's vectors pooled
        return train_embeddings(cfg, out_dir, resume=resume, progress_bar=progress_bar)
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
    test_examples = read_task(data, ("test",))["test"] if data.test else []
    # 3. the model
    seed_everything(cfg.train.seed)
    id2label = task.id2label(train_examples + dev_examples, data)
    if cfg.model:  # random weights, a tokenizer trained on the training texts (recipes/scratch.py)
        model, tok, found_vectors = new_model(
            cfg.model,
            cfg.model_config,
            cfg.vocab,
            task,
            train_examples,
            architecture,
            id2label=id2label,
            problem_type=task.problem_type,
            features=cfg.features,
            resume_from=ckpt.latest_checkpoint(out_dir) if resume else None,
            vectors=cfg.vectors,
            lm=cfg.init,
            lm_weights=not cfg.random_init,
        )
        new = []
        encoder_options.attach(model, cfg.encoder_options())
    else:
        found_vectors = {}
        model, tok, new = init_task_model(
            family,
            cfg.init,
            architecture,
            id2label=id2label,
            problem_type=task.problem_type,
            random_init=cfg.random_init,
            overrides=dropout_overrides(cfg),
            options=cfg.encoder_options(),
        )
    data = fit_length(data, model.config, cfg.init)
    if tok is None:
        raise DataError(f"{cfg.init}: no tokenizer (vocab.txt or tokenizer.json) in the checkpoint")
    if not cfg.random_init and new:
        log.info("new parameters (trained from scratch): %s", ", ".join(new))
    shape = task.decoder_shape if decoder else None
    loaded = {id(p) for p in model.parameters()}
    if decoder:
        tok = decoder_inputs(model, tok, shape)
    lora = cfg.train.lora
    if lora.r:  # LoRA: the head, the parameters new to the checkpoint and the low-rank B A train
        added = [name for name, p in model.named_parameters() if id(p) not in loaded]  # GPT-1's token rows
        lora_run.adapt(model, lora, (*family.head_modules, *new, *added), cfg.init)
    trainable = trainable_parameters(model)
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
        if decoder:
            return gpt.collate(chunk, pad, shape, lm=auxiliary_lm(shape, cfg.lm_coef))
        return batch_of(model, chunk, pad, task.collate)

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
        # a LoRA run's checkpoints hold what trains; its best/ is the merged model, a plain checkpoint
        save_model=partial(lora_run.save_adapter, lora) if lora.r else partial(write_hf_files, family),
        load_model=partial(lora_run.load_adapter, lora) if lora.r else partial(load_hf_weights, family),
        save_best_model=partial(lora_run.write_merged, family) if lora.r else None,
        plot_curves=plot_training_curves,
    )
    log.info(
        "%s on %s: %s parameters (%s train); %d training examples (%d features), %d dev",
        architecture,
        data.task,
        f"{count_parameters(model):,}",
        f"{trainable:,}",
        len(train_examples),
        len(train_features),
        len(dev_examples),
    )
    result = trainer.fit(resume=resume)
    if lora.r:
        merge_lora(model)  # the plain model again, as best/ holds it
    last = result.last_checkpoint
    row = {
        "task": data.task,
        "init": "random" if cfg.random_init or (cfg.model and not cfg.init) else cfg.init,
        **({"model": cfg.model} if cfg.model else {}),
        **(
            {"vectors": cfg.vectors.path, "vectors_frozen": cfg.vectors.freeze, **found_vectors}
            if found_vectors
            else {}
        ),
        "params": count_parameters(model),
        "trainable_parameters": trainable,
        **({"lora": lora_run.settings(lora) | {"dropout": lora.dropout}} if lora.r else {}),
        "train_examples": len(train_examples),
        "steps": result.progress.step,
        "train_seconds": result.progress.train_seconds,
        "seconds_per_step": result.progress.train_seconds / max(result.progress.step, 1),
        "tokens_per_s": result.tokens_per_second,
        "checkpoint_bytes": folder_bytes(last) if last is not None else 0,  # a checkpoint-<step>/ to resume
        **peak_memory(device),
        **({"lm_coef": cfg.lm_coef if auxiliary_lm(shape, cfg.lm_coef) else 0.0} if decoder else {}),
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
        if task.problem_type == "multi_label_classification":  # the threshold tuned on valid, kept
            keep_threshold(out_dir / "best", metrics["threshold"])
            data = replace(data, threshold=metrics["threshold"])
        if test_examples:  # predicted by the best checkpoint; scored when labelled
            test_features = encode(
                data, test_examples, tok, model.config.id2label, words=words, decoder=decoder
            )
            preds = predictions(data, model, test_examples, test_features, pad, device, shape)
            if labelled(test_examples):
                row.update({f"test_{k}": v for k, v in task.metrics(test_examples, preds).items()})
            write_predictions(
                out_dir / "test_predictions.jsonl", data, test_examples, preds, model.config.id2label
            )
        extra = task.extra_dev  # MNLI's mismatched dev set beside the matched one
        if extra is not None and task_registry.get(extra.task).find(Path(data.path), "dev") is not None:
            other = replace(data, task=extra.task)
            other_examples = labelled_dev(other)
            other_features = encode(
                other, other_examples, tok, model.config.id2label, words=words, decoder=decoder
            )
            metrics, preds = score(other, model, other_examples, other_features, pad, device, shape)
            row.update({f"dev_{extra.key}_{k}": v for k, v in metrics.items()})
            write_predictions(
                out_dir / extra.predictions, other, other_examples, preds, model.config.id2label
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
