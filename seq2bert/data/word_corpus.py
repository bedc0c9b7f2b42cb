"""The text static word vectors learn from: a vocabulary of whole words with their counts, and the corpus as
one array of word ids, read in one pass over the files.

    words     every run of letters and digits (an apostrophe inside a word kept: "don't"), lower-cased unless
              asked otherwise; punctuation is not a word (word2vec's text8 has none either)
    sentences each paragraph of a file (a blank line ends one; a Project Gutenberg book is read between its
              START and END markers): a context window never reaches across two paragraphs
    vocabulary the words seen at least ``min_count`` times, the most frequent first (ties: first seen first);
              the rarer ones are dropped from the corpus before windows are taken, as word2vec.c does

Then what every method draws from the corpus, in torch, for a whole chunk of positions at once:

* frequent-word subsampling (Mikolov et al. 2013b, Sect. 2.3). The paper discards an occurrence of w with
  P(w) = 1 − sqrt(t / f(w)) (Eq. 5); word2vec.c — and gensim — keep it with probability
  (sqrt(f(w) / t) + 1) · t / f(w), the formula used here (departure from Eq. 5, on purpose: the released code's,
  which the published vectors and gensim were trained with);
* the dynamic window (Mikolov et al. 2013a, Sect. 3.2: "we randomly choose a number R in range <1; C>"): each
  position reads the R words on each side, R uniform in 1 … window;
* the negative-sampling distribution, U(w)^{3/4} / Z (2013b, Sect. 2.2), as word2vec.c's table: 10^7 slots,
  word w holding a share of them proportional to count(w)^{3/4}; a draw is a uniform slot.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from seq2bert.data.pretraining import Skipped, iter_paragraphs
from seq2bert.errors import DataError
from seq2bert.io import atomic_write_text

log = logging.getLogger(__name__)

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
TABLE_SIZE = 10_000_000  # word2vec.c's table has 10^8 slots; 10^7 (40 MB) keeps any word of p ≥ 10^-7
VOCAB_FILE = "word_counts.txt"  # "word count" per line, most frequent first (word2vec -save-vocab's layout)


def words_of(text: str, lowercase: bool = True) -> list[str]:
    """The words of a text: runs of letters and digits, punctuation dropped."""
    return WORD.findall(text.lower() if lowercase else text)


def paragraphs(files: list[Path], lowercase: bool = True, progress_bar: bool = False) -> Iterator[list[str]]:
    """Each paragraph of the files as its words (empty paragraphs left out)."""
    skipped = Skipped()
    for path in tqdm(files, desc="reading", unit="file", disable=not progress_bar or len(files) < 2):
        for para in iter_paragraphs(path, "blank_line", False, skipped):
            if para is not None and (words := words_of(para, lowercase)):
                yield words


@dataclass
class Vocabulary:
    words: list[str]  # most frequent first
    counts: np.ndarray  # (V,) int64

    def __len__(self) -> int:
        return len(self.words)

    @property
    def index(self) -> dict[str, int]:
        if not hasattr(self, "_index"):
            self._index = {w: i for i, w in enumerate(self.words)}
        return self._index

    def save(self, directory: Path) -> None:
        lines = "".join(f"{w} {int(c)}\n" for w, c in zip(self.words, self.counts, strict=True))
        atomic_write_text(Path(directory) / VOCAB_FILE, lines)

    @classmethod
    def load(cls, directory: Path) -> Vocabulary:
        path = Path(directory) / VOCAB_FILE
        if not path.is_file():
            raise DataError(f"{path}: no such file (a word-vector checkpoint keeps its vocabulary there)")
        words, counts = [], []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            parts = line.split(" ")
            if len(parts) != 2 or not parts[1].isdigit():
                raise DataError(f"{path}:{number}: expected 'word count', got {line[:60]!r}")
            words.append(parts[0])
            counts.append(int(parts[1]))
        return cls(words, np.asarray(counts, dtype=np.int64))


@dataclass
class WordCorpus:
    """The corpus in the vocabulary's ids, one paragraph after another."""

    vocab: Vocabulary
    ids: np.ndarray  # (N,) int32: the vocabulary words of the text in order
    sentence: np.ndarray  # (N,) int32: the paragraph of each position
    total_words: int  # words of the text before the rare ones were dropped

    @property
    def num_words(self) -> int:
        return len(self.ids)

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, ids=self.ids, sentence=self.sentence, total=np.asarray(self.total_words))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, vocab: Vocabulary) -> WordCorpus:
        with np.load(path) as z:
            return cls(vocab, z["ids"], z["sentence"], int(z["total"]))


