"""Recipe: a shallower student of a decoder — the draft of speculative decoding (decoding/speculative.py) —
by word-level knowledge distillation (Kim & Rush 2016, Sect. 3.1; objectives/distillation.py
``NextTokenDistiller``): at every target position the student learns the teacher's next-token distribution
(soft targets at temperature T) beside the data's own next token.

    seq2bert distill --teacher runs/gpt-mini/best --corpus ../shared/data/corpus --out runs/gpt-mini-draft \
        --set student.num_hidden_layers=1
    seq2bert distill --teacher runs/m30k-transformer --out runs/m30k-draft --set student.num_hidden_layers=1

Read top to bottom:
1. the teacher: a causal LM (GPT, GPT-2) or a translation run (a Transformer), and its tokenizer — the
   student's, so that the two share a vocabulary as a draft must;
2. the student: the teacher's config with ``student.num_hidden_layers`` layers (the Transformer: as many in
   its encoder and in its decoder; default half the teacher's), started from the teacher's embeddings, output
   layer, final norm and its layers g(m) = m·N/M (TinyBERT's uniform map, DistilBERT's "one out of two");
3. the data: a causal LM's text files (``corpus``: tokenized once, contiguous blocks, documents held out as
   `seq2bert pretrain` holds them out); a Transformer's own training pairs, as its run read them;
4. the loss: ``loss.soft`` · T² · CE(teacher, student) + ``loss.hard`` · NLL — DistilBERT's weights by
   default (soft 5, hard 2, T = 2); the engine as the teacher's recipe trains (held-out perplexity, the best
   student kept).

OUT/best is a directory of the teacher's family (a translation run's best/ for a Transformer, with its
tokenizer); results.json has the student's held-out figures beside the teacher's.
"""

from __future__ import annotations

import logging
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2bert.config import to_dict
from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.models.pretrained import load_hf_weights, write_hf_files, write_tokenizer
from seq2bert.objectives.distillation import DistillWeights, NextTokenDistiller, layer_map
from seq2bert.recipes.pretrain import PretrainConfig, causal_lm
from seq2bert.recipes.pretrain_data import (
    file_stamp,
    held_out,
    held_out_corpus,
    inputs_of,
    prepared_from,
    tokenized_corpus,
)
from seq2bert.recipes.pretrain_init import copy_tokenizer_files
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import count_parameters, seed_everything, trained, write_results, write_run_config
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

# the depth fields of the decoders' configs: GPT's, the Transformer's encoder and decoder
DEPTH_FIELDS = ("n_layer", "encoder_layers", "decoder_layers")
# DistilBERT's soft and hard weights and temperature (its cosine term compares a bidirectional encoder's states)
DECODER_WEIGHTS = DistillWeights(soft=5.0, hard=2.0, temperature=2.0)


def is_decoder_teacher(family) -> bool:
    """Whether a teacher of ``family`` is distilled here: a decoder-only LM or an encoder-decoder."""
    return family.kind in ("decoder", "encoder-decoder")


def decoder_weights(loss: dict[str, float]) -> DistillWeights:
    """DECODER_WEIGHTS with ``loss``'s overrides (soft, hard, temperature)."""
    weights = DistillWeights(**{**to_dict(DECODER_WEIGHTS), **loss})
    try:
        weights.validate()
    except ValueError as e:
        raise ConfigError(f"loss: {e}") from None
    if weights.cos or weights.attention or weights.hidden:
        raise ConfigError(
            "loss: a decoder's student learns loss.soft and loss.hard only (cos, attention, hidden: 0)"
        )
    return weights


