"""Tests for seq2bert.data.batching: coverage, budgets, determinism, padding efficiency, sharding, padding."""

import numpy as np
import pytest
import torch

from seq2bert.data.batching import BucketBatchSampler, pad_sequences
from seq2bert.errors import UserError


def random_lengths(n: int, low: int = 1, high: int = 100, seed: int = 0) -> list[int]:
    return np.random.default_rng(seed).integers(low, high + 1, size=n).tolist()


def flat(batches: list[list[int]]) -> list[int]:
    return [i for batch in batches for i in batch]


# ---------------------------------------------------------------------------------------------------------
# Coverage and budgets


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize(("max_tokens", "batch_size"), [(500, None), (None, 16), (500, 8)])
def test_every_index_exactly_once_per_epoch(shuffle, max_tokens, batch_size):
    lengths = random_lengths(1000)
    sampler = BucketBatchSampler(
        lengths, max_tokens=max_tokens, batch_size=batch_size, shuffle=shuffle, seed=3
    )
    for epoch in range(3):
        assert sorted(flat(sampler.batches(epoch))) == list(range(1000))


def test_token_budget_and_batch_size_respected():
    lengths = random_lengths(2000)
    sampler = BucketBatchSampler(lengths, max_tokens=1000, batch_size=30)
    for batch in sampler.batches(0):
        assert len(batch) <= 30
        assert len(batch) * max(lengths[i] for i in batch) <= 1000


def test_over_long_example_gets_a_batch_of_its_own():
    lengths = [5, 7, 500, 6, 300, 4] * 10
    sampler = BucketBatchSampler(lengths, max_tokens=100)
    batches = sampler.batches(0)
    assert sorted(flat(batches)) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        if padded > 100:
            assert len(batch) == 1 and lengths[batch[0]] > 100


def test_pairs_of_lengths_use_the_longer_side():
    sampler = BucketBatchSampler([(3, 50), (50, 3), (3, 3), (4, 2)], max_tokens=100, shuffle=False)
    assert sampler.batches(0) == [[2, 3], [0, 1]]  # lengths 50, 50, 3, 4; 3 * 50 > 100


def test_unshuffled_order_is_sorted_by_length_and_fixed():
    lengths = random_lengths(500)
    sampler = BucketBatchSampler(lengths, max_tokens=400, shuffle=False)
    order = flat(sampler.batches(0))
    assert [lengths[i] for i in order] == sorted(lengths)
    assert sampler.batches(0) == sampler.batches(5)


def test_zero_length_examples_are_kept():
    sampler = BucketBatchSampler([0, 0, 0, 2], max_tokens=2, shuffle=False)
    assert sampler.batches(0) == [[0, 1], [2], [3]]


# ---------------------------------------------------------------------------------------------------------
# Determinism


def test_same_seed_and_epoch_give_identical_batches():
    lengths = random_lengths(3000)
    a = BucketBatchSampler(lengths, max_tokens=800, seed=7)
    b = BucketBatchSampler(lengths, max_tokens=800, seed=7)
    assert a.batches(4) == b.batches(4)
    a.set_epoch(4)
    assert list(a) == b.batches(4) and len(a) == len(b.batches(4))


def test_different_epochs_and_seeds_differ():
    lengths = random_lengths(3000)
    sampler = BucketBatchSampler(lengths, max_tokens=800, seed=7)
    assert sampler.batches(0) != sampler.batches(1)
    assert sampler.batches(0) != BucketBatchSampler(lengths, max_tokens=800, seed=8).batches(0)


def test_set_epoch_changes_iteration():
    sampler = BucketBatchSampler(random_lengths(500), batch_size=10)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    assert list(sampler) != first


# ---------------------------------------------------------------------------------------------------------
# Padding efficiency


def padding_ratio(lengths: list[int], batches: list[list[int]]) -> float:
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return padded / sum(lengths)


def test_bucketing_keeps_padding_small():
    lengths = random_lengths(20000)
    sampler = BucketBatchSampler(lengths, max_tokens=2000, seed=0)
    ratio = padding_ratio(lengths, sampler.batches(0))
    assert ratio < 1.1, ratio
    # Without bucketing (pools of one batch) the same budget wastes far more.
    unbucketed = BucketBatchSampler(lengths, max_tokens=2000, seed=0, pool_factor=1)
    assert padding_ratio(lengths, unbucketed.batches(0)) > 1.3


