"""GloVe (Pennington, Socher & Manning 2014, "GloVe: Global Vectors for Word Representation"): word vectors
w_i, context vectors w̃_j and biases b_i, b̃_j fitted to the logarithm of the co-occurrence counts X_ij
(data/cooccurrence.py) by weighted least squares,

    J = Σ_{i,j : X_ij > 0} f(X_ij) (w_iᵀ w̃_j + b_i + b̃_j − log X_ij)²                      (Eq. 8)
    f(x) = (x / x_max)^α if x < x_max, else 1                                                  (Eq. 9)

trained with AdaGrad (Sect. 4.2: "initial learning rate of 0.05"; train.optimizer=adagrad) on shuffled
entries of X. "We choose to use the sum W + W̃ as our word vectors" (Sect. 4.2). Initialisation as the
paper's code: every parameter uniform in ±0.5/d.

Departures: the loss is Eq. 8 itself (glove.c minimises ½ of it), and AdaGrad steps on the gradient summed
over a batch of entries (data.batch_size, 100,000) — a word's accumulator grows by (Σ g)² per step where
glove.c's grows by Σ g² entry by entry — so the step of a frequent word differs from the paper's code; on
the books this GloVe trails word2vec on syntax (docs/results.md, issue 43).
"""

from __future__ import annotations

import torch
from torch import nn

from seq2bert.data.word_corpus import Vocabulary
from seq2bert.models.glove.config import GloVeConfig
from seq2bert.models.pretrained import SavePretrained
from seq2bert.models.word2vec.model import WordVectorsOutput, word_vectors_family


def weighting(x: torch.Tensor, x_max: float, alpha: float) -> torch.Tensor:
    """f(x) of Eq. 9."""
    return torch.where(x < x_max, (x / x_max) ** alpha, torch.ones_like(x))


class GloVe(SavePretrained, nn.Module):
    def __init__(self, config: GloVeConfig):
        super().__init__()
        config.validate()
        self.config = c = config
        d = c.vector_size
        self.word = nn.Embedding(c.vocab_size, d, sparse=True)  # w_i
        self.context = nn.Embedding(c.vocab_size, d, sparse=True)  # w̃_j
        self.word_bias = nn.Embedding(c.vocab_size, 1, sparse=True)  # b_i
        self.context_bias = nn.Embedding(c.vocab_size, 1, sparse=True)  # b̃_j
        for p in self.parameters():
            nn.init.uniform_(p, -0.5 / d, 0.5 / d)
        self.vocab: Vocabulary | None = None

    def set_vocabulary(self, vocab: Vocabulary) -> None:
        if len(vocab) != self.config.vocab_size:
            raise ValueError(f"{len(vocab)} words for a model of vocab_size {self.config.vocab_size}")
        self.vocab = vocab

    def forward(self, rows: torch.Tensor, cols: torch.Tensor, counts: torch.Tensor) -> WordVectorsOutput:
        """rows, cols (N,) the pairs (i, j) of non-zero X_ij; counts (N,) X_ij. The summed terms of Eq. 8."""
        dot = (self.word(rows) * self.context(cols)).sum(-1)  # w_iᵀ w̃_j: (N,)
        fit = dot + self.word_bias(rows).squeeze(-1) + self.context_bias(cols).squeeze(-1) - counts.log()
        f = weighting(counts, self.config.x_max, self.config.alpha)
        return WordVectorsOutput((f * fit.square()).sum(), len(rows))

    @torch.no_grad()
    def word_vectors(self) -> torch.Tensor:
        """(V, d) W + W̃."""
        return (self.word.weight + self.context.weight).float()

    @torch.no_grad()
    def vectors_for(self, words: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, d) the vectors of ``words`` (zero outside the vocabulary) and (n,) which are known."""
        if self.vocab is None:
            raise ValueError("the model has no vocabulary: set_vocabulary first")
        vectors = self.word_vectors()
        index = self.vocab.index
        known = torch.tensor([w in index for w in words], dtype=torch.bool)
        rows = torch.tensor([index.get(w, 0) for w in words], dtype=torch.long)
        return vectors[rows] * known[:, None], known


FAMILY = word_vectors_family("glove", GloVeConfig, GloVe)
