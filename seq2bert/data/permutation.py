"""XLNet's pretraining batches (Yang et al. 2019, Sect. 3.1): the documents as one stream (each ended by
<eod>), cut into contiguous blocks (data/lm.py's ``Blocks``), each block split at a random point into two
segments and framed as XLNet frames a pair,

    A <sep> B <sep> <cls>          token types 0 … 0 1 … 1 2       (models/xlnet/tokenizer.py)

so that the relative segment encodings and the summary token the task heads read are trained; the factorisation
order and its predicted tokens are drawn per block and pass (objectives/permutation_lm.py): perm_mask,
target_mapping, labels. A short last block is padded on the left, as the tokenizer pads: <cls> stays last.

Departures, said: B always continues A (the paper also draws it from another text half the time, but trains
no sentence loss on it — Table 6 drops next-sentence prediction); no memory is carried from one block to the
next (blocks are read in a random order, GPT's "randomly sampled, contiguous sequences"; the model has
Transformer-XL's recurrence, mems, for reading long texts); the predicted tokens are single tokens, not the
released code's n-gram spans.
"""

from __future__ import annotations

import numpy as np
import torch

from seq2bert.data.lm import Blocks, TokenStream
from seq2bert.data.pretraining import Batches
from seq2bert.objectives.permutation_lm import permutation_inputs, predicted_tokens

FRAME = 3  # <sep>, <sep>, <cls>


class PermutationBlocks:
    """Blocks of ``length`` tokens (``length`` − 3 of text and the frame), ``batches(epoch)`` their indices in
    a shuffled order (as ``Blocks``), ``collate(indices)`` XLNetLMHeadModel's inputs: input_ids,
    token_type_ids, attention_mask (B, T), perm_mask (B, T, T), target_mapping (B, P, T), labels (B, P). The
    split point, the order and its predicted tokens of a block are drawn from (seed, pass, block): the same on
    a resumed run, new each pass."""

    def __init__(
        self,
        stream: TokenStream,
        length: int,
        batch_size: int,
        *,
        sep: int,
        cls: int,
        pad: int,
        k: float,
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world: int = 1,
        source: str = "text",
    ):
        self.blocks = Blocks(
            stream,
            length - FRAME,
            batch_size,
            seed=seed,
            shuffle=shuffle,
            rank=rank,
            world=world,
            source=source,
        )
        self.stream, self.length, self.batch_size = stream, length, batch_size
        self.sep, self.cls, self.pad, self.k, self.seed = sep, cls, pad, k, seed

    def __len__(self) -> int:
        return len(self.blocks)

    def batches(self, epoch: int) -> Batches:
        inner = self.blocks.batches(epoch)  # each index is epoch · N + block: the pass is drawn from too
        return Batches(inner.order, epoch * len(self), self.batch_size, inner.rank, inner.world)

    def instance(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Block ``index`` mod N framed (ids, token types) and its predicted positions in order."""
        text = self.blocks.block(index % len(self))
        rng = np.random.default_rng((self.seed, index))
        split = int(rng.integers(1, len(text))) if len(text) > 1 else len(text)  # |A| ≥ 1, |B| ≥ 1
        ids = np.concatenate([text[:split], [self.sep], text[split:], [self.sep, self.cls]])
        types = np.concatenate([np.zeros(split + 1), np.ones(len(text) - split + 1), [2]]).astype(np.int64)
        predictable = np.ones(len(ids), dtype=bool)
        predictable[[split, len(ids) - 2, len(ids) - 1]] = False  # the functional tokens
        return ids, types, predicted_tokens(predictable, self.k, rng)

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        rows = [self.instance(i) for i in indices]
        T = max(len(ids) for ids, _, _ in rows)
        ids = torch.full((len(rows), T), self.pad, dtype=torch.long)  # (B, T), padded on the left
        types = torch.zeros(len(rows), T, dtype=torch.long)
        mask = torch.zeros(len(rows), T, dtype=torch.long)
        orders = []
        for b, (row, row_types, order) in enumerate(rows):
            shift = T - len(row)
            ids[b, shift:] = torch.from_numpy(row)
            types[b, shift:] = torch.from_numpy(row_types)
            mask[b, shift:] = 1
            orders.append(order + shift)
        return {
            "input_ids": ids,
            "token_type_ids": types,
            "attention_mask": mask,
            **permutation_inputs(ids, orders),
        }

    def tokens(self) -> int:
        """Tokens read per epoch (of which about 1/K predicted)."""
        return len(self.stream) + FRAME * len(self)
