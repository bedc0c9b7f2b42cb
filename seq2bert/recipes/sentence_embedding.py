"""Recipe: train sentence embeddings — a bi-encoder (Sentence-BERT, Reimers & Gurevych 2019) whose vector of a
text is its encoder's token vectors pooled (the mean, or [CLS]) and optionally L2-normalised — on a user's
files (tasks/embedding_files.py), and score any directory's embeddings on pairs.

Read top to bottom:
1. the examples of --train and --valid: sentences, pairs, scored pairs or triplets, as the columns say;
2. the encoder of --init (any family that reads token ids: BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA, …)
   without a head, its pooling and normalisation those of the directory's sentence-transformers modules
   (1_Pooling/config.json, 2_Normalize) when it has them — else mean pooling — unless ``embedding.pooling`` /
   ``embedding.normalize`` say;
3. each batch's texts encoded in one pass, (B, C, T) → (B·C, T) → pooled (B, C, H), and the loss of the shape
   (objectives/sentence_embedding.py): the multiple negatives ranking loss for pairs and triplets (each
   anchor against the batch's positives and hard negatives, scale 20), CoSENT for scored pairs, and for
   single sentences unsupervised SimCSE (Gao et al. 2021): each sentence encoded twice in the same batch,
   dropout the only difference between the two views, the same loss at temperature 0.05 (scale 20);
4. every evaluation scores the validation pairs (Spearman of the cosines with the gold scores, STS-B's measure;
   recall@1 of unscored pairs) and keeps the best checkpoint;
5. best/ is a sentence-transformers directory: the encoder in transformers' layout (config.json,
   model.safetensors, the tokenizer) with modules.json, 1_Pooling/config.json, 2_Normalize when normalised and
   sentence_bert_config.json — which `SentenceTransformer(path)` and `seq2bert embed` read alike.

    seq2bert finetune --task sentence-embedding --init MODEL_DIR --train stsb/train.tsv --valid stsb/dev.tsv \\
        --text-column sentence1 --pair-column sentence2 --label-column score --out runs/sts
    seq2bert evaluate MODEL_DIR --task sentence-embedding --valid stsb/dev.tsv --text-column sentence1 \\
        --pair-column sentence2 --label-column score
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from seq2bert import config as config_io
from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.finetuning import collate, feature_length
from seq2bert.errors import ConfigError, DataError
from seq2bert.models import registry
from seq2bert.models.family import max_input_length
from seq2bert.models.pretrained import init_task_model, load_hf_weights, write_hf_files
from seq2bert.objectives import sentence_embedding as losses
from seq2bert.pipelines.encoders import POOLING, embed, sentence_modules
from seq2bert.pipelines.loading import default_max_length
from seq2bert.recipes.scoring import fit_length
from seq2bert.tasks import embedding_files as files
from seq2bert.tasks.data import FinetuneDataConfig, labelled_dev, task_examples
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import count_parameters, seed_everything, write_results, write_run_config
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

MODES = {  # embedding.pooling → sentence-transformers' pooling setting (pipelines/encoders.py POOLING)
    "mean": "pooling_mode_mean_tokens",
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
}
FITS = {  # the losses each shape of training data can train
    "sentences": ("mnrl",),
    "pairs": ("mnrl",),
    "scored": ("cosent", "cosine"),
    "triplets": ("mnrl", "triplet"),
}


@dataclass
class EmbeddingConfig:
    """The settings of a sentence-embedding run (``embedding.*``)."""

    loss: str = "auto"  # auto (CoSENT for scored pairs, else MNRL; SimCSE for sentences) | mnrl | cosent | …
    pooling: str = ""  # mean | cls | max; "": the init directory's 1_Pooling, else mean
    normalize: bool | None = None  # write (and train with) a Normalize module; None: as the init directory
    scale: float = losses.SCALE  # s of MNRL and CoSENT (1/τ: SimCSE's τ = 0.05 is 20)
    margin: float = losses.TRIPLET_MARGIN  # ε of the triplet loss

    def __post_init__(self) -> None:
        if self.loss not in ("auto", *losses.LOSSES):
            raise ConfigError(
                f"embedding.loss: expected auto or one of {', '.join(losses.LOSSES)}, got {self.loss!r}"
            )
        if self.pooling not in ("", *MODES):
            raise ConfigError(f"embedding.pooling: expected one of {', '.join(MODES)}, got {self.pooling!r}")
        if not self.scale > 0:
            raise ConfigError(f"embedding.scale: must be > 0, got {self.scale}")
        if not self.margin >= 0:
            raise ConfigError(f"embedding.margin: must be >= 0, got {self.margin}")


def loss_for(shape: str, asked: str) -> str:
    """The loss of a run on training data of ``shape``: ``asked``, which must fit it, or the shape's first."""
    if asked == "auto":
        return FITS[shape][0]
    if asked not in FITS[shape]:
        raise ConfigError(
            f"embedding.loss: {asked} does not train on {shape} (the training file's columns); "
            f"expected {' or '.join(FITS[shape])}"
        )
    return asked