# ---------------------------------------------------------------------------------------------------------
# Distributed


@pytest.mark.parametrize("drop_last", [False, True])
def test_two_replicas_split_the_batches(drop_last):
    lengths = random_lengths(1001)
    kwargs = dict(max_tokens=700, seed=1, drop_last=drop_last)
    ranks = [BucketBatchSampler(lengths, num_replicas=2, rank=r, **kwargs) for r in range(2)]
    single = BucketBatchSampler(lengths, **kwargs).batches(2)
    parts = [r.batches(2) for r in ranks]
    assert len(parts[0]) == len(parts[1]) > 0
    assert len(ranks[0]) == len(ranks[1]) == len(parts[0])
    ids = [set(flat(p)) for p in parts]
    if drop_last:
        assert not ids[0] & ids[1]  # disjoint
        assert len(parts[0]) + len(parts[1]) == len(single) - len(single) % 2
    else:
        assert ids[0] | ids[1] == set(range(1001))  # padding repeats batches, nothing is lost
    assert ids[0] | ids[1] <= set(range(1001))
    # Rank r takes batches[r::2] of the common list.
    assert parts[0] == (single + single[:1])[0::2][: len(parts[0])]


def test_replicas_disjoint_when_batches_divide_evenly():
    lengths = [10] * 40
    parts = [BucketBatchSampler(lengths, batch_size=5, num_replicas=2, rank=r).batches(0) for r in range(2)]
    assert len(parts[0]) == len(parts[1]) == 4
    assert not set(flat(parts[0])) & set(flat(parts[1]))
    assert set(flat(parts[0])) | set(flat(parts[1])) == set(range(40))


def test_fewer_batches_than_replicas_are_repeated():
    parts = [BucketBatchSampler([3, 4], batch_size=2, num_replicas=3, rank=r).batches(0) for r in range(3)]
    assert all(len(p) == 1 for p in parts)


def test_drop_last_drops_incomplete_batches_only():
    sampler = BucketBatchSampler([1] * 23, batch_size=5, shuffle=False, drop_last=True)
    assert [len(b) for b in sampler.batches(0)] == [5, 5, 5, 5]
    full = BucketBatchSampler([1] * 20, batch_size=5, shuffle=False, drop_last=True)
    assert len(full.batches(0)) == 4


# ---------------------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "max_tokens, batch_size or both"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"batch_size": -1}, "batch_size"),
        ({"batch_size": 2, "num_replicas": 2, "rank": 2}, "rank"),
        ({"batch_size": 2, "pool_factor": 0}, "pool_factor"),
        ({"batch_size": 2, "seed": -1}, "seed"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(UserError, match=match):
        BucketBatchSampler([1, 2, 3], **kwargs)


def test_bad_lengths():
    with pytest.raises(UserError, match=">= 0"):
        BucketBatchSampler([1, -2], batch_size=2)
    with pytest.raises(UserError, match="integers"):
        BucketBatchSampler([1.5, 2.0], batch_size=2)


def test_empty_dataset():
    sampler = BucketBatchSampler([], max_tokens=10, num_replicas=2)
    assert sampler.batches(0) == [] and len(sampler) == 0


def test_works_as_a_dataloader_batch_sampler():
    data = [torch.tensor([i]) for i in range(10)]
    sampler = BucketBatchSampler([1] * 10, batch_size=4)
    loader = torch.utils.data.DataLoader(data, batch_sampler=sampler, collate_fn=torch.cat)
    assert sorted(torch.cat(list(loader)).tolist()) == list(range(10))


# ---------------------------------------------------------------------------------------------------------
# pad_sequences


def test_pad_right():
    ids, mask = pad_sequences([[5, 6, 7], [8], []], pad_id=0)
    assert ids.shape == mask.shape == (3, 3)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    assert ids.dtype == torch.long and mask.dtype == torch.long


def test_pad_left_and_dtype():
    ids, mask = pad_sequences([[5, 6, 7], [8]], pad_id=1, left=True, dtype=torch.int32)
    assert ids.tolist() == [[5, 6, 7], [1, 1, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert ids.dtype == torch.int32


def test_pad_accepts_tensors_and_empty_batches():
    ids, mask = pad_sequences([torch.tensor([1, 2]), torch.tensor([3])], pad_id=9)
    assert ids.tolist() == [[1, 2], [3, 9]]
    ids, mask = pad_sequences([], pad_id=0)
    assert ids.shape == mask.shape == (0, 0)
