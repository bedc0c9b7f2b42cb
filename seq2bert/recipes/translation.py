"""Recipe: train, evaluate and use a sequence-to-sequence model on a synthetic task or parallel text.

Read top to bottom:
1. ``load_pairs``: the train / valid / test pairs (a built-in synthetic task, or parallel files);
2. ``build_tokenizer``: train a vocabulary on the training pairs (or load one);
3. ``train``: build the model, hand it to the engine with an evaluation function, evaluate the best
   checkpoint on the test split and return one results row;
4. ``evaluate`` / ``rescore_run``: score a checkpoint again.

Using a checkpoint is not this recipe's: the registry loads it (seq2bert/models/registry.py), the search is
seq2bert/decoding (``Decoding`` holds the recipes' settings), ``translate`` is a pipeline
(seq2bert/pipelines/generation.py) and ``align`` is models/alignment.py; they are re-exported here for the callers
written before.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from seq2bert import config as config_io
from seq2bert.data.batching import BucketBatchSampler, pad_sequences
from seq2bert.data.config import SYNTHETIC_TASKS, TOKENIZER_KINDS, DataConfig
from seq2bert.data.parallel import read_parallel
from seq2bert.data.synthetic import make_splits
from seq2bert.data.tokenization import Tokenizer
from seq2bert.decoding.generation import BEAM5, GREEDY, Decoding  # noqa: F401 (the recipe's settings, re-exported)
from seq2bert.errors import CheckpointError, ConfigError, DataError
from seq2bert.evaluation import metrics as M
from seq2bert.models import registry
from seq2bert.models.alignment import Alignment, align, source_limit, within_positions  # noqa: F401 (align re-exported)
from seq2bert.models.encoder_decoder import ScheduledSampling
from seq2bert.models.family import max_input_length
from seq2bert.models.registry import ModelConfig, build_model
from seq2bert.models.seq2seq.config import RecurrentConfig, Seq2SeqConfig
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.pipelines import translate  # noqa: F401 (re-exported)
from seq2bert.recipes import distill_decoder
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import (
    check_model_fits,
    check_out_dir,
    count_parameters,
    seed_everything,
    write_results,
)
from seq2bert.training.scheduled_sampling import ScheduledSamplingConfig, describe, epsilon_schedule
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

Pairs = list[tuple[str, str]]


@dataclass
class TranslationTrainConfig(TrainConfig):
    """The engine's settings, and what only a translation run has: ``scheduled_sampling`` of the decoder's
    inputs (Bengio et al. 2015; training/scheduled_sampling.py), for the recurrent models; off by default."""

    scheduled_sampling: ScheduledSamplingConfig = field(default_factory=ScheduledSamplingConfig)


@dataclass
class DistillSection:
    """A student of a translation run (`seq2bert distill --teacher RUN`, recipes/distill_decoder.py): trained
    on the teacher's next-token distributions (soft targets) beside the data's tokens, with the teacher's
    tokenizer, started from its embeddings and layers g(m); ``model`` is the student's config. ``loss``:
    soft, hard, temperature (DistilBERT's 5, 2, 2 by default)."""

    teacher: str = ""
    loss: dict[str, float] = field(default_factory=dict)


@dataclass
class TranslationConfig:
    """A whole run: the model (any encoder-decoder of the registry, chosen by ``model.model_type``), the data,
    the training engine and, for a student, its teacher (``distill``)."""

    model: ModelConfig = field(default_factory=Seq2SeqConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TranslationTrainConfig = field(default_factory=lambda: TranslationTrainConfig(metric="auto"))
    distill: DistillSection = field(default_factory=DistillSection)


EVAL_METRICS = ("loss", "perplexity", "token_accuracy", "exact_match", "bleu", "bleu_lowercase")


def main_metric(cfg: TranslationConfig) -> str:
    """The metric that picks the best checkpoint: ``train.metric``, or for ``auto`` exact match on a synthetic
    task (a sequence right as a whole) and BLEU on parallel text, where exact match stays near 0 and would
    keep the first evaluation's checkpoint as the best."""
    if cfg.train.metric != "auto":
        return cfg.train.metric
    return "exact_match" if cfg.data.task in SYNTHETIC_TASKS else "bleu"


def check_run_config(cfg: TranslationConfig) -> None:
    """What a run needs beyond each section's own checks: its files exist, its metric is one we compute, and
    scheduled sampling, if asked for, has a recurrent decoder to feed."""
    cfg.data.check_files()
    if cfg.train.metric not in (*EVAL_METRICS, "auto"):
        raise ConfigError(
            f"train.metric: expected one of {', '.join(EVAL_METRICS)} or auto, got {cfg.train.metric!r}"
        )
    if cfg.train.scheduled_sampling.enabled and not isinstance(cfg.model, RecurrentConfig):
        # the paper's method feeds a recurrent decoder step by step; a Transformer trains every position at once
        recurrent = [
            f.model_type
            for f in registry.translation_families()
            if issubclass(f.config_class, RecurrentConfig)
        ]
        raise ConfigError(
            f"train.scheduled_sampling: for the recurrent decoders ({', '.join(recurrent)}), "
            f"not {cfg.model.model_type}, which trains every target position at once"
        )


# --- 1. data
def load_pairs(data: DataConfig) -> dict[str, Pairs]:
    """{"train": pairs, "valid": pairs, "test": pairs} (valid / test empty when no file is given for them; a
    file given that holds no pair is a DataError naming it)."""
    if data.task in SYNTHETIC_TASKS:
        return make_splits(
            data.task,
            n_train=data.num_train,
            n_valid=data.num_valid,
            n_test=data.num_test,
            min_len=data.min_len,
            max_len=data.max_len,
            num_symbols=data.num_symbols,
            seed=data.data_seed,
        )
    splits = {}
    for split in ("train", "valid", "test"):
        src, tgt = getattr(data, f"{split}_src"), getattr(data, f"{split}_tgt")
        if not src:
            splits[split] = []
            continue
        corpus = read_parallel(src, tgt or None, max_chars=data.max_chars, skip_bad=data.skip_bad)
        if not corpus.pairs:
            why = f"all {corpus.skipped} skipped as bad" if corpus.skipped else "no lines"
            raise DataError(f"{corpus.source}: no {split} pairs ({why}; expected a sentence pair a line)")
        splits[split] = corpus.pairs
    return splits


def build_tokenizer(data: DataConfig, train_pairs: Pairs) -> Tokenizer:
    """One vocabulary shared by source and target, trained on the training pairs (or loaded from a file)."""
    kind = data.tokenizer_kind
    if kind not in ("bpe", "wordpiece", "word"):
        return Tokenizer.from_file(kind)
    texts = [s for pair in train_pairs for s in pair]
    min_freq = 1 if data.task in SYNTHETIC_TASKS else data.min_frequency
    return Tokenizer.train(
        texts, kind=kind, vocab_size=data.vocab_size, min_frequency=min_freq, lowercase=data.lowercase
    )


@dataclass
class Encoded:
    """Token ids of each pair, without special tokens."""

    src: list[list[int]]
    tgt: list[list[int]]

    def __len__(self) -> int:
        return len(self.src)


def encode_pairs(tok: Tokenizer, pairs: Pairs, max_length: int | None = None) -> Encoded:
    src = tok.ids_batch([s for s, _ in pairs])
    tgt = tok.ids_batch([t for _, t in pairs])
    if max_length:
        keep = [i for i in range(len(src)) if 0 < len(src[i]) <= max_length and len(tgt[i]) < max_length]
        if len(keep) < len(src):
            log.info(
                "dropped %d of %d training pairs longer than %d tokens",
                len(src) - len(keep),
                len(src),
                max_length,
            )
        src, tgt = [src[i] for i in keep], [tgt[i] for i in keep]
    return Encoded(src, tgt)


def within_model(enc: Encoded, config) -> Encoded:
    """Pairs a model can score: sources cut to ``source_limit`` (default: its positions, else 512), targets to
    its decoder's positions (their [BOS] or [EOS] included), with a warning."""
    limit, table = source_limit(config), max_input_length(config)
    long = sum(len(s) > limit for s in enc.src) + sum(table is not None and len(t) >= table for t in enc.tgt)
    if long:
        log.warning(
            "%d sentence(s) truncated to what the model reads (%d source tokens, %s target tokens)",
            long,
            limit,
            table - 1 if table else "any",
        )
    return Encoded([s[:limit] for s in enc.src], [t[: table - 1] if table else t for t in enc.tgt])


def make_collate(enc: Encoded, tok: Tokenizer):
    """Batch of indices → input_ids / attention_mask (B, S), decoder_input_ids / labels (B, T)."""
    bos, eos, pad = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id

    def collate(indices: list[int]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = pad_sequences([enc.src[i] for i in indices], pad)
        decoder_input_ids, _ = pad_sequences([[bos, *enc.tgt[i]] for i in indices], pad)
        labels, _ = pad_sequences([[*enc.tgt[i], eos] for i in indices], IGNORE_INDEX)
        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "decoder_input_ids": decoder_input_ids,
            "labels": labels,
        }

    return collate


def make_plan(enc: Encoded, data: DataConfig, *, shuffle: bool, seed: int = 0, rank: int = 0, world: int = 1):
    lengths = [max(len(s), len(t) + 1) for s, t in zip(enc.src, enc.tgt, strict=True)]
    return BucketBatchSampler(
        lengths,
        max_tokens=data.max_tokens or None,
        batch_size=data.batch_size or None,
        shuffle=shuffle,
        seed=seed,
        num_replicas=world,
        rank=rank,
    )


# --- evaluation


@torch.no_grad()
def evaluate_pairs(
    model,
    tok: Tokenizer,
    pairs: Pairs,
    data: DataConfig,
    *,
    device=None,
    decoding: Decoding = GREEDY,
    by_length: bool = False,
) -> dict:
    """Teacher-forced loss / perplexity, and decoding (greedy or beam) scored by token accuracy, exact match
    and BLEU. With ``by_length``, also "bleu_by_length": BLEU per source-length bucket (in words)."""
    if not pairs:
        return {}
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    enc = within_model(encode_pairs(tok, pairs), model.config)
    decoding = within_positions(decoding, model.config)
    collate = make_collate(enc, tok)
    plan = make_plan(enc, data, shuffle=False)
    nll, n_tok = 0.0, 0
    hyps_ids: list[list[int]] = [[] for _ in pairs]
    for idx in plan.batches(0):
        batch = {k: v.to(device) for k, v in collate(idx).items()}
        out = model(**{k: batch[k] for k in ("input_ids", "attention_mask", "decoder_input_ids")})
        labels = batch["labels"]
        nll += float(
            torch.nn.functional.cross_entropy(
                out.logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
            )
        )
        n_tok += int(labels.ne(IGNORE_INDEX).sum())
        for row, i in zip(
            decoding.ids(model, tok, batch["input_ids"], batch["attention_mask"]), idx, strict=True
        ):
            hyps_ids[i] = row
    model.train(was_training)
    hyps = tok.decode_batch(hyps_ids)
    refs = [t for _, t in pairs]
    result = {
        "loss": nll / max(n_tok, 1),
        "perplexity": M.perplexity(nll / max(n_tok, 1)),
        "token_accuracy": M.token_accuracy(hyps_ids, enc.tgt),
        "exact_match": M.exact_match([h.split() for h in hyps], [r.split() for r in refs]),
        "bleu": M.bleu(hyps, refs),
        "bleu_lowercase": M.bleu(hyps, refs, lowercase=True),
    }
    if by_length:
        result["bleu_by_length"] = M.bleu_by_length(hyps, refs, [len(s.split()) for s, _ in pairs])
    return result


# --- 3. training
def model_label(cfg: ModelConfig) -> str:
    """A short name for results tables: "seq2seq (reversed source)", "bahdanau", "luong (general, local-p)"."""
    if cfg.model_type == "luong":
        extras = [cfg.score, cfg.attention] + ([] if cfg.input_feeding else ["no input feeding"])
        return f"luong ({', '.join(extras)})"
    if getattr(cfg, "reverse_source", False):
        return f"{cfg.model_type} (reversed source)"
    return cfg.model_type


def write_checkpoint_extras(cfg: TranslationConfig, model_cfg: ModelConfig, tok: Tokenizer):
    def write(directory: Path) -> None:
        config_io.save(model_cfg, directory / "config.json")
        config_io.save(cfg, directory / "run.json")
        tok.save(directory)

    return write


def before_start(cfg: TranslationConfig, out_dir: Path) -> None:
    """What a run refuses before its directory is made: an ``out_dir`` among its data files, a model larger
    than the machine's memory."""
    d = cfg.data
    files = (d.train_src, d.train_tgt, d.valid_src, d.valid_tgt, d.test_src, d.test_tgt)
    check_out_dir(out_dir, (*files, d.tokenizer if d.tokenizer not in TOKENIZER_KINDS else ""))
    # the vocabulary is the tokenizer's, trained once the run has begun: 8 tokens (the least data.vocab_size)
    # make an estimate that never exceeds the model's
    smallest = {"src_vocab_size": 8, "tgt_vocab_size": 8}
    model = config_io.from_dict(type(cfg.model), {**config_io.to_dict(cfg.model), **smallest})
    check_model_fits(lambda: build_model(model), model, cfg.train.optimizer)


@ckpt.holds_run_dir(check=before_start)
def train(
    cfg: TranslationConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Train, then evaluate the best checkpoint on the test split; returns one results row (a dict)."""
    out_dir = Path(out_dir)
    check_run_config(cfg)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    pairs = load_pairs(cfg.data)  # a file without pairs is an error naming it
    tok_dir = out_dir / "tokenizer"
    resumed_tok = resume and (tok_dir / "tokenizer.json").is_file()
    teacher = None
    if cfg.distill.teacher:  # a student: the teacher's vocabulary
        teacher, tok, _ = load(cfg.distill.teacher, device)
    else:  # the vocabulary the killed run trained with
        tok = Tokenizer.load(tok_dir) if resumed_tok else build_tokenizer(cfg.data, pairs["train"])
    model_cfg = config_io.from_dict(
        type(cfg.model),
        {
            **config_io.to_dict(cfg.model),
            "src_vocab_size": tok.vocab_size,
            "tgt_vocab_size": tok.vocab_size,
            "pad_token_id": tok.pad_token_id,
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
        },
    )
    if resume:
        check_resumable(out_dir, model_cfg)
    if dist.is_main and not resumed_tok:
        tok.save(tok_dir)
    seed_everything(cfg.train.seed)  # the weights depend on the seed only, not on the data pipeline
    model = student = build_model(model_cfg)
    if teacher is not None:  # the student's start, and the distillation's loss around it
        distill_decoder.start_from_teacher(student, teacher)
        model = distill_decoder.distiller(student, teacher, cfg.distill.loss, shift=False)
    torch.manual_seed(cfg.train.seed + dist.rank)  # one dropout stream per process
    train_enc = encode_pairs(tok, pairs["train"], cfg.data.max_length)
    plan = make_plan(
        train_enc, cfg.data, shuffle=True, seed=cfg.train.seed, rank=dist.rank, world=dist.world_size
    )
    valid = pairs["valid"]
    if not valid:
        valid = pairs["train"][:500]
        log.warning(
            "no validation split: choosing the best checkpoint on the first %d TRAINING pairs", len(valid)
        )
    ls, ss = cfg.train.label_smoothing, cfg.train.scheduled_sampling

    def loss_fn(m, batch):
        if teacher is not None:  # soft targets and the data's tokens (objectives/distillation.py)
            return m(**batch)
        if not ss.enabled:  # teacher forcing
            return m(
                **batch, label_smoothing=ls, return_logits=False
            ).loss  # the output layer fused with its loss
        # ε_i of the i-th mini-batch: the trainer's step (``trainer`` is bound below, before the first batch)
        how = ScheduledSampling(epsilon(trainer.progress.step), ss.sampling)
        return m(**batch, label_smoothing=ls, scheduled_sampling=how).loss

    trainer = Trainer(
        model,
        replace(cfg.train, metric=main_metric(cfg)),
        plan=plan,
        collate=make_collate(train_enc, tok),
        out_dir=out_dir,
        evaluate=lambda m: evaluate_pairs(student, tok, valid, cfg.data, device=device),
        write_extra=write_checkpoint_extras(cfg, model_cfg, tok),
        loss_fn=loss_fn,
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        plot_curves=plot_training_curves,
        # what this directory is trained with, once training begins: a failed start or a refused --resume
        # leaves no run.json, or the one it had (check_same_run)
        on_start=lambda: config_io.save(cfg, out_dir / "run.json"),
        save_model=lambda m, d: ckpt.save_weights(student, d),
        load_model=lambda m, d: ckpt.load_weights(student, d),
    )
    epsilon = epsilon_schedule(ss, trainer.total_steps)
    if ss.enabled:
        log.info("%s", describe(ss, trainer.total_steps))
    log.info(
        "model: %s parameters; %d training pairs; %d steps",
        f"{count_parameters(model):,}",
        len(train_enc),
        trainer.total_steps,
    )
    result = trainer.fit(resume=resume)
    row = {
        "model": model_label(model_cfg),
        "params": count_parameters(student),
        "steps": result.progress.step,
        "train_seconds": result.progress.train_seconds,
        "tokens_per_s": result.tokens_per_second,
        "run_dir": str(out_dir),
    }
    if result.progress.averaged:  # best/ is the average of these checkpoints (train.average_last)
        row["averaged"] = result.progress.averaged
    best = result.best_checkpoint or result.last_checkpoint
    if dist.is_main and best is not None:
        ckpt.load_weights(student, best)
        row.update(score_best(student, tok, valid, pairs["test"], cfg.data, device=device))
        if teacher is not None:
            row["teacher"] = cfg.distill.teacher
            row.update(
                distill_decoder.teacher_figures(
                    lambda m: score_best(m, tok, valid, pairs["test"], cfg.data, device=device), teacher
                )
            )
        write_results(out_dir, row)
    row["is_main"] = dist.is_main
    cleanup()
    return row


def check_resumable(out_dir: Path, model_cfg) -> None:
    """A resumed run must build the model its last checkpoint holds: a changed model setting is refused before
    anything in ``out_dir`` is written (its run.json stays the one it was trained with)."""
    last = ckpt.latest_checkpoint(out_dir)
    if last is None or not (last / "config.json").is_file():
        return
    old = config_io.former_defaults(type(model_cfg), ckpt.read_json(last / "config.json"))
    new = config_io.to_dict(model_cfg)
    differ = [k for k in new if k in old and old[k] != new[k]]
    if differ:
        k = differ[0]
        raise ConfigError(
            f"--resume: {last} holds a model with model.{k}={old[k]!r}, not {new[k]!r}; resume with the "
            "run's own settings or choose a new --out"
        )


def score_best(model, tok: Tokenizer, valid: Pairs, test: Pairs, data: DataConfig, *, device=None) -> dict:
    """The results-row columns of the best checkpoint: validation perplexity; on the test split greedy
    metrics, BLEU by source length and BLEU with beam 5."""
    row = {"valid_perplexity": evaluate_pairs(model, tok, valid, data, device=device)["perplexity"]}
    if test:
        greedy = evaluate_pairs(model, tok, test, data, device=device, by_length=True)
        beam = evaluate_pairs(model, tok, test, data, device=device, decoding=BEAM5)
        row.update({f"test_{k}": v for k, v in greedy.items()})
        row.update({f"test_{k}_beam5": beam[k] for k in ("bleu", "bleu_lowercase")})
    return row


def rescore_run(run_dir: str | Path) -> dict:
    """Score a run's best checkpoint again (``score_best``) and update its results.json; returns the row."""
    run_dir = Path(run_dir)
    if (run_dir / "config.json").is_file() and not (run_dir / "log.jsonl").is_file():
        raise CheckpointError(f"{run_dir}: a checkpoint; give the run directory (its parent) to rescore")
    if ckpt.resolve_checkpoint(run_dir).name != "best":
        raise CheckpointError(f"{run_dir}: no best/ checkpoint to rescore")
    model, tok, run = load(run_dir)
    if run is None:
        raise CheckpointError(f"{run_dir}: no run.json in the best checkpoint; cannot tell its data")
    pairs = load_pairs(run.data)
    valid = pairs["valid"] or pairs["train"][:500]
    path = run_dir / "results.json"
    row = (
        ckpt.read_json(path)
        if path.is_file()
        else {"model": model_label(model.config), "run_dir": str(run_dir)}
    )
    row = {k: v for k, v in row.items() if not k.startswith(("test_", "valid_"))}  # no stale scores
    row.update(score_best(model, tok, valid, pairs["test"], run.data))
    config_io.atomic_write_text(path, json.dumps(row, indent=2) + "\n")
    return row


# --- 4. using a checkpoint
def load(checkpoint: str | Path, device: str = "cpu"):
    """(model in eval mode, tokenizer, run config or None) of an encoder-decoder: a checkpoint or run
    directory of ours, or a Hugging Face directory of a family in the registry (MarianMT: our Transformer
    with its SentencePiece tokenizer; no run config)."""
    family = registry.family_at(checkpoint)
    if family.kind != "encoder-decoder":
        raise CheckpointError(f"{checkpoint}: a {family.model_type} model, not an encoder-decoder")
    model, tok = registry.load(checkpoint, device=device)
    run = None if family.huggingface else read_run_config(registry.checkpoint_dir(checkpoint))
    return model, tok, run


def read_run_config(checkpoint: Path) -> TranslationConfig | None:
    """The run configuration saved in a checkpoint (run.json), or None for a model-only checkpoint."""
    path = Path(checkpoint) / "run.json"
    if not path.is_file():
        return None
    data = ckpt.read_json(path)
    model = data.get("model")
    if isinstance(model, dict) and model.get("model_type") in registry.FAMILIES:
        data["model"] = config_io.former_defaults(registry.FAMILIES[model["model_type"]].config_class, model)
    try:
        return config_io.from_dict(TranslationConfig, data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


# settings that do not change what a run computes: a rerun may differ in them
NOT_RESULTS = frozenset({"train.device", "train.log_every", "train.keep_last"})


def check_same_run(run_dir: str | Path, cfg: TranslationConfig) -> None:
    """A recipe that reuses a run directory (finished, or interrupted and resumed) must be asking for the same
    run: the settings the directory was trained with (its run.json, written when training starts; else its
    checkpoints') must equal ``cfg``; otherwise the settings that differ are named, rather than old results
    or an old vocabulary passing for new ones."""
    run_dir = Path(run_dir)
    saved = [run_dir, *filter(None, [ckpt.latest_checkpoint(run_dir)]), run_dir / "best"]
    stored = next((read_run_config(d) for d in saved if (d / "run.json").is_file()), None)
    if stored is None:
        return

    def flat(d: dict, prefix: str = "") -> dict:
        out = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
        return out

    old, new = flat(config_io.to_dict(stored)), flat(config_io.to_dict(cfg))
    keys = [*old, *(k for k in new if k not in old)]  # in the config's own order
    differ = [k for k in keys if k not in NOT_RESULTS and old.get(k) != new.get(k)]
    if differ:
        first = differ[0]
        more = f" (and {', '.join(differ[1:])})" if differ[1:] else ""
        raise ConfigError(
            f"{run_dir}: trained with {first}={old.get(first)!r}, not {new.get(first)!r}{more}; "
            "remove it or choose another --out"
        )


def evaluate(
    checkpoint,
    pairs: Pairs,
    *,
    data: DataConfig | None = None,
    decoding: Decoding = GREEDY,
    by_length: bool = False,
) -> dict:
    """Metrics of a checkpoint (path) — or of a loaded ``(model, tokenizer, run)`` from ``load`` — on ``pairs``."""
    model, tok, run = load(checkpoint) if isinstance(checkpoint, (str, Path)) else checkpoint
    data = data or (run.data if run else DataConfig())
    start = time.perf_counter()
    result = evaluate_pairs(model, tok, pairs, data, decoding=decoding, by_length=by_length)
    result["seconds"] = time.perf_counter() - start
    return result