# --- the bi-encoder's vectors
def pooled(model, batch: dict, pooling: str, normalize: bool) -> torch.Tensor:
    """The vectors of a batch's texts: input_ids (B, C, T) → (B, C, H), pooled as ``pooling`` (a key of
    POOLING) says, L2-normalised when ``normalize``."""
    B, C, T = batch["input_ids"].shape
    flat = {k: batch[k].reshape(B * C, T) for k in ("input_ids", "attention_mask", "token_type_ids")}
    hidden = model(**flat).last_hidden_state  # (B·C, T, H)
    vectors = POOLING[pooling](hidden, flat["attention_mask"]).view(B, C, -1)  # (B, C, H)
    return F.normalize(vectors, dim=-1) if normalize else vectors


def embedding_loss(name: str, settings: EmbeddingConfig, v: torch.Tensor, scores: torch.Tensor | None):
    """The loss ``name`` of the vectors v (B, C, H) — anchors v[:, 0], positives v[:, 1], negatives v[:, 2]."""
    if name == "mnrl":
        negatives = v[:, 2] if v.shape[1] > 2 else None
        return losses.multiple_negatives_ranking_loss(v[:, 0], v[:, 1], negatives, scale=settings.scale)
    if name == "cosent":
        return losses.cosent_loss(v[:, 0], v[:, 1], scores, scale=settings.scale)
    if name == "cosine":
        return losses.cosine_similarity_loss(v[:, 0], v[:, 1], scores)
    return losses.triplet_loss(v[:, 0], v[:, 1], v[:, 2], margin=settings.margin)


def collate_texts(features: list[dict], pad_token_id: int) -> dict:
    """A batch of examples' texts padded together, (B, C, T), and their scores (B,) when scored."""
    batch = collate(features, pad_token_id)
    if "score" in features[0]:
        batch["scores"] = torch.tensor([f["score"] for f in features])
    return batch


@torch.no_grad()
def vectors_of(model, features: list[dict], pad_token_id: int, batch_size: int, device, pooling, normalize):
    """Each example's vectors (C, H), in the examples' order (batches of similar length)."""
    plan = BucketBatchSampler([feature_length(f) for f in features], batch_size=batch_size, shuffle=False)
    out: list = [None] * len(features)
    for indices in plan.batches(0):
        batch = collate_texts([features[i] for i in indices], pad_token_id)
        v = pooled(model, {k: t.to(device) for k, t in batch.items()}, pooling, normalize).float().cpu()
        for i, row in zip(indices, v, strict=True):
            out[i] = row
    return out


