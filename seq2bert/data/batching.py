"""Length-bucketed batching and dynamic padding.

Padding wastes compute in proportion to the spread of lengths inside a batch. :class:`BucketBatchSampler`
keeps that spread small the way fairseq and tensor2tensor do: it draws large random *pools* of examples, sorts
each pool by length, cuts it into batches of similar lengths, and shuffles the order of the batches. A token
budget (``max_tokens``) then gives every batch about the same amount of work whatever its lengths.
:func:`pad_sequences` pads one batch to its own longest sequence.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Sampler

from seq2bert.errors import UserError


class BucketBatchSampler(Sampler[list[int]]):
    """Yields lists of example indices, grouping examples of similar length.

    Examples are sorted by length inside large shuffled pools so each batch holds similar lengths (little
    padding); batches are limited by a token budget and/or a sentence count. Order is deterministic from
    ``(seed, epoch)``; call :meth:`set_epoch` before each epoch (as with ``DistributedSampler``) for a new
    order.

    * ``max_tokens`` counts *padded* tokens: ``len(batch) * max(length in batch)``. An example longer than
      ``max_tokens`` is never dropped: it gets a batch of its own, the only kind of batch over the budget.
    * ``batch_size`` caps the number of examples per batch.
    * ``shuffle=False``: one fixed order, all examples sorted by length (ties by index), for evaluation.
    * ``shuffle=True``: a permutation seeded by ``(seed, epoch)`` is cut into pools of
      ``pool_factor × (examples per batch, estimated from the mean length)``; each pool is sorted by length
      and cut into batches, and the order of all batches is shuffled with the same generator.
    * ``drop_last=True`` drops, in each pool, the last batch if it is not full (it could have taken one more
      example of its length); with several replicas it also truncates the batch list to a multiple of
      ``num_replicas`` instead of padding it by repeating batches from its start.
    * ``num_replicas > 1``: every rank computes the same batch list for the epoch, brought to a multiple of
      ``num_replicas`` batches, and rank ``r`` takes ``batches[r::num_replicas]``.

    Args:
        lengths: one length per example; for a pair, the larger of source and target length. A sequence of
            ``(source_length, target_length)`` pairs is accepted too and reduced with ``max``.
        max_tokens: budget of padded tokens per batch.
        batch_size: most examples per batch. At least one of ``max_tokens`` and ``batch_size`` is required.
        shuffle: random pools and batch order (training) or one sorted order (evaluation).
        seed: seed of the generator, combined with the epoch.
        pool_factor: pool size in (estimated) batches.
        drop_last: drop incomplete batches (see above).
        num_replicas: number of distributed processes.
        rank: this process, in ``[0, num_replicas)``.
    """

    def __init__(
        self,
        lengths: Sequence[int] | Sequence[tuple[int, int]],
        *,
        max_tokens: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        pool_factor: int = 100,
        drop_last: bool = False,
        num_replicas: int = 1,
        rank: int = 0,
    ) -> None:
        super().__init__()
        if max_tokens is None and batch_size is None:
            raise UserError("BucketBatchSampler needs max_tokens, batch_size or both")
        for name, value in (("max_tokens", max_tokens), ("batch_size", batch_size)):
            if value is not None and not _is_int(value, minimum=1):
                raise UserError(f"{name} must be a positive integer or None, got {value!r}")
        for name, value, minimum in (
            ("seed", seed, 0),
            ("pool_factor", pool_factor, 1),
            ("num_replicas", num_replicas, 1),
        ):
            if not _is_int(value, minimum=minimum):
                raise UserError(f"{name} must be an integer >= {minimum}, got {value!r}")
        if not _is_int(rank, minimum=0) or rank >= num_replicas:
            raise UserError(f"rank must be an integer in [0, num_replicas={num_replicas}), got {rank!r}")

        self.lengths = _as_lengths(lengths)  # (N,)
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.pool_factor = pool_factor
        self.drop_last = drop_last
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.pool_size = pool_factor * self._examples_per_batch()
        self._cached: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose batches :meth:`__iter__` and :meth:`__len__` use."""
        if not _is_int(epoch, minimum=0):
            raise UserError(f"epoch must be an integer >= 0, got {epoch!r}")
        self.epoch = epoch

    def batches(self, epoch: int) -> list[list[int]]:
        """The full, deterministic list of batches of ``epoch`` for this rank (computed once per epoch)."""
        if self._cached is not None and self._cached[0] == epoch:
            return self._cached[1]
        if self.shuffle:
            rng = np.random.default_rng([self.seed, epoch])
            permutation = rng.permutation(len(self.lengths))
            batches: list[list[int]] = []
            for start in range(0, len(permutation), self.pool_size):
                pool = permutation[start : start + self.pool_size]
                batches.extend(self._cut(pool[np.argsort(self.lengths[pool], kind="stable")]))
            batches = [batches[i] for i in rng.permutation(len(batches))]
        else:
            batches = self._cut(np.argsort(self.lengths, kind="stable"))
        batches = self._shard(batches)
        self._cached = (epoch, batches)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches(self.epoch))

    def __len__(self) -> int:
        return len(self.batches(self.epoch))

    def _examples_per_batch(self) -> int:
        """Rough number of examples per batch, used only to size the pools."""
        estimate = self.batch_size if self.batch_size is not None else len(self.lengths) or 1
        if self.max_tokens is not None:
            mean_length = max(1.0, float(self.lengths.mean())) if len(self.lengths) else 1.0
            estimate = min(estimate, max(1, int(self.max_tokens // mean_length)))
        return estimate

    def _cut(self, order: np.ndarray) -> list[list[int]]:
        """Cut indices sorted by length into consecutive batches within the budget (greedy)."""
        batches: list[list[int]] = []
        batch: list[int] = []
        longest = 0
        for index, length in zip(order.tolist(), self.lengths[order].tolist(), strict=True):
            length = max(length, 1)  # an empty sequence still occupies a row
            if batch and self._full(len(batch), max(longest, length)):
                batches.append(batch)
                batch, longest = [], 0
            batch.append(index)
            longest = max(longest, length)
        if batch and not (self.drop_last and not self._full(len(batch), longest)):
            batches.append(batch)
        return batches

    def _full(self, size: int, longest: int) -> bool:
        """Whether a batch of ``size`` examples cannot take one more example of length ``longest``."""
        if self.batch_size is not None and size >= self.batch_size:
            return True
        return self.max_tokens is not None and (size + 1) * longest > self.max_tokens

    def _shard(self, batches: list[list[int]]) -> list[list[int]]:
        """Bring the batch list to a multiple of ``num_replicas`` and take this rank's share."""
        replicas = self.num_replicas
        if replicas == 1:
            return batches
        if self.drop_last:
            batches = batches[: len(batches) - len(batches) % replicas]
        elif batches and len(batches) % replicas:
            missing = replicas - len(batches) % replicas
            batches = batches + [batches[i % len(batches)] for i in range(missing)]
        return batches[self.rank :: replicas]


def pad_sequences(
    seqs: Sequence[Sequence[int] | torch.Tensor],
    pad_id: int,
    *,
    left: bool = False,
    dtype: torch.dtype = torch.long,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad sequences of token ids to the longest one in the batch.

    Args:
        seqs: B sequences of ids (lists or 1-D tensors), possibly empty.
        pad_id: id written in the padding positions.
        left: pad on the left (for decoder-only generation) instead of the right.
        dtype: dtype of the returned ids.

    Returns:
        ``ids`` (B, T_max) and ``attention_mask`` (B, T_max), a ``torch.long`` tensor with 1 on real tokens
        and 0 on padding.
    """
    batch = len(seqs)
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)  # (B,)
    longest = int(lengths.max()) if batch else 0
    positions = torch.arange(longest)  # (T,)
    if left:
        mask = positions[None, :] >= (longest - lengths)[:, None]  # (B, T)
    else:
        mask = positions[None, :] < lengths[:, None]  # (B, T)
    ids = torch.full((batch, longest), pad_id, dtype=dtype)  # (B, T)
    if batch:
        # Boolean indexing walks the mask row by row, matching the concatenation order.
        ids[mask] = torch.cat([torch.as_tensor(s, dtype=dtype).reshape(-1) for s in seqs])
    return ids, mask.long()


def _as_lengths(lengths: Sequence[int] | Sequence[tuple[int, int]]) -> np.ndarray:
    array = np.asarray(lengths)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim == 2:
        array = array.max(axis=1)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise UserError(
            f"lengths must be a sequence of integers or of (source, target) integer pairs, got shape "
            f"{array.shape} of {array.dtype}"
        )
    if (array < 0).any():
        raise UserError(f"lengths must be >= 0, got {int(array.min())} at index {int(array.argmin())}")
    return array.astype(np.int64)


def _is_int(value: object, *, minimum: int) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= minimum
