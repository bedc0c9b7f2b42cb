"""Recipe: pretrain BERT from raw text with masked LM + next-sentence prediction (Devlin et al. 2018).

Read top to bottom:
1. the tokenizer: a given vocab.txt / tokenizer.json, or an uncased WordPiece vocabulary trained on the text;
2. the corpus: tokenized once into shards of token arrays on disk (seq2bert/data/pretraining.py), reused on resume;
3. documents split into training and held-out ones; NSP instances and masks drawn per epoch;
4. the engine trains BertForPreTraining on loss = MLM + NSP (the MLM head only at masked positions), and
   evaluates MLM loss / accuracy and NSP loss / accuracy on the held-out instances;
5. every checkpoint is a Hugging Face BERT directory (config.json, model.safetensors, tokenizer.json) plus
   the trainer state, so ``transformers.BertForPreTraining.from_pretrained(run/best)`` reads it and
   ``seq2bert pretrain … --resume`` continues a killed run exactly.

    seq2bert pretrain ../shared/data/corpus --out runs/bert-mini --set train.max_minutes=55
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Literal, Union

import numpy as np
import torch

from seq2bert.data.masking import STRATEGIES, MaskingConfig
from seq2bert.data.pretraining import Corpus, PretrainingData, prepare_corpus, shuffled, text_files
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError, DataError
from seq2bert.models import registry
from seq2bert.models.bert.config import bert_mini
from seq2bert.models.pretrained import load_hf_weights, write_hf_files
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import count_parameters, seed_everything, write_results, write_run_config
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)


@dataclass
class PretrainDataConfig:
    """Where the text comes from and how instances are made (defaults: the original recipe at 128)."""

    files: list[str] = field(default_factory=list)  # text files or folders of them (*.txt, recursively)
    tokenizer: str = ""  # a vocab.txt, tokenizer.json or folder; empty: train a WordPiece vocabulary
    vocab_size: int = 30522
    lowercase: bool = True
    documents: Literal["blank_line", "file"] = "blank_line"
    skip_bad: bool = False
    shard_tokens: int = 50_000_000
    max_seq_length: int = 128
    short_seq_prob: float = 0.1
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    whole_word_masking: bool = False  # the same as masking_strategy=whole_word
    masking_strategy: str = "token"  # positions masked together: token, whole_word (data/masking.py)
    masking: Literal["static", "dynamic"] = "static"
    dupe_factor: int = 10
    batch_size: int = 32
    valid_fraction: float = 0.02  # documents held out for evaluation
    max_valid_instances: int = 1024

    def validate(self) -> None:
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise ConfigError(f"masked_lm_prob: must be in (0, 1), got {self.masked_lm_prob}")
        if not 0.0 <= self.short_seq_prob <= 1.0 or not 0.0 <= self.valid_fraction < 1.0:
            raise ConfigError("short_seq_prob must be in [0, 1] and valid_fraction in [0, 1)")
        for name in ("max_seq_length", "max_predictions_per_seq", "dupe_factor", "batch_size", "vocab_size",
                     "shard_tokens", "max_valid_instances"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.masking_strategy not in STRATEGIES:
            raise ConfigError(
                f"masking_strategy: expected one of {', '.join(STRATEGIES)}, got {self.masking_strategy!r}"
            )
        if self.whole_word_masking and self.masking_strategy not in ("token", "whole_word"):
            raise ConfigError(f"whole_word_masking: set, but masking_strategy is {self.masking_strategy!r}")
        if self.max_seq_length < 8:
            raise ConfigError(f"max_seq_length: must be at least 8, got {self.max_seq_length}")

    def __post_init__(self) -> None:
        self.validate()

    def text_files(self) -> list[Path]:
        out = text_files(self.files, "data.files")
        if not out:
            raise DataError("data.files: no text files to pretrain on")
        return out


# the model section: the config of any family in the registry with a "pretraining" head, chosen by its
# model_type (default: BERT-mini)
PRETRAINABLE = [f for f in registry.FAMILIES.values() if "pretraining" in f.heads]
PretrainModelConfig = Union[tuple(f.config_class for f in PRETRAINABLE)]  # noqa: UP007 (built from a list)


@dataclass
class PretrainConfig:
    model: PretrainModelConfig = field(default_factory=bert_mini)
    data: PretrainDataConfig = field(default_factory=PretrainDataConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            lr=1e-4,
            weight_decay=0.01,
            schedule="linear",
            warmup_steps=1000,
            max_epochs=1,
            metric="mlm_accuracy",
        )
    )


def build_tokenizer(data: PretrainDataConfig, files: list[Path]) -> Tokenizer:
    if data.tokenizer:
        return Tokenizer.from_file(data.tokenizer)
    log.info("training an uncased WordPiece vocabulary of %d on %d files", data.vocab_size, len(files))
    return Tokenizer.train(files, kind="wordpiece", vocab_size=data.vocab_size, lowercase=data.lowercase)


def masking_config(data: PretrainDataConfig, tok: Tokenizer) -> MaskingConfig:
    vocab = tok.backend.get_vocab()
    return MaskingConfig(
        max_seq_length=data.max_seq_length,
        masked_lm_prob=data.masked_lm_prob,
        max_predictions_per_seq=data.max_predictions_per_seq,
        whole_word_masking=data.whole_word_masking,
        strategy=data.masking_strategy,
        cls_token_id=tok.cls_token_id,
        sep_token_id=tok.sep_token_id,
        mask_token_id=tok.mask_token_id,
        pad_token_id=tok.pad_token_id,
        vocab_size=tok.vocab_size,
        continuation=tuple(sorted(i for t, i in vocab.items() if t.startswith("##"))),
    )


@torch.no_grad()
def evaluate_pretraining(
    model, data: PretrainingData, indices: list[int], device, options: dict | None = None
) -> dict:
    """MLM loss and accuracy over the held-out masked tokens, NSP loss and accuracy over the held-out pairs;
    ``loss`` is their sum, the training objective. ``options``: the family's pretraining forward options."""
    mlm_loss = nsp_loss = correct = total = nsp_correct = pairs = 0.0
    for start in range(0, len(indices), data.batch_size):
        batch = {k: v.to(device) for k, v in data.collate(indices[start : start + data.batch_size]).items()}
        out = model(**batch, **(options or {}))
        targets = batch["labels"][batch["labels"].ne(IGNORE_INDEX)]
        n = targets.numel()
        mlm_loss += float(out.mlm_loss) * n
        logits = out.prediction_logits  # (N, V) at the labelled positions (sparse), or (B, T, V)
        if logits.dim() == 3:
            logits = logits[batch["labels"].ne(IGNORE_INDEX)]
        correct += float((logits.argmax(-1) == targets).sum())
        total += n
        nsp_correct += float((out.seq_relationship_logits.argmax(-1) == batch["next_sentence_label"]).sum())
        nsp_loss += float(out.nsp_loss) * batch["next_sentence_label"].numel()
        pairs += batch["next_sentence_label"].numel()
    return {
        "mlm_loss": mlm_loss / max(total, 1),
        "mlm_accuracy": 100.0 * correct / max(total, 1),
        "nsp_loss": nsp_loss / max(pairs, 1),
        "nsp_accuracy": 100.0 * nsp_correct / max(pairs, 1),
        "loss": mlm_loss / max(total, 1) + nsp_loss / max(pairs, 1),
    }