def student_depths(config: Any, layers: int) -> dict[str, int]:
    """{depth field: the student's layers} of a decoder's config (0: half the teacher's, at least 1)."""
    names = {f.name for f in fields(config)}
    depths = {}
    for name in DEPTH_FIELDS:
        if name in names:
            teacher = getattr(config, name)
            depths[name] = layers or max(1, teacher // 2)
            if depths[name] > teacher:
                raise ConfigError(
                    f"student.num_hidden_layers: {depths[name]}, more than the teacher's {teacher} ({name})"
                )
    if not depths:
        raise ConfigError(f"{type(config).__name__}: not a decoder's config (no {', '.join(DEPTH_FIELDS)})")
    return depths


def student_config(config: Any, layers: int) -> Any:
    """The teacher's config with the student's depth."""
    student = replace(config, **student_depths(config, layers))
    student.validate()
    return student


def copy_layers(student: nn.Module, teacher: nn.Module, maps: dict[str, list[int]]) -> list[str]:
    """Every teacher tensor of the same name and shape into the student, its stack's layer m (0-based) from
    the teacher's layer maps[stack][m] − 1 (stack: the name before ".layers.", e.g. "encoder", "decoder",
    "transformer"); returns the student's tensors left as they were."""
    source, state = teacher.state_dict(), student.state_dict()
    copied = {}
    for key, value in state.items():
        stack, sep, rest = key.partition(".layers.")
        src = key
        if sep:
            index, _, tail = rest.partition(".")
            src = f"{stack}.layers.{maps[stack.rsplit('.', 1)[-1]][int(index)] - 1}.{tail}"
        if src in source and source[src].shape == value.shape:
            copied[key] = source[src]
    student.load_state_dict(copied, strict=False)
    return [k for k in state if k not in copied]


def make_student(family, teacher: nn.Module, layers: int) -> nn.Module:
    """Step 2: the shallower student, started from the teacher's weights."""
    config = student_config(teacher.config, layers)
    student = family.make(config, type(teacher).__name__).to(next(teacher.parameters()).device)
    start_from_teacher(student, teacher)
    return student


def start_from_teacher(student: nn.Module, teacher: nn.Module) -> None:
    """The student's weights from the teacher's: embeddings, output layer, norms, and its layer m of each
    stack from the teacher's layer g(m) (layer_map)."""
    t = {k: getattr(teacher.config, k) for k in DEPTH_FIELDS if hasattr(teacher.config, k)}
    s = {k: getattr(student.config, k) for k in t}
    maps = {
        "transformer": layer_map(s.get("n_layer", 1), t.get("n_layer", 1)),
        "encoder": layer_map(s.get("encoder_layers", 1), t.get("encoder_layers", 1)),
        "decoder": layer_map(s.get("decoder_layers", 1), t.get("decoder_layers", 1)),
    }
    left = copy_layers(student, teacher, maps)
    log.info(
        "student: %s of %s layers (the teacher's %s), %s parameters (the teacher's %s), from the teacher's "
        "weights%s",
        type(student).__name__,
        "+".join(str(v) for v in s.values()),
        "+".join(str(v) for v in t.values()),
        f"{count_parameters(student):,}",
        f"{count_parameters(teacher):,}",
        f"; new: {', '.join(left)}" if left else "",
    )


def distiller(
    student: nn.Module, teacher: nn.Module, loss: dict[str, float], *, shift: bool
) -> NextTokenDistiller:
    return NextTokenDistiller(student, teacher, decoder_weights(loss), shift=shift)


def save_student(family, tok, config: Any, model: NextTokenDistiller, directory: Path) -> None:
    """A checkpoint of the student: a directory of the teacher's family, with the teacher's tokenizer."""
    write_hf_files(family, model.student, directory)
    write_tokenizer(family, tok, directory, config)


def load_student(family, model: NextTokenDistiller, directory: Path) -> None:
    load_hf_weights(family, model.student, directory)


@torch.no_grad()
def teacher_figures(evaluate, teacher: nn.Module) -> dict:
    """The teacher's held-out figures, measured as the student's are."""
    return {f"teacher_{k}": v for k, v in evaluate(teacher).items()}


# --- a causal LM's student on text (the translation run's: recipes/translation.py, distill.teacher)
def distill_causal(cfg, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True) -> dict:
    """Distil ``cfg.teacher`` (a GPT) on ``cfg.corpus.files`` into a student of ``cfg.student.num_hidden_layers``
    layers (a DistillConfig, recipes/distill.py); returns a results row."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # 1. the teacher and its tokenizer
    directory = registry.checkpoint_dir(cfg.teacher)
    teacher, tok = registry.load(directory, head="causal_lm", device=device)
    if tok is None or tok.eos_token_id is None:
        raise ConfigError(
            f"{cfg.teacher}: a causal LM with its tokenizer (an end-of-text token) is the teacher"
        )
    family = registry.family_of(teacher)
    # 2. the student
    seed_everything(cfg.train.seed)
    student = make_student(family, teacher, cfg.student.num_hidden_layers)
    # 3. the text: contiguous blocks of the documents, some held out (as `seq2bert pretrain`)
    files = cfg.corpus.text_files()
    source = {"teacher": [file_stamp(f) for f in sorted(directory.glob("*.json"))]}
    prepared_from(out_dir, inputs_of(files, cfg.corpus, source, True), resume, dist)
    corpus = tokenized_corpus(files, tok, out_dir / "corpus", cfg.corpus, True, dist, progress_bar)
    valid_corpus = held_out_corpus(cfg.corpus, tok, out_dir, True, dist, progress_bar)
    train_docs, valid_docs = held_out(corpus, cfg.corpus, cfg.train.seed, least=1, valid=valid_corpus)
    pretrain_cfg = PretrainConfig(data=cfg.corpus, train=cfg.train)
    objective = causal_lm(pretrain_cfg, corpus, train_docs, valid_docs, tok, dist, device, valid_corpus)
    # 4. the loss and the engine
    model = distiller(student, teacher, cfg.loss, shift=True)
    train_cfg = cfg.train
    if train_cfg.metric == "main":
        train_cfg = replace(train_cfg, metric="perplexity", higher_is_better=False)

    def write_extra(d: Path) -> None:
        write_tokenizer(family, tok, d, student.config)
        copy_tokenizer_files(directory, d)  # the teacher's own files, as they are
        write_run_config(d, cfg)

    trainer = Trainer(
        model,
        train_cfg,
        plan=objective.plan,
        collate=objective.plan.collate,
        out_dir=out_dir,
        evaluate=lambda m: objective.evaluate(m.student),
        write_extra=write_extra,
        loss_fn=lambda m, batch: m(**batch),
        count_tokens=lambda batch: int(batch["attention_mask"].sum()),
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=lambda m, d: write_hf_files(family, m.student, d),
        load_model=lambda m, d: load_hf_weights(family, m.student, d),
        plot_curves=plot_training_curves,
    )
    teacher_row = teacher_figures(objective.evaluate, teacher)
    result = trainer.fit(resume=resume)
    row = {
        "teacher": cfg.teacher,
        "layers": student.config.n_layer,
        "params": count_parameters(student),
        "teacher_params": count_parameters(teacher),
        **trained(result),
        **{f"valid_{k}": v for k, v in result.progress.last_eval.items()},
        **teacher_row,
        "run_dir": str(out_dir),
    }
    if dist.is_main:
        write_results(out_dir, row)
    cleanup()
    return row
