"""GloVe's co-occurrence matrix (Pennington et al. 2014, Sect. 4.2): X_ij, how often word j occurs in the
context of word i, "a symmetric context window with ten words to the left and ten words to the right", and
"word pairs that are d words apart contribute 1/d to the total count". Windows stay inside a paragraph (the
paper's code starts a window afresh at each line).

Built in one streaming pass over the corpus: a chunk of positions at a time, the chunk's pairs (i, j) at each
distance d summed into a sparse matrix (torch's sparse COO: the pairs' keys i·V + j sorted and reduced), which
is added to the running one. Memory: the chunk's pairs and the non-zero entries so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from seq2bert.data.word_corpus import WordCorpus, generator_for


@dataclass
class Cooccurrences:
    rows: torch.Tensor  # (N,) i, int64
    cols: torch.Tensor  # (N,) j
    counts: torch.Tensor  # (N,) X_ij > 0, float32

    def __len__(self) -> int:
        return len(self.counts)

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, rows=self.rows.numpy(), cols=self.cols.numpy(), counts=self.counts.numpy())
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Cooccurrences:
        with np.load(path) as z:
            return cls(*(torch.from_numpy(z[k]) for k in ("rows", "cols", "counts")))


def count_cooccurrences(
    corpus: WordCorpus, window: int, chunk: int = 1 << 20, progress_bar: bool = False
) -> Cooccurrences:
    """X of the corpus, both directions counted (X is symmetric): for each position t and distance
    1 ≤ d ≤ window inside its paragraph, X[w_t, w_{t+d}] and X[w_{t+d}, w_t] grow by 1/d."""
    ids = torch.from_numpy(corpus.ids).long()
    sentence = torch.from_numpy(corpus.sentence)
    V, N = len(corpus.vocab), len(ids)
    total = torch.sparse_coo_tensor(
        torch.zeros(2, 0, dtype=torch.long),
        torch.zeros(0, dtype=torch.float64),
        (V, V),
        check_invariants=False,
    )
    for lo in tqdm(range(0, N, chunk), desc="co-occurrences", unit="chunk", disable=not progress_bar):
        t = torch.arange(lo, min(lo + chunk, N))
        keys, weights = [], []
        for d in range(1, window + 1):
            u = t[t + d < N]
            u = u[sentence[u] == sentence[u + d]]  # w_t and w_{t+d} in one paragraph
            i, j = ids[u], ids[u + d]
            keys += [torch.stack([i, j]), torch.stack([j, i])]
            weights.append(torch.full((2 * len(u),), 1.0 / d, dtype=torch.float64))
        part = torch.sparse_coo_tensor(
            torch.cat(keys, 1), torch.cat(weights), (V, V), check_invariants=False
        ).coalesce()
        total = (total + part).coalesce()
    rows, cols = total.indices()
    return Cooccurrences(rows, cols, total.values().float())


class CooccurrenceBatches:
    """GloVe's batches: the non-zero entries of X in a new random order each epoch (a generator of
    (seed, epoch)), ``batch_size`` entries a step: rows, cols (N,) and counts (N,) X_ij."""

    def __init__(self, cooc: Cooccurrences, batch_size: int, seed: int):
        self.cooc, self.batch_size, self.seed = cooc, batch_size, seed
        self.num_batches = max(1, -(-len(cooc) // batch_size))
        self._order: tuple[int, torch.Tensor] | None = None

    def batches(self, epoch: int) -> list[list[int]]:
        return [[epoch, b] for b in range(self.num_batches)]

    def collate(self, index: list[int]) -> dict[str, torch.Tensor]:
        epoch, b = index
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, torch.randperm(len(self.cooc), generator=generator_for(self.seed, epoch)))
        rows = self._order[1][b * self.batch_size : (b + 1) * self.batch_size]
        c = self.cooc
        return {"rows": c.rows[rows], "cols": c.cols[rows], "counts": c.counts[rows]}