def read_corpus(
    files: list[Path],
    *,
    min_count: int = 5,
    max_vocab: int = 0,
    lowercase: bool = True,
    what: str = "data.files",
    progress_bar: bool = False,
) -> WordCorpus:
    """Count the words of ``files`` and keep those seen ``min_count`` times (at most ``max_vocab``, 0: all);
    the corpus in their ids. An empty text, or one with no word that frequent, is a DataError naming it."""
    names = ", ".join(str(f) for f in files)
    text = list(paragraphs(files, lowercase, progress_bar))
    counts = Counter(w for para in text for w in para)
    if not counts:
        raise DataError(f"{names}: no words in the text ({what}: expected text files with words)")
    ranked = sorted(counts.items(), key=lambda wc: -wc[1])  # stable: ties stay in first-seen order
    kept = [(w, c) for w, c in ranked if c >= min_count][: max_vocab or None]
    if not kept:
        raise DataError(
            f"{names}: no word occurs {min_count} times ({len(counts)} distinct words; lower min_count)"
        )
    vocab = Vocabulary([w for w, _ in kept], np.asarray([c for _, c in kept], dtype=np.int64))
    index = vocab.index
    ids, sentence = [], []
    for s, para in enumerate(text):
        row = [index[w] for w in para if w in index]
        ids += row
        sentence += [s] * len(row)
    total = sum(counts.values())
    log.info(
        "%s words, %s distinct; %s words of %s kept (min_count %d)",
        f"{total:,}",
        f"{len(counts):,}",
        f"{len(ids):,}",
        f"{len(vocab):,}",
        min_count,
    )
    return WordCorpus(vocab, np.asarray(ids, dtype=np.int32), np.asarray(sentence, dtype=np.int32), total)


def keep_probability(counts: np.ndarray, sample: float) -> torch.Tensor:
    """(V,) the chance each occurrence of a word stays, word2vec.c's (sqrt(f/t) + 1) · t/f with f = count / N
    and t = ``sample`` (0: every word stays)."""
    c = torch.as_tensor(counts, dtype=torch.float64)
    if sample <= 0:
        return torch.ones_like(c)
    threshold = sample * c.sum()  # t · N
    return ((c / threshold).sqrt() + 1) * threshold / c  # > 1 for rare words: always kept


