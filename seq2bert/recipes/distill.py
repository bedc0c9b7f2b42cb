"""Recipe: distil a fine-tuned teacher into a smaller student on its task — DistilBERT's loss (Sanh et al. 2019)
or TinyBERT's two-stage task-specific distillation (Jiao et al. 2019, Sect. 3.2) — or fine-tune the same
student without a teacher, the comparison that says what distillation buys.

Read top to bottom:
1. the teacher: a fine-tuned task model directory (BertForSequenceClassification, …ForTokenClassification,
   …ForQuestionAnswering) whose head fits the task; its tokenizer and labels are the student's;
2. the student: the teacher's config with fewer layers (``student.num_hidden_layers``; half by default, as
   DistilBERT) and, if asked, a narrower width (TinyBERT-4: 4 layers of 256). Of the teacher's width it
   starts from the teacher's weights — the embeddings, layer g(m) = m·N/M for its layer m (TinyBERT's
   uniform map; DistilBERT's "one layer out of two" for M = N/2), the pooler and the task head; narrower, from
   random weights, or from ``student.init`` (a directory: a student distilled before, say);
3. the task's data as `seq2bert finetune` reads it (recipes/finetune.py), batches bucketed by length;
4. the loss (objectives/distillation.py), by ``method``:
     distilbert  5 · T² · L_ce(T = 2) + 2 · L_task + 1 · L_cos — DistilBERT's weights, its L_mlm the task's loss
     tinybert    stage 1, ``tinybert.intermediate_epochs`` epochs at ``tinybert.intermediate_lr``: L_embd +
                 Σ_m (L_attn + L_hidn) (Eq. 7–9), into OUT/intermediate; stage 2 from its last weights,
                 train.max_epochs: L_pred (Eq. 10, t = 1) alone, into OUT
     mobilebert  MobileBERT's progressive knowledge transfer (recipes/distill_mobilebert.py): a MobileBERT-
                 shaped student of the teacher's width between blocks; stage ℓ = 1 … L trains block ℓ alone on
                 L_FMT + L_AT of layer ℓ, into OUT/transfer/layer-ℓ; then pre-training distillation,
                 ½ L_task + ½ L_KD, train.max_epochs, into OUT
     none        L_task alone: fine-tuning the student, no teacher
   with ``augment.copies`` = N_a, TinyBERT's augmented copies of each training sentence join them
   (data/augment.py, recipes/distill_augment.py);
   ``loss.<term>`` overrides a weight of the method's last stage (soft, hard, cos, attention, hidden,
   temperature);
5. the engine as fine-tuning's (AdamW, linear warm-up over 10 % then decay, dev scored every evaluation, the
   best student kept): OUT/best is a Hugging Face directory of the student; results.json has its dev scores,
   the teacher's (scored here, on the same features) and the share of the teacher's it keeps.

    seq2bert distill --teacher runs/minilm-sst2/best --task sst2 --data ../shared/data/sst2 --out runs/sst2-l3
    seq2bert distill … --set method=tinybert --set student.num_hidden_layers=4 --set student.hidden_size=256
    seq2bert distill … --set method=mobilebert --set mobilebert.layer_epochs=1
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from safetensors.torch import load_file
from torch import nn

from seq2bert.config import from_dict, to_dict
from seq2bert.data.augment import AugmentConfig, augment_examples
from seq2bert.data.batching import BucketBatchSampler
from seq2bert.data.finetuning import feature_length
from seq2bert.errors import ConfigError, DataError, UserError
from seq2bert.io import read_json, save_tensors
from seq2bert.models import registry
from seq2bert.models.pretrained import init_task_model, load_hf_weights, write_hf_files
from seq2bert.objectives.distillation import Distiller, DistillWeights, layer_map
from seq2bert.recipes import distill_decoder, distill_mobilebert
from seq2bert.recipes.distill_augment import candidates_for
from seq2bert.recipes.distill_mobilebert import MobileBertTransferConfig
from seq2bert.recipes.pretrain_data import PretrainDataConfig
from seq2bert.recipes.scoring import encode, fit_length, score, write_predictions
from seq2bert.recipes.scratch import batch_of
from seq2bert.tasks.data import FinetuneDataConfig, task_examples
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import (
    check_model_fits,
    check_out_dir,
    count_parameters,
    seed_everything,
    write_results,
    write_run_config,
)
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

METHODS = ("distilbert", "tinybert", "mobilebert", "none")
STAGE_WEIGHTS = {
    "distilbert": DistillWeights(soft=5.0, hard=2.0, cos=1.0, temperature=2.0),  # DistilBERT's train.py
    "intermediate": DistillWeights(attention=1.0, hidden=1.0),  # TinyBERT, stage 1
    "prediction": DistillWeights(soft=1.0, temperature=1.0),  # TinyBERT, stage 2
    distill_mobilebert.STAGE: DistillWeights(
        hidden=1.0, attention_kl=1.0
    ),  # MobileBERT: L_FMT + L_AT, a layer
    "pd": DistillWeights(soft=0.5, hard=0.5),  # MobileBERT's pre-training distillation, α = 1/2
    "none": DistillWeights(hard=1.0),
}
PROJECTIONS = "projections.safetensors"  # W_h / W_e of a checkpoint of a student narrower than its teacher


@dataclass
class StudentConfig:
    """The student: the teacher's config with these fields changed (0: the default said)."""

    init: str = ""  # a directory to start from (its weights, the task head new if it has none)
    num_hidden_layers: int = 0  # 0: half the teacher's (DistilBERT)
    hidden_size: int = 0  # 0: the teacher's
    # 0: the teacher's at its width; narrower, the largest divisor of the teacher's that divides hidden_size
    # (each student head then learns the mean of a group of teacher heads: objectives/distillation.py)
    num_attention_heads: int = 0
    intermediate_size: int = 0  # 0: the teacher's at its width, else 4 × hidden_size

    def validate(self) -> None:
        for name in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size"):
            if getattr(self, name) < 0:
                raise ConfigError(f"student.{name}: must be >= 0 (0: the default), got {getattr(self, name)}")

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class TinyBertConfig:
    intermediate_epochs: int = 4  # stage 1 (TinyBERT: 20 on GLUE; a CPU budget here)
    intermediate_lr: float = 5e-5  # TinyBERT's stage-1 learning rate

    def __post_init__(self) -> None:
        if self.intermediate_epochs < 1 or not self.intermediate_lr > 0:
            raise ConfigError("tinybert: intermediate_epochs must be >= 1 and intermediate_lr > 0")


