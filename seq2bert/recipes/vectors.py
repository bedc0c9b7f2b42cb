"""Recipe: static word vectors — word2vec (skip-gram or CBOW), GloVe, fastText — trained on raw text by the one
training engine (training/trainer.py), then written in word2vec's text format and scored on the word
analogies and word similarities (evaluation/word_vectors.py).

Read top to bottom:
1. the text, read once: its words counted, those seen ``min_count`` times kept, the corpus in their ids
   (data/word_corpus.py; kept in the run directory, so a resumed run reads no text);
2. GloVe: the co-occurrence matrix X in one streaming pass (data/cooccurrence.py), kept there too;
3. the batches: word2vec and fastText a stretch of the subsampled text with its windows and noise words
   each step; GloVe a shuffled slice of X's entries;
4. the engine trains — SGD with a linear decay to zero (word2vec, fastText) or AdaGrad (GloVe), over sparse
   gradients — and evaluates the vectors at each epoch's end on the analogies (when a questions file is
   there: gensim's copy of Mikolov's questions-words.txt by default), checkpointing as every run does;
5. the end: the vectors in ``OUT/vectors.txt`` (word2vec's text format: gensim, fastText and this library
   read it), their scores in results.json.

    seq2bert train-vectors --method skipgram ../shared/data/corpus/gutenberg --out runs/w2v
    seq2bert train-vectors --method glove books/ --out runs/glove --set model.vector_size=300
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2bert import config as config_io
from seq2bert.data.cooccurrence import CooccurrenceBatches, Cooccurrences, count_cooccurrences
from seq2bert.data.pretraining import text_files
from seq2bert.data.vector_files import WordVectors, write_vectors
from seq2bert.data.word_corpus import Vocabulary, WindowBatches, WordCorpus, read_corpus
from seq2bert.errors import ConfigError, DataError
from seq2bert.evaluation.word_vectors import analogy, default_test_sets, similarity
from seq2bert.io import read_json, write_json
from seq2bert.models import registry
from seq2bert.models.fasttext.config import FastTextConfig
from seq2bert.models.glove.config import GloVeConfig
from seq2bert.models.pretrained import load_hf_weights, write_hf_files
from seq2bert.models.registry import model_section
from seq2bert.models.static_vectors import VECTORS_FILE, vectors_of, word_vectors_at
from seq2bert.models.word2vec.config import Word2VecConfig
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import check_out_dir, seed_everything, trained, write_results, write_run_config
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

METHODS = ("skipgram", "cbow", "glove", "fasttext")
VectorsModelConfig = model_section(lambda f: f.word_vectors, default="word2vec")


@dataclass
class VectorsDataConfig:
    files: list[str] = field(default_factory=list)  # text files or folders of them (*.txt, recursively)
    max_vocab: int = 0  # the most frequent words kept at most (0: every word seen min_count times)
    # per step: word2vec / fastText positions of the text (each with its window), GloVe entries of X. A step
    # sums its pairs' updates, so a frequent word's vectors take hundreds of them at once: 256 positions
    # (~1,500 pairs) train as word2vec.c's one-pair updates do; at 2,048 skip-gram diverges at lr 0.025
    batch_size: int = 0  # 0: the method's (256 positions; 100,000 entries of X)

    def validate(self) -> None:
        if self.max_vocab < 0 or self.batch_size < 0:
            raise ConfigError("data.max_vocab and data.batch_size must be >= 0")

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class VectorsEvalConfig:
    analogies: str = "auto"  # questions-words.txt; auto: gensim's copy when gensim is installed; "": none
    similarity: str = "auto"  # wordsim353.tsv, the same way
    restrict_vocab: int = 300_000  # the most frequent words searched for an answer (gensim's default)


@dataclass
class VectorsConfig:
    model: VectorsModelConfig = field(default_factory=Word2VecConfig)  # model.model_type: word2vec, glove, …
    data: VectorsDataConfig = field(default_factory=VectorsDataConfig)
    evaluation: VectorsEvalConfig = field(default_factory=VectorsEvalConfig)
    train: TrainConfig = field(default_factory=lambda: word2vec_training())


def word2vec_training(lr: float = 0.025, **overrides: Any) -> TrainConfig:
    """word2vec.c's: SGD at 0.025 (skip-gram; CBOW 0.05) decaying linearly to zero, 5 epochs, no clipping or
    weight decay; fp32 (a batch is gathers and scatters: bf16 would only round the small updates away)."""
    return TrainConfig(
        **{
            "optimizer": "sgd",
            "lr": lr,
            "weight_decay": 0.0,
            "schedule": "linear",
            "clip_norm": 0.0,
            "max_epochs": 5,
            "bf16": False,
            "metric": "analogy",
            "log_every": 50,
            **overrides,
        }
    )


def method_config(method: str) -> VectorsConfig:
    """The defaults of each ``--method``: the papers' and their code's settings."""
    if method == "skipgram":
        return VectorsConfig()
    if method == "cbow":
        return VectorsConfig(model=Word2VecConfig(architecture="cbow"), train=word2vec_training(lr=0.05))
    if method == "fasttext":
        return VectorsConfig(model=FastTextConfig())
    if method == "glove":  # Sect. 4.2: AdaGrad at 0.05, 50 iterations below 300 dimensions
        train = TrainConfig(
            optimizer="adagrad",
            adagrad_initial=1.0,
            lr=0.05,
            weight_decay=0.0,
            clip_norm=0.0,
            max_epochs=50,
            bf16=False,
            metric="analogy",
            log_every=50,
        )
        return VectorsConfig(model=GloVeConfig(), train=train)
    raise ConfigError(f"--method: expected one of {', '.join(METHODS)}, got {method!r}")


def check_config(cfg: VectorsConfig) -> None:
    """Sparse gradients take no weight decay, and fp32 keeps the small updates."""
    if cfg.train.weight_decay:
        raise ConfigError("train.weight_decay: word vectors train on sparse gradients; expected 0")
    if cfg.train.optimizer == "adamw":
        raise ConfigError("train.optimizer: word vectors train on sparse gradients; expected sgd or adagrad")


def test_sets(ev: VectorsEvalConfig) -> tuple[Path | None, Path | None]:
    """The analogy questions and similarity pairs to score on (None: not scored)."""
    found = default_test_sets()
    chosen = []
    for given, default, key in (
        (ev.analogies, found[0], "analogies"),
        (ev.similarity, found[1], "similarity"),
    ):
        if given == "auto":
            chosen.append(default)
        elif given:
            if not Path(given).is_file():
                raise DataError(f"{given}: no such file (evaluation.{key})")
            chosen.append(Path(given))
        else:
            chosen.append(None)
    return chosen[0], chosen[1]


def scores(wv: WordVectors, ev: VectorsEvalConfig, sets: tuple[Path | None, Path | None]) -> dict[str, float]:
    """The analogy accuracies (3CosAdd and 3CosMul, semantic / syntactic / total, %) and the similarity
    Spearman (×100) of ``wv``, flat, with the share of questions and pairs out of its vocabulary."""
    questions, pairs = sets
    row: dict[str, float] = {}
    if questions is not None:
        a = analogy(wv.words, wv.vectors, questions, restrict_vocab=ev.restrict_vocab)
        for method in ("3cosadd", "3cosmul"):
            for part in ("semantic", "syntactic", "total"):
                row[f"analogy_{method}_{part}"] = a[method][part]
        row["analogy"] = a["3cosadd"]["total"]
        row["analogy_oov_rate"] = a["oov_rate"]
    if pairs is not None:
        s = similarity(wv.words, wv.vectors, pairs, restrict_vocab=ev.restrict_vocab)
        row["wordsim_spearman"] = s["spearman"]
        row["wordsim_oov_rate"] = s["oov_rate"]
    return row


def prepared_corpus(cfg: VectorsConfig, files: list[Path], out_dir: Path, progress_bar: bool) -> WordCorpus:
    """The corpus in word ids, read once and kept in the run directory (corpus.npz, word_counts.txt)."""
    cache = out_dir / "corpus"
    m = cfg.model
    made_of = {
        "files": [str(f) for f in files],
        "min_count": m.min_count,
        "max_vocab": cfg.data.max_vocab,
        "lowercase": m.lowercase,
    }
    if (cache / "corpus.npz").is_file() and (cache / "corpus.json").is_file():
        if read_json(cache / "corpus.json") == made_of:
            return WordCorpus.load(cache / "corpus.npz", Vocabulary.load(cache))
        log.warning("%s was made of other text or settings: read again", cache)
    for stale in ("corpus.json", "cooccurrence.json"):
        (cache / stale).unlink(missing_ok=True)
    corpus = read_corpus(
        files,
        min_count=m.min_count,
        max_vocab=cfg.data.max_vocab,
        lowercase=m.lowercase,
        progress_bar=progress_bar,
    )
    names = ", ".join(str(f) for f in files)
    if not (corpus.sentence[1:] == corpus.sentence[:-1]).any():
        raise DataError(
            f"{names}: no two words of the vocabulary share a paragraph: no context to learn from "
            "(more text, or a lower model.min_count)"
        )
    negative = getattr(m, "negative", 0)
    if negative and len(corpus.vocab) <= negative:
        raise DataError(
            f"{names}: {len(corpus.vocab)} word(s) seen {m.min_count} times; negative sampling draws "
            f"{negative} noise words per pair from more than that (lower model.min_count or model.negative)"
        )
    cache.mkdir(parents=True, exist_ok=True)
    corpus.vocab.save(cache)
    corpus.save(cache / "corpus.npz")
    write_json(cache / "corpus.json", made_of)
    return corpus


def before_start(cfg: VectorsConfig, out_dir: Path) -> None:
    check_out_dir(out_dir, tuple(cfg.data.files))
    check_config(cfg)
    test_sets(cfg.evaluation)


@ckpt.holds_run_dir(check=before_start)
def train_vectors(
    cfg: VectorsConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Train; returns a results row (vocabulary, words, time, words/s, analogy and similarity scores)."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    files = text_files(cfg.data.files, "data.files")
    if not files:
        raise DataError("data.files: no text files to train on")
    sets = test_sets(cfg.evaluation)
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    # 1. the corpus (and 2. GloVe's co-occurrences), kept for a resumed run
    t0 = time.perf_counter()
    corpus = prepared_corpus(cfg, files, out_dir, progress_bar)
    m = cfg.model
    model_cfg = config_io.from_dict(type(m), {**config_io.to_dict(m), "vocab_size": len(corpus.vocab)})
    if isinstance(m, GloVeConfig):
        path, made_of = out_dir / "corpus" / "cooccurrence.npz", out_dir / "corpus" / "cooccurrence.json"
        if path.is_file() and made_of.is_file() and read_json(made_of) == {"window": m.window}:
            cooc = Cooccurrences.load(path)
        else:
            cooc = count_cooccurrences(corpus, m.window, progress_bar=progress_bar)
            cooc.save(path)
            write_json(made_of, {"window": m.window})
        plan = CooccurrenceBatches(cooc, cfg.data.batch_size or 100_000, cfg.train.seed)
        log.info("co-occurrence matrix: %s non-zero entries", f"{len(cooc):,}")
    else:
        plan = WindowBatches(
            corpus,
            architecture=m.architecture,
            window=m.window,
            negative=m.negative,
            sample=m.sample,
            ns_exponent=m.ns_exponent,
            batch_words=cfg.data.batch_size or 256,
            seed=cfg.train.seed,
        )
    prepare_seconds = time.perf_counter() - t0
    # 3. the model, its vocabulary beside it
    family = registry.family_of(model_cfg)
    seed_everything(cfg.train.seed)
    model = family.make(model_cfg)
    model.set_vocabulary(corpus.vocab)

    def evaluate(mdl) -> dict:
        return scores(vectors_of(mdl), cfg.evaluation, sets)

    def count_tokens(batch) -> int:  # words of the text read (word2vec), entries of X (GloVe)
        return len(batch["centers"] if "centers" in batch else batch.get("targets", batch.get("rows")))

    trainer = Trainer(
        model,
        cfg.train,
        plan=plan,
        collate=plan.collate,
        out_dir=out_dir,
        evaluate=evaluate if any(sets) else None,
        write_extra=lambda d: write_run_config(d, cfg),
        count_tokens=count_tokens,
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=lambda mdl, d: write_hf_files(family, mdl, d),
        load_model=lambda mdl, d: load_hf_weights(family, mdl, d),
        plot_curves=plot_training_curves,
    )
    log.info(
        "%s: %s words of %s in the vocabulary; %d steps an epoch",
        model_cfg.describe(),
        f"{corpus.num_words:,}",
        f"{len(corpus.vocab):,}",
        trainer.steps_per_epoch,
    )
    result = trainer.fit(resume=resume)
    # 5. the vectors of the last step, in word2vec's text format, and their scores
    wv = vectors_of(model)
    row = {
        "method": model_cfg.describe(),
        "vocabulary": len(corpus.vocab),
        "corpus_words": corpus.total_words,
        "prepare_seconds": round(prepare_seconds, 1),
        **trained(result),
        **scores(wv, cfg.evaluation, sets),
        "run_dir": str(out_dir),
    }
    if dist.is_main:
        write_vectors(out_dir / VECTORS_FILE, wv, "word2vec")
        write_results(out_dir, row)
    cleanup()
    return row


def evaluate_vectors(path: str | Path, ev: VectorsEvalConfig | None = None, limit: int | None = None) -> dict:
    """The analogy and similarity scores of the vectors at ``path`` (``word_vectors_at``)."""
    ev = ev or VectorsEvalConfig()
    sets = test_sets(ev)
    if not any(sets):
        raise DataError(
            "no test sets: give --analogies questions-words.txt / --similarity wordsim353.tsv, or install "
            "gensim (pip install gensim), which ships both"
        )
    wv, _ = word_vectors_at(path, limit, with_model=False)
    if not len(wv.words):
        raise DataError(f"{path}: no vectors to score")
    return {
        "vectors": str(path),
        "words": len(wv.words),
        "dimensions": int(wv.vectors.shape[1]),
        **scores(wv, ev, sets),
    }