def subsample(corpus: WordCorpus, keep: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(M,) the positions of the corpus that stay in one epoch (each drawn with its word's ``keep``)."""
    ids = torch.from_numpy(corpus.ids).long()
    draw = torch.rand(len(ids), generator=generator, dtype=torch.float64)
    return torch.nonzero(draw < keep[ids]).squeeze(1)


def windows(
    sentence: torch.Tensor, lo: int, hi: int, window: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """The context of each position t in lo … hi − 1 of a stream: R_t uniform in 1 … window words on each side,
    inside t's sentence. Returns the positions t − W … t + W but t, (B, 2W), and which of them are in the
    window, (B, 2W) bool."""
    t = torch.arange(lo, hi)  # (B,)
    reach = torch.randint(1, window + 1, (hi - lo,), generator=generator)  # R_t: (B,)
    offsets = torch.cat([torch.arange(-window, 0), torch.arange(1, window + 1)])  # (2W,)
    context = (t[:, None] + offsets[None, :]).clamp(0, len(sentence) - 1)  # (B, 2W)
    inside = (t[:, None] + offsets[None, :] >= 0) & (t[:, None] + offsets[None, :] < len(sentence))
    valid = inside & (offsets.abs()[None, :] <= reach[:, None]) & (sentence[context] == sentence[t][:, None])
    return context, valid


class UnigramTable:
    """P_n(w) = count(w)^{3/4} / Σ count^{3/4} (Mikolov et al. 2013b, Sect. 2.2) as word2vec.c's table: the
    slots are split between the words in proportion to P_n (boundaries at the rounded cumulative sums)."""

    def __init__(self, counts: np.ndarray, power: float = 0.75, size: int = TABLE_SIZE):
        p = torch.as_tensor(counts, dtype=torch.float64) ** power
        p = p / p.sum()
        ends = torch.round(p.cumsum(0) * size).long()  # slot after each word's last
        ends[-1] = size
        slots = torch.diff(ends, prepend=torch.zeros(1, dtype=torch.long))  # (V,)
        self.probs = p
        self.table = torch.repeat_interleave(torch.arange(len(p), dtype=torch.int32), slots)  # (size,)

    def sample(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        slots = torch.randint(0, len(self.table), shape, generator=generator)
        return self.table[slots].long()


def generator_for(seed: int, *keys: int) -> torch.Generator:
    """A torch generator for one (seed, epoch, batch …): the same draws whenever that batch is made again
    (a resumed run gives the batches of an uninterrupted one)."""
    g = torch.Generator()
    g.manual_seed(int(np.random.SeedSequence([seed, *keys]).generate_state(1, np.uint64)[0]) >> 1)
    return g


class WindowBatches:
    """The batches of word2vec and fastText. Each epoch the corpus is subsampled afresh and the positions that
    stay (the epoch's stream) are cut into ``len(batches)`` equal stretches — as many in every epoch (the
    expected length of a stream over ``batch_words``), so a linear decay of the learning rate ends at the last
    step. A batch holds every position of its stretch with its window, and ``negative`` noise words per pair:

        skip-gram  centers (B,), pair_center (P,), contexts (P,), negatives (P, k)
        CBOW       contexts (B, 2W), context_mask (B, 2W), targets (B,), negatives (B, k)

    Every draw comes from a generator of (seed, epoch, batch): a batch made again is the same batch."""

    def __init__(
        self,
        corpus: WordCorpus,
        *,
        architecture: str,
        window: int,
        negative: int,
        sample: float,
        ns_exponent: float,
        batch_words: int,
        seed: int,
    ):
        self.corpus, self.architecture = corpus, architecture
        self.window, self.negative, self.seed = window, negative, seed
        self.keep = keep_probability(corpus.vocab.counts, sample)
        self.table = UnigramTable(corpus.vocab.counts, ns_exponent)
        expected = float((torch.as_tensor(corpus.vocab.counts) * self.keep.clamp(max=1)).sum())
        self.num_batches = max(1, math.ceil(expected / batch_words))
        self.ids = torch.from_numpy(corpus.ids).long()
        self.sentence = torch.from_numpy(corpus.sentence)
        self._stream: tuple[int, torch.Tensor, torch.Tensor] | None = None

    def batches(self, epoch: int) -> list[list[int]]:
        return [[epoch, b] for b in range(self.num_batches)]

    def stream(self, epoch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(M,) the word ids and (M,) the sentences of the epoch's subsampled corpus."""
        if self._stream is None or self._stream[0] != epoch:
            kept = subsample(self.corpus, self.keep, generator_for(self.seed, epoch))
            self._stream = (epoch, self.ids[kept], self.sentence[kept])
        return self._stream[1], self._stream[2]

    def collate(self, index: list[int]) -> dict[str, torch.Tensor]:
        epoch, b = index
        ids, sentence = self.stream(epoch)
        M, n = len(ids), self.num_batches
        lo, hi = b * M // n, (b + 1) * M // n
        g = generator_for(self.seed, epoch, b + 1)
        context, valid = windows(sentence, lo, hi, self.window, g)  # (B, 2W) each
        if self.architecture == "cbow":
            has = valid.any(1)  # a word alone in its sentence has no context to predict it from
            targets = ids[lo:hi][has]
            return {
                "contexts": ids[context[has]],
                "context_mask": valid[has],
                "targets": targets,
                "negatives": self.table.sample((len(targets), self.negative), g),
            }
        pair_center = torch.arange(hi - lo)[:, None].expand_as(valid)[valid]  # (P,)
        contexts = ids[context[valid]]  # (P,)
        return {
            "centers": ids[lo:hi],
            "pair_center": pair_center,
            "contexts": contexts,
            "negatives": self.table.sample((len(contexts), self.negative), g),
        }