def pretrain(
    cfg: PretrainConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Pretrain; returns a results row (parameters, steps, tokens/s, held-out MLM / NSP accuracy)."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    files = cfg.data.text_files()
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # 1. the tokenizer (kept with the run: a resumed run must see the same ids)
    tok_dir = out_dir / "tokenizer"
    tok = (
        Tokenizer.load(tok_dir)
        if (tok_dir / "tokenizer.json").is_file()
        else build_tokenizer(cfg.data, files)
    )
    if dist.is_main:
        tok.save(tok_dir)
    # 2. the corpus, tokenized once
    corpus_dir = out_dir / "corpus"
    if not (corpus_dir / "corpus.json").is_file():
        if dist.is_main:
            prepare_corpus(files, tok, corpus_dir, documents=cfg.data.documents, shard_tokens=cfg.data.shard_tokens,
                           skip_bad=cfg.data.skip_bad, progress=progress_bar)  # fmt: skip
        from seq2bert.training.distributed import barrier

        barrier(dist)
    corpus = Corpus(corpus_dir)
    # 3. held-out documents
    order = shuffled(corpus.num_documents, np.random.default_rng(cfg.train.seed))
    n_valid = int(round(cfg.data.valid_fraction * corpus.num_documents))
    if corpus.num_documents - n_valid < 2:
        raise DataError(
            f"{', '.join(cfg.data.files)}: {corpus.num_documents} documents; pretraining needs at least 2"
        )
    valid_docs, train_docs = np.sort(order[:n_valid]), np.sort(order[n_valid:])
    if n_valid < 2:
        log.warning("fewer than 2 held-out documents (data.valid_fraction): evaluating on training documents")
    masking = masking_config(cfg.data, tok)
    common = dict(
        short_seq_prob=cfg.data.short_seq_prob, masking=cfg.data.masking, dupe_factor=cfg.data.dupe_factor
    )
    train_data = PretrainingData(corpus, train_docs, masking, batch_size=cfg.data.batch_size, seed=cfg.train.seed,
                                 rank=dist.rank, world=dist.world_size, **common)  # fmt: skip
    valid_data = PretrainingData(corpus, valid_docs if n_valid >= 2 else train_docs[:50], masking,
                                 batch_size=cfg.data.batch_size, seed=cfg.train.seed + 1, shuffle=False, **common)  # fmt: skip
    valid_indices = [i for b in valid_data.batches(0) for i in b][: cfg.data.max_valid_instances]
    # 4. the model and the engine
    model_cfg = replace(cfg.model, vocab_size=tok.vocab_size, pad_token_id=tok.pad_token_id)
    family = registry.family_of(model_cfg)  # the builder, checkpoint layout and objectives of the model
    options = family.pretraining_options
    seed_everything(cfg.train.seed)
    model = family.make(model_cfg, family.architecture_for("pretraining"))
    torch.manual_seed(cfg.train.seed + dist.rank)

    def write_extra(directory: Path) -> None:
        tok.save(directory)
        write_run_config(directory, cfg)

    trainer = Trainer(
        model,
        cfg.train,
        plan=train_data,
        collate=train_data.collate,
        out_dir=out_dir,
        evaluate=lambda m: evaluate_pretraining(m, valid_data, valid_indices, device, options),
        write_extra=write_extra,
        loss_fn=lambda m, batch: m(**batch, **options).loss,
        count_tokens=lambda batch: int(batch["attention_mask"].sum()),
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=partial(write_hf_files, family),
        load_model=partial(load_hf_weights, family),
        plot_curves=plot_training_curves,
    )
    log.info("%s: %s parameters; %s tokens in %d documents", type(model).__name__, f"{count_parameters(model):,}",
             f"{corpus.info['tokens']:,}", corpus.num_documents)  # fmt: skip
    result = trainer.fit(resume=resume)
    row = {
        "model": f"{family.model_type} ({model_cfg.num_hidden_layers}/{model_cfg.hidden_size})",
        "params": count_parameters(model),
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
