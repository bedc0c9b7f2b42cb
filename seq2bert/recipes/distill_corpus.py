"""Recipe: general distillation — a student learns from a pretrained teacher on raw text, before any task:
DistilBERT's pretraining (Sanh et al. 2019, Sect. 3) or TinyBERT's general distillation (Jiao et al. 2019,
Sect. 3.2, Figure 2: "general distillation" on a large corpus, then task-specific distillation).

Read top to bottom:
1. the teacher: a pretrained directory — with a masked-LM head for DistilBERT, whose L_ce reads the teacher's
   MLM distribution at the masked positions and whose L_mlm is the student's own (BertForMaskedLM /
   BertForPreTraining); any encoder for TinyBERT, whose general distillation reads the layers only;
2. the student as task distillation makes it (recipes/distill.py): fewer layers, of the teacher's width from
   its layers g(m) (DistilBERT: "taking one layer out of two"), narrower from random weights;
3. the corpus as `seq2bert pretrain` prepares it (the ``corpus`` section: PretrainDataConfig), tokenized with
   the teacher's vocabulary, in single segments (DOC-SENTENCES) with BERT's masking drawn anew each epoch
   (RoBERTa's dynamic masking, which DistilBERT trains with); both models read the masked text, as TinyBERT's
   released general distillation does (its data is BERT's pregenerated, masked instances);
4. the loss: distilbert 5 · T² · L_ce(T = 2) + 2 · L_mlm + 1 · L_cos; tinybert L_embd + Σ_m (L_attn + L_hidn)
   (``loss.<term>`` overrides); held-out: the same loss, its terms, and for a masked-LM student its accuracy;
5. OUT/best: the student's Hugging Face directory (BertForMaskedLM, or BertModel for TinyBERT's), which
   `seq2bert distill --task … --set student.init=OUT/best` then distils on a task, or `seq2bert finetune`
   fine-tunes.

    seq2bert distill --teacher runs/bert-mini/best --corpus ../shared/data/corpus --out runs/distil-corpus
    seq2bert distill --teacher $MINILM --corpus ../shared/data/corpus --out runs/tiny4-general \\
        --set method=tinybert --set student.num_hidden_layers=4 --set student.hidden_size=256
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch

from seq2bert.config import from_dict, to_dict
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.distillation import Distiller, DistillWeights
from seq2bert.recipes.distill import (
    STAGE_WEIGHTS,
    DistillConfig,
    before_start,
    distiller_trainer,
    make_student,
)
from seq2bert.recipes.pretrain import PretrainConfig, masked_instances
from seq2bert.recipes.pretrain_data import (
    file_stamp,
    held_out,
    held_out_corpus,
    inputs_of,
    prepared_from,
    tokenized_corpus,
)
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import count_parameters, seed_everything, write_results, write_run_config

log = logging.getLogger(__name__)


def corpus_weights(cfg: DistillConfig) -> DistillWeights:
    """DistilBERT's triple loss, or TinyBERT's stage of general distillation (the intermediate layers)."""
    if cfg.method in ("none", "mobilebert"):
        raise ConfigError(
            f"method: {cfg.method} is a task's distillation (--task, from a fine-tuned teacher); general "
            "distillation is distilbert or tinybert"
        )
    stage = "distilbert" if cfg.method == "distilbert" else "intermediate"
    return from_dict(DistillWeights, {**to_dict(STAGE_WEIGHTS[stage]), **cfg.loss})


@torch.no_grad()
def evaluate(model: Distiller, data, indices: list[int], keep: tuple[str, ...], device) -> dict:
    """The held-out loss and its terms (each the weighted sum's part), and a masked-LM student's accuracy;
    ``keep``: the batch entries the two models read."""
    was = model.training
    model.eval()
    totals: dict[str, float] = {}
    correct = total = batches = 0
    for start in range(0, len(indices), data.batch_size):
        batch = {
            k: v.to(device)
            for k, v in data.collate(indices[start : start + data.batch_size]).items()
            if k in keep
        }
        loss = model(**batch)
        for k, v in {"loss": float(loss), **model.parts}.items():
            totals[k] = totals.get(k, 0.0) + v
        batches += 1
        if "labels" in batch and model.weights.hard:
            logits = model.student(**batch, **model.options).logits  # (N, V) at the masked positions
            targets = batch["labels"][batch["labels"].ne(IGNORE_INDEX)]
            correct += int((logits.argmax(-1) == targets).sum())
            total += targets.numel()
    model.train(was)
    out = {k: v / max(batches, 1) for k, v in totals.items()}
    return out | ({"mlm_accuracy": 100.0 * correct / total} if total else {})


@ckpt.holds_run_dir(check=before_start)
def distill_corpus(
    cfg: DistillConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """General distillation of ``cfg.teacher`` on ``cfg.corpus.files``; returns a results row."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    weights = corpus_weights(cfg)
    mlm = bool(weights.soft or weights.hard)
    files = cfg.corpus.text_files()
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # 1. the teacher
    try:
        teacher, tok = registry.load(
            registry.checkpoint_dir(cfg.teacher), head="masked_lm" if mlm else "base", device=device
        )
    except CheckpointError as e:
        hint = " (DistilBERT's L_ce and L_mlm read a masked-LM head; method=tinybert reads the layers only)"
        raise CheckpointError(f"{e}{hint if mlm else ''}") from None
    if tok is None:
        raise ConfigError(f"{cfg.teacher}: no tokenizer in the teacher's directory")
    family = registry.family_of(teacher)
    architecture = family.architecture_of(teacher)
    # 2. the student
    seed_everything(cfg.train.seed)
    student = make_student(replace(cfg, student=replace(cfg.student, init="")), family, teacher, architecture)
    # 3. the corpus, masked single segments
    teacher_tokenizer = {
        "teacher": [file_stamp(f) for f in sorted(registry.checkpoint_dir(cfg.teacher).glob("*.json"))]
    }
    prepared_from(out_dir, inputs_of(files, cfg.corpus, teacher_tokenizer, False), resume, dist)
    corpus = tokenized_corpus(files, tok, out_dir / "corpus", cfg.corpus, False, dist, progress_bar)
    valid_corpus = held_out_corpus(cfg.corpus, tok, out_dir, False, dist, progress_bar)  # corpus.valid_files
    train_docs, valid_docs = held_out(corpus, cfg.corpus, cfg.train.seed, least=1, valid=valid_corpus)
    data = replace(cfg.corpus, sentence_task="none", masking="dynamic")
    pretrain_cfg = PretrainConfig(data=data, train=cfg.train)
    train, valid, indices = masked_instances(
        pretrain_cfg,
        corpus,
        train_docs,
        valid_docs,
        tok,
        dist,
        "none",
        "next_sentence_label",
        False,
        valid_corpus,
    )
    # 4. the loss and the engine
    options = family.pretraining_options if mlm else {}  # the MLM head at the masked positions only
    model = Distiller(
        student.to(device),
        teacher,
        family.base_model(student),
        family.base_model(teacher),
        weights,
        options=options,
    )
    keep = ("input_ids", "attention_mask", "token_type_ids") + (("labels",) if mlm else ())

    def collate(indices: list[int]) -> dict:
        return {k: v for k, v in train.collate(indices).items() if k in keep}

    train_cfg = (
        replace(cfg.train, metric="loss", higher_is_better=False) if cfg.train.metric == "main" else cfg.train
    )
    evaluation = partial(evaluate, data=valid, indices=indices, keep=keep, device=device)
    trainer = distiller_trainer(
        model,
        train_cfg,
        family,
        tok,
        out_dir,
        train,
        collate,
        evaluation,
        lambda directory: write_run_config(directory, cfg),
        device,
        dist,
        progress_bar,
    )
    log.info(
        "general distillation (%s): %s, %s parameters, from %s (%s); %s tokens in %d documents",
        cfg.method,
        architecture,
        f"{count_parameters(student):,}",
        cfg.teacher,
        f"{count_parameters(teacher):,}",
        f"{corpus.info['tokens']:,}",
        corpus.num_documents,
    )
    result = trainer.fit(resume=resume)
    row = {
        "method": cfg.method,
        "teacher": cfg.teacher,
        "params": count_parameters(student),
        "teacher_params": count_parameters(teacher),
        "layers": student.config.num_hidden_layers,
        "hidden_size": student.config.hidden_size,
        "steps": result.progress.step,
        "train_seconds": result.progress.train_seconds,
        "tokens_per_s": result.tokens_per_second,
        **{f"valid_{k}": v for k, v in result.progress.last_eval.items()},
        "run_dir": str(out_dir),
    }
    if dist.is_main:
        write_results(out_dir, row)
    cleanup()
    return row
