"""fastText (Bojanowski, Grave, Joulin & Mikolov 2017, "Enriching Word Vectors with Subword Information"):
skip-gram with negative sampling (models/word2vec/) whose input vector of a word is built from its parts,

    s(w, c) = Σ_{g ∈ G_w} z_gᵀ v_c                                                         (Sect. 3.2)

G_w the word itself and its character n-grams, 3 ≤ n ≤ 6, hashed into K buckets (data/char_ngrams.py). A word
never seen gets the vector of its n-grams alone — the paper's answer to rare and unseen words (Sect. 5.4).

Departure, as fastText's code and gensim do: the input vector is the *mean* of the z_g, not their sum, so a
word's vector does not grow with its length (the paper's sum times 1/|G_w|: the same directions, and the
learning rate keeps its meaning); and, as that code updates, each z_g takes the whole gradient of the mean
(models/word2vec/model.py ``code_mean``). Initialisation as fastText's code: z_g uniform in ±1/d.
"""

from __future__ import annotations

import torch
from torch import nn

from seq2bert.data.char_ngrams import padded, subword_table, word_units
from seq2bert.data.word_corpus import Vocabulary
from seq2bert.models.fasttext.config import FastTextConfig
from seq2bert.models.word2vec.model import Word2Vec, code_mean, word_vectors_family


class SubwordEmbedding(nn.Module):
    """z_g for the V words and the K n-gram buckets (rows V … V + K − 1), and one zero row past them that pads
    each word's list of units; a word's vector is the mean of its units'. Sparse gradients."""

    def __init__(self, config: FastTextConfig):
        super().__init__()
        self.config = config
        rows = config.vocab_size + config.bucket
        d = config.vector_size
        self.bag = nn.EmbeddingBag(rows + 1, d, mode="sum", sparse=True, padding_idx=rows)
        with torch.no_grad():
            nn.init.uniform_(self.bag.weight, -1.0 / d, 1.0 / d)
            self.bag.weight[rows].zero_()
        self.register_buffer("units", torch.zeros(0, 1, dtype=torch.long), persistent=False)  # (V, G)

    def set_vocabulary(self, vocab: Vocabulary) -> None:
        """Each word's units (G_w): the word, then its hashed n-grams (data/char_ngrams.py)."""
        c = self.config
        table = subword_table(vocab.words, c.min_n, c.max_n, c.bucket)
        self.units = table.to(self.bag.weight.device)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (N,) vocabulary words → (N, d), the mean of each word's z_g."""
        if not len(self.units):
            raise ValueError("fastText's input table has no vocabulary: set_vocabulary first")
        return self.mean(self.units[ids])

    def mean(self, units: torch.Tensor) -> torch.Tensor:
        """(N, G) rows of units, padded → (N, d) the mean of each row's z_g, every z_g taking the whole
        gradient (``code_mean``: fastText's update)."""
        count = (units != self.bag.padding_idx).sum(1, keepdim=True).clamp(min=1)  # |G_w|: (N, 1)
        return code_mean(self.bag(units), count.to(self.bag.weight.dtype))

    def vectors_for(self, words: list[str], vocab: Vocabulary) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, d): a vocabulary word's vector as in training, an unseen word's the mean of its n-grams'."""
        c, index = self.config, vocab.index
        rows = [
            self.units[index[w]][self.units[index[w]] != self.bag.padding_idx].tolist()
            if w in index
            else word_units(w, c.vocab_size, c.min_n, c.max_n, c.bucket)
            for w in words
        ]
        units = padded(rows, self.bag.padding_idx).to(self.bag.weight.device)
        known = torch.tensor([w in index for w in words], dtype=torch.bool)
        return self.mean(units).detach(), known


class FastText(Word2Vec):
    """word2vec with ``SubwordEmbedding`` as its input table."""

    def __init__(self, config: FastTextConfig):
        super().__init__(config, input=SubwordEmbedding(config))


FAMILY = word_vectors_family("fasttext", FastTextConfig, FastText)