# --- the directory sentence-transformers reads
def write_sentence_modules(directory: Path, pooling: str, normalize: bool, hidden_size: int, seq_length: int):
    """modules.json (Transformer, Pooling, Normalize), 1_Pooling/config.json, sentence_bert_config.json."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append(
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        )
        (directory / "2_Normalize").mkdir(exist_ok=True)
    (directory / "1_Pooling").mkdir(exist_ok=True)
    modes = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens")
    pooling_config = {"word_embedding_dimension": hidden_size, **{m: m == pooling for m in modes}}
    pooling_config["pooling_mode_mean_sqrt_len_tokens"] = False
    for path, content in (
        (directory / "modules.json", modules),
        (directory / "1_Pooling" / "config.json", pooling_config),
        (directory / "sentence_bert_config.json", {"max_seq_length": seq_length, "do_lower_case": False}),
        (directory / "config_sentence_transformers.json", {"prompts": {}, "similarity_fn_name": "cosine"}),
    ):
        config_io.atomic_write_text(path, json.dumps(content, indent=2) + "\n")


# --- the run
def dropout_overrides(cfg) -> dict[str, float]:
    """The dropout probabilities set for a run (a FinetuneConfig), in place of the checkpoint's (BertConfig
    field names)."""
    names = ("hidden_dropout_prob", "attention_probs_dropout_prob")
    return {name: getattr(cfg, name) for name in names if getattr(cfg, name) is not None}


def train_embeddings(cfg, out_dir: Path, *, resume: bool = False, progress_bar: bool = True) -> dict:
    """Train ``cfg.init``'s encoder (a recipes/finetune.py ``FinetuneConfig`` of the sentence-embedding task)
    on ``cfg.data``'s files; returns the results row (the validation metrics of the best checkpoint)."""

    out_dir, data, task, settings = Path(out_dir), cfg.data, cfg.data.spec, cfg.embedding
    if not cfg.init:
        raise ConfigError("init: give the encoder to start from (--init DIR)")
    if cfg.train.lora.r:  # LoRA's adapters are written for a task head's run, not yet for a bi-encoder's
        raise ConfigError("train.lora.r: --task sentence-embedding trains every weight (set train.lora.r=0)")
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    family = registry.family_at(cfg.init)
    if (
        family.kind != "encoder"
        or family.text_inputs is not None
        or "base" not in family.heads
        or family.word_vectors
    ):
        raise ConfigError(
            f"{cfg.init}: a {family.model_type} model; sentence embeddings are trained from an encoder that "
            "reads token ids (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA, a sentence-transformers directory)"
        )
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # 1. the examples
    train_examples, dev_examples = task_examples(data, cfg.train.seed)
    files.require_triplets(data, train_examples)
    files.check_valid(dev_examples, data.valid)
    shape = files.shape(train_examples)
    loss_name = loss_for(shape, settings.loss)
    # 2. the encoder, its pooling and normalisation
    model, tok, _ = init_task_model(
        family,
        cfg.init,
        family.heads["base"],
        random_init=cfg.random_init,
        overrides=dropout_overrides(cfg),
    )
    if tok is None:
        raise DataError(f"{cfg.init}: no tokenizer (vocab.txt or tokenizer.json) in the checkpoint")
    init_dir = registry.checkpoint_dir(cfg.init)
    pooling, normalize = sentence_modules(init_dir)
    pooling = MODES[settings.pooling] if settings.pooling else pooling
    normalize = normalize if settings.normalize is None else settings.normalize
    if not data.max_seq_length and default_max_length(init_dir, 0):  # a sentence-transformers directory's
        own = default_max_length(init_dir, 0)
        data = replace(data, max_seq_length=min(own, max_input_length(model.config, own)))
    data = fit_length(data, model.config, cfg.init)
    if shape == "sentences" and not getattr(model.config, "hidden_dropout_prob", 0.1):
        log.warning("SimCSE: the encoder's dropout is 0; both views of a sentence are then the same")
    log.info(
        "%s training data (%s): loss %s, pooling %s%s",
        shape,
        data.train,
        "SimCSE (MNRL of two dropout views)" if shape == "sentences" else loss_name,
        pooling,
        ", normalised" if normalize else "",
    )
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    train_features = task.features(train_examples, tok, None, data, progress=progress_bar)
    dev_features = task.features(dev_examples, tok, None, data, progress=progress_bar)
    # random batches (pools of one batch): in-batch negatives drawn from the whole file, not by length
    plan = BucketBatchSampler(
        [feature_length(f) for f in train_features],
        batch_size=data.batch_size,
        shuffle=True,
        seed=cfg.train.seed,
        pool_factor=1,
        num_replicas=dist.world_size,
        rank=dist.rank,
    )
    # 3. the engine
    train_cfg = cfg.train
    if train_cfg.metric == "main":
        train_cfg = replace(train_cfg, metric=files.main_metric(dev_examples), higher_is_better=True)
    total = train_cfg.max_steps or train_cfg.max_epochs * math.ceil(
        len(plan.batches(0)) / train_cfg.accumulate
    )
    if train_cfg.warmup_steps == 0 and cfg.warmup_ratio > 0:
        train_cfg = replace(train_cfg, warmup_steps=max(1, round(cfg.warmup_ratio * total)))
    torch.manual_seed(cfg.train.seed + dist.rank)
    hidden_size = model.config.hidden_size

    def write_extra(directory: Path) -> None:
        tok.save(directory)
        write_run_config(directory, cfg)
        write_sentence_modules(directory, pooling, normalize, hidden_size, data.seq_length)

    def score(m) -> tuple[dict, list]:
        outputs = vectors_of(m, dev_features, pad, data.batch_size, device, pooling, normalize)
        preds = task.predictions(outputs, dev_examples, dev_features, None, data)
        return task.metrics(dev_examples, preds), preds

    def loss_fn(m, batch: dict) -> torch.Tensor:
        return embedding_loss(loss_name, settings, pooled(m, batch, pooling, normalize), batch.get("scores"))

    trainer = Trainer(
        model,
        train_cfg,
        plan=plan,
        collate=lambda indices: collate_texts([train_features[i] for i in indices], pad),
        out_dir=out_dir,
        evaluate=lambda m: score(m)[0],
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
        "sentence embeddings from %s: %s parameters; %d training examples, %d validation pairs",
        cfg.init,
        f"{count_parameters(model):,}",
        len(train_examples),
        len(dev_examples),
    )
    result = trainer.fit(resume=resume)
    row = {
        "task": data.task,
        "init": "random" if cfg.random_init else cfg.init,
        "shape": shape,
        "loss": "simcse" if shape == "sentences" else loss_name,
        "pooling": pooling.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token"),
        "normalize": normalize,
        "params": count_parameters(model),
        "train_examples": len(train_examples),
        "steps": result.progress.step,
        "train_seconds": result.progress.train_seconds,
        "tokens_per_s": result.tokens_per_second,
    }
    if dist.is_main and (out_dir / "best").is_dir():  # 5. the best checkpoint's validation scores
        load_hf_weights(family, model, out_dir / "best")
        model.eval()
        metrics, preds = score(model)
        row.update({f"dev_{k}": v for k, v in metrics.items()}, best_step=result.progress.best_step)
        task.write_predictions(out_dir / "predictions.jsonl", dev_examples, preds, None)
        row["run_dir"] = str(out_dir)
        write_results(out_dir, row)
    cleanup()
    return row


