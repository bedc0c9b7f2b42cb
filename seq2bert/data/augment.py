"""TinyBERT's data augmentation for task-specific distillation (Jiao et al. 2019, Sect. 3.2, Algorithm 1).

    for each sentence x, N_a times:
        x_m ← x
        for each word w_i of x:
            C ← the K most probable words for position i        a single-piece word: the masked LM's
                                                                predictions with w_i masked; a word of
                                                                several pieces: its nearest words in GloVe
            with probability p_t:  x_m[i] ← a word drawn from C uniformly
        add x_m to the augmented data
    (N_a = 20, p_t = 0.4, K = 15 in the paper)

An augmented sentence keeps its source's label; what the student learns from it is mostly the teacher's
output on it (TinyBERT's prediction-layer distillation reads nothing else). The candidates come from a
function ``candidates(words, i) -> list[str]`` (recipes/distill.py gives a masked LM's or the nearest
neighbours in a model's input embedding space); drawing them only for the words that are replaced gives the
same distribution as the algorithm's loop and asks for fewer. Sentence pairs are augmented sentence by
sentence, each with its own draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from tqdm.auto import tqdm

from seq2bert.data.glue import TextExample
from seq2bert.errors import ConfigError

Candidates = Callable[[list[str], int], list[str]]


@dataclass
class AugmentConfig:
    copies: int = 0  # N_a augmented copies of each training example (0: no augmentation)
    p: float = 0.4  # p_t, the probability that a word is replaced
    k: int = 15  # K candidates per word
    mlm: str = ""  # a masked-LM directory for the candidates; empty: the teacher's embeddings' neighbours

    def validate(self) -> None:
        if self.copies < 0 or self.k < 1 or not 0.0 < self.p <= 1.0:
            raise ConfigError(f"augment: copies >= 0, k >= 1 and p in (0, 1] expected, got {self}")

    def __post_init__(self) -> None:
        self.validate()


def augment_words(words: list[str], candidates: Candidates, p: float, rng: np.random.Generator) -> list[str]:
    """One augmented copy of ``words``: each replaced with probability p by one of its candidates."""
    out = list(words)
    for i in range(len(words)):
        if rng.random() < p:
            found = candidates(words, i)
            if found:
                out[i] = found[int(rng.integers(len(found)))]
    return out


def augment_examples(
    examples: list[TextExample], cfg: AugmentConfig, candidates: Candidates, seed: int, progress: bool = False
) -> list[TextExample]:
    """The examples followed by ``cfg.copies`` augmented copies of each (ids ``<id>-aug<n>``), in a seeded,
    reproducible draw."""
    rng = np.random.default_rng(seed)
    out = list(examples)
    for e in tqdm(examples, desc="augmenting", unit="ex", disable=not progress):
        for n in range(1, cfg.copies + 1):
            a = " ".join(augment_words(e.text_a.split(), candidates, cfg.p, rng))
            b = (
                None
                if e.text_b is None
                else " ".join(augment_words(e.text_b.split(), candidates, cfg.p, rng))
            )
            out.append(replace(e, id=f"{e.id}-aug{n}", text_a=a, text_b=b))
    return out