@dataclass
class DistillConfig:
    teacher: str = ""  # a fine-tuned task model directory
    method: Literal["distilbert", "tinybert", "mobilebert", "none"] = "distilbert"
    student: StudentConfig = field(default_factory=StudentConfig)
    loss: dict[str, float] = field(default_factory=dict)  # overrides of the method's weights (DistillWeights)
    tinybert: TinyBertConfig = field(default_factory=TinyBertConfig)
    mobilebert: MobileBertTransferConfig = field(default_factory=MobileBertTransferConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)  # TinyBERT's (data/augment.py)
    data: FinetuneDataConfig = field(default_factory=FinetuneDataConfig)
    # general distillation (recipes/distill_corpus.py): the text files and how they are read and masked
    corpus: PretrainDataConfig = field(default_factory=PretrainDataConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            lr=1e-4, weight_decay=0.01, schedule="linear", max_epochs=3, metric="main"
        )
    )
    warmup_ratio: float = 0.1

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"method: expected one of {', '.join(METHODS)}, got {self.method!r}")
        known = set(to_dict(DistillWeights()))
        unknown = sorted(set(self.loss) - known)
        if unknown:
            raise ConfigError(
                f"loss: unknown term(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        for stage in self.stages():
            try:
                self.weights(stage).validate()
            except ValueError as e:
                raise ConfigError(f"loss: {e}") from None

        check_augmentable(self)

    def stages(self) -> list[str]:
        if self.method == "mobilebert":
            return [distill_mobilebert.STAGE, "pd"]
        return ["intermediate", "prediction"] if self.method == "tinybert" else [self.method]

    def weights(self, stage: str) -> DistillWeights:
        """The stage's weights; ``loss`` overrides those of the last stage (TinyBERT's prediction stage)."""
        overrides = self.loss if stage == self.stages()[-1] else {}
        return from_dict(DistillWeights, {**to_dict(STAGE_WEIGHTS[stage]), **overrides})


def check_augmentable(cfg: DistillConfig) -> None:
    """TinyBERT's augmentation replaces words of sentences: a task whose examples are sentences or pairs."""
    if cfg.augment.copies and not cfg.data.spec.augmentable:
        raise ConfigError(
            f"augment.copies: sentence and pair tasks only (TinyBERT's GLUE), not {cfg.data.task}"
        )


# --- 2. the student
def student_config(teacher: Any, s: StudentConfig) -> Any:
    """The teacher's config with the student's fields."""
    H_t, A_t = teacher.hidden_size, teacher.num_attention_heads
    H = s.hidden_size or H_t
    heads = s.num_attention_heads or (
        A_t if H == H_t else max(a for a in range(1, A_t + 1) if A_t % a == 0 and H % a == 0)
    )
    layers = s.num_hidden_layers or max(1, teacher.num_hidden_layers // 2)
    if layers > teacher.num_hidden_layers:
        raise ConfigError(
            f"student.num_hidden_layers: {layers}, more than the teacher's {teacher.num_hidden_layers}"
        )
    config = replace(
        teacher,
        num_hidden_layers=layers,
        hidden_size=H,
        num_attention_heads=heads,
        intermediate_size=s.intermediate_size or (teacher.intermediate_size if H == H_t else 4 * H),
    )
    try:
        config.validate()
    except (ValueError, ConfigError) as e:
        raise ConfigError(f"student: {e}") from None
    return config


LAYER_KEY = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def copy_from_teacher(student: nn.Module, teacher: nn.Module, mapping: list[int]) -> list[str]:
    """Load into the student every teacher tensor of the same name and shape, its layer m (1-based) from the
    teacher's layer mapping[m − 1]; returns the names of the student's tensors left as they were."""
    source, state = teacher.state_dict(), student.state_dict()
    copied = {}
    for key, value in state.items():
        m = LAYER_KEY.search(key)
        src = key if m is None else key[: m.start(1)] + str(mapping[int(m.group(1))] - 1) + key[m.end(1) :]
        if src in source and source[src].shape == value.shape:
            copied[key] = source[src]
    student.load_state_dict(copied, strict=False)
    return [k for k in state if k not in copied]


def config_of_student(cfg: DistillConfig, teacher: Any) -> Any:
    """The student's config from the teacher's: the teacher's with the student's fields, or with
    method=mobilebert a MobileBERT of the teacher's width between blocks (recipes/distill_mobilebert.py)."""
    if cfg.method != "mobilebert":
        return student_config(teacher, cfg.student)
    s = cfg.student
    return distill_mobilebert.student_config(
        teacher,
        cfg.mobilebert,
        s.num_hidden_layers,
        s.num_attention_heads,
        s.intermediate_size,
        s.hidden_size,
    )


def family_of_student(cfg: DistillConfig, family):
    """The student's family: the teacher's, or MobileBERT's with method=mobilebert."""
    return registry.get("mobilebert") if cfg.method == "mobilebert" else family


def make_student(cfg: DistillConfig, family, teacher: nn.Module, architecture: str) -> nn.Module:
    """The student of step 2 (see the module docstring): ``family`` and ``architecture`` are the student's."""
    config = config_of_student(cfg, teacher.config)
    if cfg.student.init:
        student, _, new = init_task_model(
            family,
            cfg.student.init,
            architecture,
            id2label=teacher.config.id2label,
            problem_type=getattr(teacher.config, "problem_type", None),
        )
        log.info("student from %s%s", cfg.student.init, f"; new: {', '.join(new)}" if new else "")
        return student
    student = family.make(config, architecture)
    if cfg.method == "mobilebert":
        log.info(
            "MobileBERT student (feature maps %d wide, bottleneck %d): from the teacher: %s; the rest random",
            config.hidden_size,
            config.intra_bottleneck_size,
            ", ".join(distill_mobilebert.copy_outside_blocks(student, teacher)) or "nothing",
        )
    elif config.hidden_size == teacher.config.hidden_size:
        mapping = layer_map(config.num_hidden_layers, teacher.config.num_hidden_layers)
        left = copy_from_teacher(student, teacher, mapping)
        log.info(
            "student initialised from the teacher's embeddings and layers %s%s",
            mapping,
            f"; not from the teacher: {', '.join(left)}" if left else "",
        )
    else:
        log.info(
            "student of width %d (teacher %d): random initial weights",
            config.hidden_size,
            teacher.config.hidden_size,
        )
    return student


# --- the stages of a method
@dataclass
class Stage:
    """One training stage: its name, directory, loss weights and engine settings; the student depths its
    layer terms read (None: every one) and the block it trains alone (MobileBERT's progressive transfer;
    None: every parameter); the last stage writes OUT itself."""

    name: str
    directory: Path
    weights: DistillWeights
    train: TrainConfig
    depths: set[int] | None = None
    block: int | None = None
    last: bool = False


def plan_stages(cfg: DistillConfig, out_dir: Path, student_layers: int) -> list[Stage]:
    """The method's stages in order: TinyBERT's intermediate stage in OUT/intermediate, MobileBERT's one
    stage per layer in OUT/transfer/layer-ℓ, then the last stage in OUT."""
    names = cfg.stages()
    stages = []
    for name in names[:-1]:
        if name == distill_mobilebert.STAGE:
            m = cfg.mobilebert
            # the task's dev score says nothing of a block's transfer (its head is frozen): no early stop on
            # it, no averaging of its checkpoints
            train = replace(
                cfg.train,
                max_epochs=m.layer_epochs,
                max_steps=m.layer_steps,
                lr=m.layer_lr,
                patience=0,
                average_last=0,
            )
            for layer in range(1, student_layers + 1):
                depths = {0, 1} if layer == 1 else {layer}  # stage 1 learns the embeddings' output too
                directory = out_dir / name / f"layer-{layer}"
                stages.append(Stage(f"layer-{layer}", directory, cfg.weights(name), train, depths, layer))
        else:
            t = cfg.tinybert
            train = replace(cfg.train, max_epochs=t.intermediate_epochs, lr=t.intermediate_lr, max_steps=0)
            stages.append(Stage(name, out_dir / name, cfg.weights(name), train))
    return [*stages, Stage(names[-1], out_dir, cfg.weights(names[-1]), cfg.train, last=True)]


def stage_budget(train: TrainConfig, spent: float) -> TrainConfig:
    """A stage's engine settings under the command's time budget: train.max_minutes bounds the whole
    distillation, so a stage gets what the stages before it (``spent`` seconds) left — a moment, if none."""
    if not train.max_minutes:
        return train
    return replace(train, max_minutes=max(train.max_minutes - spent / 60, 1e-3))


# --- checkpoints: the student as a Hugging Face directory, W_h / W_e beside it
def save_distiller(family, tok, model: Distiller, directory: Path) -> None:
    write_hf_files(family, model.student, directory)
    tok.save(directory)
    projections = {k: v for k, v in model.state_dict().items() if k.startswith(("W_h.", "W_e."))}
    if projections:
        save_tensors({k: v.contiguous() for k, v in projections.items()}, str(directory / PROJECTIONS))


def load_distiller(family, model: Distiller, directory: Path) -> None:
    load_hf_weights(family, model.student, directory)
    if (directory / PROJECTIONS).is_file():
        model.load_state_dict(load_file(str(directory / PROJECTIONS)), strict=False)


# --- the run
def distiller_trainer(
    model: Distiller,
    train_cfg: TrainConfig,
    family,
    tok,
    out_dir: Path,
    plan,
    collate,
    evaluate,
    write_extra,
    device,
    dist,
    progress_bar: bool,
) -> Trainer:
    """The engine over a Distiller: its loss, the student's tokens, checkpoints of the student (and W_h)."""
    return Trainer(
        model,
        train_cfg,
        plan=plan,
        collate=collate,
        out_dir=out_dir,
        evaluate=evaluate,
        write_extra=write_extra,
        loss_fn=lambda m, batch: m(**batch),
        count_tokens=lambda batch: int(batch["attention_mask"].sum()),
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=partial(save_distiller, family, tok),
        load_model=partial(load_distiller, family),
        plot_curves=plot_training_curves,
    )


def load_teacher(cfg: DistillConfig, device) -> tuple[nn.Module, Any, Any, str]:
    """(teacher, tokenizer, family, architecture): a task model whose head is the task's."""
    if not cfg.teacher:
        raise ConfigError("teacher: give the fine-tuned teacher's directory (--teacher DIR)")
    teacher, tok = registry.load(
        registry.checkpoint_dir(cfg.teacher), device=device
    )  # a run directory: its best/
    family = registry.family_of(teacher)
    head = cfg.data.spec.head
    architecture = family.heads.get(head)
    if architecture is None or type(teacher).__name__ != architecture:
        raise ConfigError(
            f"{cfg.teacher}: a {type(teacher).__name__}; task {cfg.data.task} needs a fine-tuned "
            f"{architecture or head + ' model'} as the teacher"
        )
    if tok is None:
        raise DataError(f"{cfg.teacher}: no tokenizer in the teacher's directory")
    return teacher, tok, family, architecture


def before_start(cfg: DistillConfig, out_dir: Path) -> None:
    """What a run refuses before its directory is made (distill and distill_corpus): an ``out_dir`` among its
    inputs (the teacher, the student's start, the task's folder, the corpus), a student larger than the
    machine's memory (the teacher's config with the student's fields; the teacher's weights are not read)."""
    corpus = (*cfg.corpus.files, cfg.corpus.tokenizer)
    data = cfg.data
    check_out_dir(
        out_dir,
        (
            cfg.teacher,
            cfg.student.init,
            data.path,
            data.train,
            data.valid,
            data.test,
            cfg.augment.mlm,
            *corpus,
        ),
    )
    if not cfg.teacher or cfg.student.init:
        return
    try:  # a teacher that cannot be read is reported by the run, as it loads it
        directory = registry.checkpoint_dir(cfg.teacher)
        family = registry.family_at(directory)
        teacher = family.read_config(read_json(directory / "config.json"), str(directory / "config.json"))
    except UserError:
        return
    if distill_decoder.is_decoder_teacher(family):
        config = distill_decoder.student_config(teacher, cfg.student.num_hidden_layers)
    else:
        config = config_of_student(cfg, teacher)
    build = partial(family_of_student(cfg, family).make, config)
    check_model_fits(build, cfg.student, cfg.train.optimizer, key="student", reference=teacher)


@ckpt.holds_run_dir(check=before_start)
def distill(
    cfg: DistillConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Distil ``cfg.teacher`` into a student on ``cfg.data.task``; returns a results row (the student's dev
    metrics, the teacher's, the share kept, both sizes)."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    teacher, tok, family, architecture = load_teacher(cfg, device)
    data = fit_length(cfg.data, teacher.config, cfg.teacher)
    train_examples, dev_examples = task_examples(data, cfg.train.seed)
    if cfg.augment.copies:  # TinyBERT's augmentation of the training sentences
        check_augmentable(cfg)
        words = candidates_for(cfg.augment, teacher, tok, family.base_model, device)
        train_examples = augment_examples(train_examples, cfg.augment, words, cfg.train.seed, progress_bar)
        log.info(
            "%d training examples with %d augmented copies each", len(train_examples), cfg.augment.copies
        )
    id2label = teacher.config.id2label
    train_features = encode(data, train_examples, tok, id2label, progress=progress_bar)
    dev_features = encode(data, dev_examples, tok, id2label, progress=progress_bar)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    teacher.eval()
    teacher_metrics, _ = score(data, teacher, dev_examples, dev_features, pad, device)
    log.info("teacher %s on %s dev: %s", cfg.teacher, data.task, teacher_metrics)
    seed_everything(cfg.train.seed)
    student_family = family_of_student(cfg, family)
    student_architecture = student_family.heads[data.spec.head]
    student = make_student(cfg, student_family, teacher, student_architecture).to(device)
    plan = BucketBatchSampler(
        [feature_length(f) for f in train_features],
        batch_size=data.batch_size,
        shuffle=True,
        seed=cfg.train.seed,
        num_replicas=dist.world_size,
        rank=dist.rank,
    )
    base = partial(family.base_model)
    metric = data.spec.main_metric_for(data)

    def evaluate(m: Distiller) -> dict:
        return score(data, m.student, dev_examples, dev_features, pad, device)[0]

    def collate(indices: list[int]) -> dict:
        return batch_of(student, [train_features[i] for i in indices], pad, data.spec.collate)

    def write_extra(directory: Path) -> None:
        write_run_config(directory, cfg)

    result, spent = None, 0.0  # spent: the seconds of the stages before this one
    for i, stage in enumerate(plan_stages(cfg, out_dir, student.config.num_hidden_layers)):
        seed_everything(cfg.train.seed + i)  # a stage's dropout does not hang on the stages a resume skips
        train_cfg = stage_budget(stage.train, spent)
        train_cfg = (
            replace(train_cfg, metric=metric, higher_is_better=True)
            if train_cfg.metric == "main"
            else train_cfg
        )
        total = train_cfg.max_steps or train_cfg.max_epochs * math.ceil(
            len(plan.batches(0)) / train_cfg.accumulate
        )
        if train_cfg.warmup_steps == 0 and cfg.warmup_ratio > 0:
            train_cfg = replace(train_cfg, warmup_steps=max(1, round(cfg.warmup_ratio * total)))
        if cfg.method == "mobilebert":  # block ℓ alone in its stage, everything in the last
            distill_mobilebert.train_only(student, stage.block)
        try:
            model = Distiller(
                student,
                teacher,
                student_family.base_model(student),
                base(teacher),
                stage.weights,
                depths=stage.depths,
            )
        except ValueError as e:  # L_cos between widths, heads that do not group
            raise ConfigError(f"student: {e} (method {cfg.method}; loss.cos=0 drops L_cos)") from None
        if not stage.last and (stage.directory / "results.json").is_file():  # a resumed run past this stage
            load_distiller(student_family, model, ckpt.latest_checkpoint(stage.directory))
            spent += read_json(stage.directory / "results.json").get("train_seconds", 0.0)
            continue
        trainer = distiller_trainer(
            model,
            train_cfg,
            student_family,
            tok,
            stage.directory,
            plan,
            collate,
            evaluate,
            write_extra,
            device,
            dist,
            progress_bar,
        )
        log.info(
            "%s: stage %s, weights %s; student %s parameters (%s trained in this stage), teacher %s",
            cfg.method,
            stage.name,
            to_dict(stage.weights),
            f"{count_parameters(student):,}",
            f"{sum(p.numel() for p in student.parameters() if p.requires_grad):,}",
            f"{count_parameters(teacher):,}",
        )
        result = trainer.fit(resume=resume)  # a stage cut before its first checkpoint starts again
        if not stage.last:  # the next stage starts from this one's last weights (not its best)
            load_distiller(student_family, model, ckpt.latest_checkpoint(stage.directory))
            seconds = result.progress.train_seconds
            spent += seconds
            if dist.is_main:
                write_results(
                    stage.directory,
                    {"stage": stage.name, "steps": result.progress.step, "train_seconds": seconds},
                )
    row = {
        "task": data.task,
        "method": cfg.method,
        "teacher": cfg.teacher,
        "params": count_parameters(student),
        "teacher_params": count_parameters(teacher),
        "layers": student.config.num_hidden_layers,
        "hidden_size": student.config.hidden_size,
        "train_examples": len(train_examples),
        "steps": result.progress.step,
        "train_seconds": spent + result.progress.train_seconds,  # every stage's
        **{f"teacher_dev_{k}": v for k, v in teacher_metrics.items()},
    }
    if dist.is_main and (out_dir / "best").is_dir():
        load_hf_weights(student_family, student, out_dir / "best")
        student.eval()
        metrics, preds = score(data, student, dev_examples, dev_features, pad, device)
        row.update({f"dev_{k}": v for k, v in metrics.items()}, best_step=result.progress.best_step)
        row["of_teacher"] = (
            100.0 * metrics[metric] / teacher_metrics[metric] if teacher_metrics[metric] else None
        )
        write_predictions(out_dir / "predictions.jsonl", data, dev_examples, preds, id2label)
        row["run_dir"] = str(out_dir)
        write_results(out_dir, row)
    cleanup()
    return row


# a causal LM's student on text (recipes/distill_decoder.py), holding its run directory as every recipe does
distill_language_model = ckpt.holds_run_dir(distill_decoder.distill_causal, check=before_start)
