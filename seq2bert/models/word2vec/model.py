"""word2vec (Mikolov et al. 2013a, "Efficient Estimation of Word Representations in Vector Space"; 2013b,
"Distributed Representations of Words and Phrases and their Compositionality"): two tables of word vectors,
the input vectors v_w (the word vectors kept at the end) and the output vectors v'_w, trained by negative
sampling (objectives/negative_sampling.py, Eq. 4 of 2013b) on

    skip-gram (2013a, Fig. 1 right): each word w_t predicts every word w_{t+j} of its window, −R ≤ j ≤ R, j ≠ 0
        (1/T) Σ_t Σ_j log p(w_{t+j} | w_t)                                                  (2013b, Eq. 1)
    CBOW (2013a, Fig. 1 left): the average of the window's input vectors, h = (1/|C|) Σ_{c∈C} v_c, predicts
        the word in the middle

Initialisation as word2vec.c: v_w uniform in ±0.5/d, v'_w zero. The batches (data/word_corpus.py) hold every
pair of a stretch of the text, drawn with the dynamic window after frequent words were subsampled, and k
noise words per pair from the unigram^{3/4} table; training is plain SGD with the learning rate decaying
linearly to zero (the training section: schedule=linear), over sparse gradients (only the rows a batch
touches move).

Departure: word2vec.c's skip-gram updates the *context* word's input vector to predict the centre word (it
swaps w_I and w_O of Eq. 1); this model follows the paper — the centre predicts its context — as fastText does.
Over a corpus the two see the same pairs, once each way.

fastText (models/fasttext/) is this model with another input table: v_w the mean of the word's subword vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from seq2bert.data.word_corpus import VOCAB_FILE, Vocabulary
from seq2bert.models.family import Family
from seq2bert.models.pretrained import SavePretrained
from seq2bert.models.word2vec.config import Word2VecConfig
from seq2bert.objectives.negative_sampling import negative_sampling_loss


@dataclass
class WordVectorsOutput:
    loss: torch.Tensor  # summed over the batch's pairs (objectives/negative_sampling.py)
    pairs: int  # the (input, output) pairs it scored


def code_mean(summed: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """summed / count in the forward pass, but each summand receives the whole gradient of the mean, not a
    1/count share: word2vec.c's CBOW adds the error of h to every context word's vector ("neu1e"), and
    fastText's code to every subword's (not for its supervised model) — gensim does the same. Departure from
    the plain gradient of the mean, on purpose: measured on the books, the true gradient (1/|C| of the step
    per word) leaves CBOW 8.6 and fastText 20 analogy points behind gensim at equal settings."""
    return (summed / count).detach() + summed - summed.detach()


class WordEmbedding(nn.Embedding):
    """One input vector per word, v_w, uniform in ±0.5/d (word2vec.c); sparse gradients."""

    def __init__(self, config: Word2VecConfig):
        super().__init__(config.vocab_size, config.vector_size, sparse=True)
        nn.init.uniform_(self.weight, -0.5 / config.vector_size, 0.5 / config.vector_size)

    def set_vocabulary(self, vocab: Vocabulary) -> None:
        """Nothing to derive: the rows are the vocabulary's words."""

    def vectors_for(self, words: list[str], vocab: Vocabulary) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, d) the vectors of ``words`` (zero for a word outside the vocabulary) and (n,) which are known."""
        index = vocab.index
        known = torch.tensor([w in index for w in words], dtype=torch.bool)
        rows = torch.tensor([index.get(w, 0) for w in words], dtype=torch.long)
        return self.weight.detach()[rows] * known[:, None], known


class Word2Vec(SavePretrained, nn.Module):
    """Input vectors (``input``: v_w; fastText's subwords when injected) and output vectors (``output``:
    v'_w); ``forward`` takes a batch of the configured architecture and returns the summed loss."""

    def __init__(self, config: Word2VecConfig, input: nn.Module | None = None):
        super().__init__()
        config.validate()
        self.config = config
        self.input = input if input is not None else WordEmbedding(config)
        self.output = nn.Embedding(config.vocab_size, config.vector_size, sparse=True)  # v'_w
        nn.init.zeros_(self.output.weight)
        self.vocab: Vocabulary | None = None

    def set_vocabulary(self, vocab: Vocabulary) -> None:
        if len(vocab) != self.config.vocab_size:
            raise ValueError(f"{len(vocab)} words for a model of vocab_size {self.config.vocab_size}")
        self.vocab = vocab
        self.input.set_vocabulary(vocab)

    def forward(self, **batch: torch.Tensor) -> WordVectorsOutput:
        if self.config.architecture == "skipgram":
            return self.skipgram(**batch)
        return self.cbow(**batch)

    def skipgram(
        self,
        centers: torch.Tensor,
        pair_center: torch.Tensor,
        contexts: torch.Tensor,
        negatives: torch.Tensor,
    ) -> WordVectorsOutput:
        """centers (B,) the words w_t; pair_center (P,) the centre of each pair (an index into centers);
        contexts (P,) its context word w_{t+j}; negatives (P, k) the noise words."""
        v_in = self.input(centers)[pair_center]  # v_{w_t} once per centre, then per pair: (P, d)
        return self.score(v_in, contexts, negatives)

    def cbow(
        self,
        contexts: torch.Tensor,
        context_mask: torch.Tensor,
        targets: torch.Tensor,
        negatives: torch.Tensor,
    ) -> WordVectorsOutput:
        """contexts (B, 2W) the window's words, context_mask (B, 2W) which are in the window; targets (B,)
        the middle words; negatives (B, k)."""
        mask = context_mask.to(self.output.weight.dtype)[..., None]  # (B, 2W, 1)
        v = self.input(contexts.reshape(-1)).view(*contexts.shape, self.config.vector_size)  # (B, 2W, d)
        h = code_mean((v * mask).sum(1), mask.sum(1).clamp(min=1))  # h = (1/|C|) Σ_c v_c: (B, d)
        return self.score(h, targets, negatives)

    def score(self, v_in: torch.Tensor, targets: torch.Tensor, negatives: torch.Tensor) -> WordVectorsOutput:
        """v_in (P, d) against the output vectors of each pair's word w_O (targets, (P,)) and noise (P, k)."""
        v_out = self.output(
            torch.cat([targets[:, None], negatives], 1)
        )  # v'_{w_O}, v'_{w_1…k}: (P, 1 + k, d)
        scores = (v_out * v_in[:, None, :]).sum(-1)  # v'ᵀ v_{w_I}: (P, 1 + k)
        loss = negative_sampling_loss(scores, negatives != targets[:, None])
        return WordVectorsOutput(loss, len(targets))

    @torch.no_grad()
    def word_vectors(self) -> torch.Tensor:
        """(V, d) the vector of each vocabulary word: its input vector v_w."""
        return self.input(torch.arange(self.config.vocab_size, device=self.output.weight.device)).float()

    @torch.no_grad()
    def vectors_for(self, words: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, d) the vectors of any words — zero for one word2vec never saw (fastText composes them) — and
        (n,) which are the model's own."""
        if self.vocab is None:
            raise ValueError("the model has no vocabulary: set_vocabulary first")
        return self.input.vectors_for(words, self.vocab)


def save_vocabulary(model: nn.Module, directory) -> None:
    """A word-vector checkpoint's words and counts (word_counts.txt), beside its weights."""
    if model.vocab is not None:
        model.vocab.save(directory)


def load_vocabulary(model: nn.Module, directory) -> None:
    """The checkpoint's vocabulary, when it was saved with one (a model never trained has none)."""
    if (Path(directory) / VOCAB_FILE).is_file():
        model.set_vocabulary(Vocabulary.load(directory))


def vocabulary_of(directory) -> Vocabulary | None:
    """A word-vector checkpoint's tokenizer: its words and counts (None when it has none)."""
    return Vocabulary.load(directory) if (Path(directory) / VOCAB_FILE).is_file() else None


def word_vectors_family(model_type: str, config_class: type, model_class: type[nn.Module]) -> Family:
    """A family of static word vectors (word2vec, fastText, GloVe): one architecture, its vocabulary kept
    beside the weights and returned as its tokenizer."""
    return Family(
        model_type,
        config_class,
        {model_class.__name__: model_class},
        heads={"base": model_class.__name__},
        kind="encoder",
        tokenizer="words",
        load_tokenizer=vocabulary_of,
        save_files=save_vocabulary,
        load_files=load_vocabulary,
        word_vectors=True,
    )


FAMILY = word_vectors_family("word2vec", Word2VecConfig, Word2Vec)
