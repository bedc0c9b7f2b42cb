"""Static word vectors wherever they are: a run of `seq2bert train-vectors` (its vectors.txt and its model), a
checkpoint of a word-vector family (word2vec, GloVe, fastText), or a file of published vectors (word2vec text
or binary, GloVe text; data/vector_files.py). The recipes, the fine-tuning of a model from scratch
(``--vectors``) and the pipelines (``seq2bert embed``) read them through ``word_vectors_at``."""

from __future__ import annotations

from pathlib import Path

import torch

from seq2bert.data.vector_files import WordVectors, read_vectors
from seq2bert.io import latest_checkpoint
from seq2bert.models import registry

VECTORS_FILE = "vectors.txt"  # a train-vectors run's vectors, in word2vec's text format


def vectors_of(model: torch.nn.Module) -> WordVectors:
    """The vocabulary's vectors of a word-vector model (word2vec's v_w, GloVe's W + W̃, fastText's means)."""
    return WordVectors(list(model.vocab.words), model.word_vectors().cpu())


def word_vectors_at(
    path: str | Path, limit: int | None = None, with_model: bool = True
) -> tuple[WordVectors, torch.nn.Module | None]:
    """The vectors at ``path`` — a run of train-vectors (its vectors.txt, and its model), a checkpoint of a
    word-vector family, or a file of published vectors (word2vec text or binary, GloVe text) — and the model
    when there is one (fastText's composes vectors for words it never saw; ``with_model=False``: only the
    vectors, a run's vectors.txt read without loading its model)."""
    p = Path(path)
    if not with_model and p.is_dir() and (p / VECTORS_FILE).is_file():
        return read_vectors(p / VECTORS_FILE, limit=limit), None
    # a run's model: its last checkpoint, the weights its vectors.txt was written from (not best/)
    checkpoint = (p if (p / "config.json").is_file() else latest_checkpoint(p)) if p.is_dir() else None
    if checkpoint is not None and registry.family_at(checkpoint).word_vectors:
        model, _ = registry.load(checkpoint)
        if (p / VECTORS_FILE).is_file():
            return read_vectors(p / VECTORS_FILE, limit=limit), model
        return vectors_of(model), model
    return read_vectors(p, limit=limit), None
