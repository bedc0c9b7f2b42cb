"""Language-model data: documents as one continuous token stream, cut into segments for truncated
back-propagation through time (Williams & Peng 1990; the batching of Zaremba et al. 2014).

    stream   the documents of a prepared corpus (data/pretraining.py) one after the other, each followed by
             the separator token ([SEP] / </s>): w_1 w_2 … w_N
    rows     B parallel streams: row b is w_{bL+1} … w_{bL+L}, L = ⌊(N − 1) / B⌋
    segment  i of length T: inputs  row b's w_{bL+iT+1} … w_{bL+iT+T}
                              labels  the next tokens, w_{bL+iT+2} … w_{bL+iT+T+1}

A bidirectional LM (ELMo) reads a second stream, the first reversed (``ReversedStream``), cut the same way
(``BiStreamBatches``): the backward LM reads the text from its end, and its state carries over too.

A Transformer LM (GPT) reads the stream as ``Blocks``: contiguous, non-overlapping blocks of L tokens, in a
random order ("minibatches of 64 randomly sampled, contiguous sequences of 512 tokens", Radford et al. 2018,
Sect. 4.1), each its own context — transformers' run_clm cuts its text so too:

    block j  inputs = labels = w_{jL+1} … w_{jL+L}   (the model shifts: w_{jL+1} is context only)

Segment i + 1 of a row continues where segment i ended, so the recurrent state after segment i is the right
state to start segment i + 1 from: the training loop carries it over, detached (the gradient stops at the
segment boundary — truncation — while the state keeps the whole history). The batches of an epoch must be
read in order. Tokens are read from disk on demand (two reads per row and segment), so the corpus may be far
larger than memory.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from seq2bert.data.pretraining import Batches, Corpus, shuffled
from seq2bert.errors import DataError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX


class TokenStream:
    """The documents ``documents`` (numbers in ``corpus``) as one stream of token ids with ``separator``
    after each document — or, with ``sentence_markers`` (bos, eos), each sentence between them and no
    separator: <S> w_1 … w_n </S> <S> … (ELMo's biLM reads its text so)."""

    def __init__(
        self,
        corpus: Corpus,
        documents: np.ndarray,
        separator: int,
        *,
        sentence_markers: tuple[int, int] | None = None,
    ):
        self.corpus, self.documents, self.separator = corpus, np.asarray(documents), separator
        self.markers = sentence_markers
        first = corpus.doc_sentences[self.documents]  # (D,) first sentence of each document
        last = corpus.doc_sentences[self.documents + 1]
        sentence_end = np.concatenate([[0], np.cumsum(corpus.lengths, dtype=np.int64)])  # token offsets
        extra = 1 if sentence_markers is None else 2 * (last - first)  # the separator, or two per sentence
        sizes = sentence_end[last] - sentence_end[first] + extra  # (D,)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])  # (D + 1,) stream offset of each document
        self.first, self.last = first, last

    def document(self, d: int) -> np.ndarray:
        """Document d (of ``documents``) as it stands in the stream."""
        first, last = int(self.first[d]), int(self.last[d])
        tokens = self.corpus.tokens(first, last).astype(np.int64)
        if self.markers is None:
            return np.append(tokens, self.separator)
        lengths = self.corpus.lengths[first:last].astype(np.int64)  # (S,)
        sentence = np.repeat(np.arange(len(lengths)), lengths)  # the sentence of each token
        out = np.empty(len(tokens) + 2 * len(lengths), np.int64)
        out[np.arange(len(tokens)) + 2 * sentence + 1] = tokens  # token j of sentence i moves 2i + 1 on
        ends = np.cumsum(lengths)
        out[ends - lengths + 2 * np.arange(len(lengths))] = self.markers[0]  # <S> before each sentence
        out[ends + 2 * np.arange(len(lengths)) + 1] = self.markers[1]  # </S> after it
        return out

    def __len__(self) -> int:
        return int(self.starts[-1])

    def part(self, d: int, lo: int, hi: int) -> np.ndarray:
        """Tokens lo … hi − 1 of document d as it stands in the stream; without sentence markers only those
        tokens are read (a block of a book-long document does not read the book)."""
        if self.markers is not None:
            return self.document(d)[lo:hi]
        n = int(self.starts[d + 1] - self.starts[d]) - 1  # the document's tokens; the separator follows
        text = self.corpus.tokens_from(int(self.first[d]), lo, min(hi, n)) if lo < min(hi, n) else []
        end = np.array([self.separator] if hi > n else [], np.int64)
        return np.concatenate([np.asarray(text, np.int64), end])

    def read(self, start: int, end: int) -> np.ndarray:
        """Tokens start … end − 1 of the stream (int64)."""
        out = []
        d = int(np.searchsorted(self.starts, start, side="right") - 1)
        pos = start
        while pos < end:
            lo, hi = pos - int(self.starts[d]), min(end, int(self.starts[d + 1])) - int(self.starts[d])
            out.append(self.part(d, lo, hi))
            pos += hi - lo
            d += 1
        return np.concatenate(out) if out else np.zeros(0, np.int64)


class StreamBatches:
    """The TBPTT segments of a stream: ``batches(epoch)`` is [[0], [1], …] in order (segment numbers, for the
    training engine), ``collate([i])`` gives segment i's input_ids and labels (B, T)."""

    def __init__(self, stream: TokenStream, batch_size: int, bptt: int, *, source: str = "text"):
        if len(stream) < batch_size * 2 + 1:
            raise DataError(
                f"{source}: {len(stream)} tokens, too few for {batch_size} parallel streams (data.batch_size)"
            )
        self.stream, self.batch_size, self.bptt = stream, batch_size, bptt
        self.row_length = (len(stream) - 1) // batch_size  # L
        self.num_segments = math.ceil(self.row_length / bptt)

    def batches(self, epoch: int) -> list[list[int]]:
        return [[i] for i in range(self.num_segments)]

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        (i,) = indices
        begin = i * self.bptt
        T = min(self.bptt, self.row_length - begin)  # the last segment may be shorter
        rows = [
            self.stream.read(b * self.row_length + begin, b * self.row_length + begin + T + 1)
            for b in range(self.batch_size)
        ]
        tokens = torch.from_numpy(np.stack(rows))  # (B, T + 1)
        return {"input_ids": tokens[:, :-1], "labels": tokens[:, 1:].clone()}

    def tokens(self) -> int:
        """Tokens predicted per epoch."""
        return self.batch_size * self.row_length


class ReversedStream:
    """A stream read backwards: token i is the stream's token N − 1 − i (a backward LM's text: each sentence
    reversed between </S> … <S>, the sentences in reverse order)."""

    def __init__(self, stream: TokenStream):
        self.stream = stream

    def __len__(self) -> int:
        return len(self.stream)

    def read(self, start: int, end: int) -> np.ndarray:
        n = len(self.stream)
        return self.stream.read(n - end, n - start)[::-1].copy()


class BiStreamBatches:
    """The TBPTT segments of a biLM (ELMo): segment i of the stream for the forward LM and segment i of the
    reversed stream for the backward LM — each LM reads in its own direction and carries its state from
    one segment to the next; over an epoch each predicts every token of the text once.

    The tokens are given as the character ids of their vocabulary entries (``char_table`` (V_in, W),
    data/characters.py), so a word outside the softmax's ``vocab_size`` words is still read by its
    spelling; as a target it is [UNK] (``unk_token_id``)."""

    def __init__(
        self,
        stream: TokenStream,
        batch_size: int,
        bptt: int,
        *,
        char_table: np.ndarray,
        vocab_size: int,
        unk_token_id: int,
        source: str = "text",
    ):
        self.forward = StreamBatches(stream, batch_size, bptt, source=source)
        self.backward = StreamBatches(ReversedStream(stream), batch_size, bptt, source=source)
        self.char_table = torch.from_numpy(char_table)  # int16: 100 bytes a word
        self.vocab_size, self.unk_token_id = vocab_size, unk_token_id

    def batches(self, epoch: int) -> list[list[int]]:
        return self.forward.batches(epoch)

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = {}
        for prefix, batches in (("", self.forward), ("backward_", self.backward)):
            segment = batches.collate(indices)
            labels = segment["labels"]
            batch[prefix + "char_ids"] = self.char_table[segment["input_ids"]].long()  # (B, T, W)
            batch[prefix + "labels"] = labels.masked_fill(labels >= self.vocab_size, self.unk_token_id)
        return batch

    def tokens(self) -> int:
        """Tokens of text per epoch (each predicted by both LMs)."""
        return self.forward.tokens()


class Blocks:
    """A stream cut into contiguous blocks of ``length`` tokens (the last one shorter, when it holds at least two
    tokens): ``batches(epoch)`` their indices in a shuffled order (deterministic per seed and epoch; this rank's
    share when distributed), ``collate(indices)`` input_ids, attention_mask and labels (B, T) — the labels are
    the inputs, −100 on the padding of a short last block (the model shifts them)."""

    def __init__(
        self,
        stream: TokenStream,
        length: int,
        batch_size: int,
        *,
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world: int = 1,
        source: str = "text",
    ):
        if len(stream) < 2:
            raise DataError(f"{source}: {len(stream)} token(s), too few for a block of text")
        self.stream, self.length, self.batch_size = stream, length, batch_size
        self.seed, self.shuffle, self.rank, self.world = seed, shuffle, rank, world
        full, rest = divmod(len(stream), length)
        self.num_blocks = full + (rest >= 2)

    def __len__(self) -> int:
        return self.num_blocks

    def block(self, j: int) -> np.ndarray:
        """Tokens jL … jL + L − 1 of the stream (fewer for the last block)."""
        return self.stream.read(j * self.length, min((j + 1) * self.length, len(self.stream)))

    def batches(self, epoch: int) -> Batches:
        order = shuffled(self.num_blocks, np.random.default_rng((self.seed, epoch)))
        return Batches(
            order if self.shuffle else np.arange(self.num_blocks), 0, self.batch_size, self.rank, self.world
        )

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        rows = [self.block(j) for j in indices]
        T = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), T, dtype=torch.long)  # (B, T); a short block padded with 0, masked
        mask = torch.zeros(len(rows), T, dtype=torch.long)
        for b, r in enumerate(rows):
            ids[b, : len(r)] = torch.from_numpy(r)
            mask[b, : len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, IGNORE_INDEX)}

    def tokens(self) -> int:
        """Tokens predicted per epoch (the first of each block is context only)."""
        full, rest = divmod(len(self.stream), self.length)
        return full * (self.length - 1) + max(rest - 1, 0) * (rest >= 2)