def recorded_data(checkpoint: str | Path) -> FinetuneDataConfig | None:
    """The data section of the sentence-embedding run that wrote ``checkpoint`` (a run directory or a
    checkpoint in one), None when it is not one."""
    directory = registry.checkpoint_dir(checkpoint)
    run = directory / "run.json"
    recorded = ckpt.read_json(run).get("data") if run.is_file() else None
    if not isinstance(recorded, dict) or recorded.get("task") != files.SENTENCE_EMBEDDING.name:
        return None
    return config_io.from_dict(FinetuneDataConfig, recorded, f"{run}: data.")


def evaluate_embeddings(
    checkpoint: str | Path,
    data: FinetuneDataConfig | None = None,
    *,
    out: str | Path | None = None,
    bf16: bool = False,
) -> dict:
    """The validation metrics of any encoder directory's sentence embeddings as `seq2bert embed` gives them
    (its own pooling and normalisation: a sentence-transformers directory's modules, else mean pooling) on
    ``data``'s validation pairs — STS-B dev Spearman of all-MiniLM-L6-v2 as it is, of a trained run, of a
    pretrained BERT's mean pooling. Writes the predictions to ``out`` when given."""
    data = data or recorded_data(checkpoint)
    if data is None:
        raise ConfigError(f"{checkpoint}: not a sentence-embedding run; give --valid FILE and its columns")
    task = data.spec
    examples = labelled_dev(data)
    files.check_valid(examples, data.valid)
    directory = registry.checkpoint_dir(checkpoint)
    texts = [t for e in examples for t in e.texts]
    vectors = embed(
        texts, str(directory), batch_size=data.batch_size, max_length=data.max_seq_length or None, bf16=bf16
    )
    per = len(examples[0].texts)
    outputs = list(vectors.view(len(examples), per, -1))
    preds = task.predictions(outputs, examples, [], None, data)
    metrics = task.metrics(examples, preds)
    if out is not None:
        task.write_predictions(Path(out), examples, preds, None)
    return {
        "task": data.task,
        "checkpoint": str(directory),
        "examples": len(examples),
        **{f"dev_{k}": v for k, v in metrics.items()},
    }
