"""Language-model data: documents as one continuous token stream, cut into segments for truncated
back-propagation through time (Williams & Peng 1990; the batching of Zaremba et al. 2014).

    stream   the documents of a prepared corpus (data/pretraining.py) one after the other, each followed by
             the separator token ([SEP] / </s>): w_1 w_2 … w_N
    rows     B parallel streams: row b is w_{bL+1} … w_{bL+L}, L = ⌊(N − 1) / B⌋
    segment  i of length T: inputs  row b's w_{bL+iT+1} … w_{bL+iT+T}
                              labels  the next tokens, w_{bL+iT+2} … w_{bL+iT+T+1}

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

from seq2bert.data.pretraining import Corpus
from seq2bert.errors import DataError


class TokenStream:
    """The documents ``documents`` (numbers in ``corpus``) as one stream of token ids with ``separator``
    after each document."""

    def __init__(self, corpus: Corpus, documents: np.ndarray, separator: int):
        self.corpus, self.documents, self.separator = corpus, np.asarray(documents), separator
        first = corpus.doc_sentences[self.documents]  # (D,) first sentence of each document
        last = corpus.doc_sentences[self.documents + 1]
        sentence_end = np.concatenate([[0], np.cumsum(corpus.lengths, dtype=np.int64)])  # token offsets
        sizes = sentence_end[last] - sentence_end[first] + 1  # (D,) tokens + the separator
        self.starts = np.concatenate([[0], np.cumsum(sizes)])  # (D + 1,) stream offset of each document
        self.first, self.last = first, last

    def __len__(self) -> int:
        return int(self.starts[-1])

    def read(self, start: int, end: int) -> np.ndarray:
        """Tokens start … end − 1 of the stream (int64)."""
        out = []
        d = int(np.searchsorted(self.starts, start, side="right") - 1)
        pos = start
        while pos < end:
            doc = self.corpus.tokens(int(self.first[d]), int(self.last[d])).astype(np.int64)
            doc = np.append(doc, self.separator)
            lo, hi = pos - int(self.starts[d]), min(end, int(self.starts[d + 1])) - int(self.starts[d])
            out.append(doc[lo:hi])
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
