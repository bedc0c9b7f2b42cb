"""The static key/value cache: room reserved once (KVCache.reserve) is written into by every later step — no
buffer grown, copied or allocated during the decode — and a decode of unpadded prompts (no mask at all)
gives what recomputing the whole prefix gives."""

import torch

from seq2bert.decoding.protocol import begin
from seq2bert.nn.multihead import KVCache
from tests.models.tiny_decoders import V, tiny_gpt2, tiny_transformer


def test_reserved_room_is_written_in_place():
    cache = KVCache()
    first = torch.randn(2, 3, 4, 5)
    cache.append(first, first + 1)
    cache.reserve(10)
    buffer, capacity = cache._key.data_ptr(), cache.capacity
    steps = [torch.randn(2, 3, 1, 5) for _ in range(10)]
    for s in steps:
        k, v = cache.append(s, s + 1)
    assert cache._key.data_ptr() == buffer and cache.capacity == capacity == 14
    assert torch.equal(k, torch.cat([first, *steps], 2)) and torch.equal(v, torch.cat([first, *steps], 2) + 1)


def test_room_reserved_on_an_empty_cache_is_made_at_its_first_fill():
    cache = KVCache().reserve(9)
    k = torch.randn(1, 2, 1, 4)
    cache.append(k, k)
    assert cache.capacity == 9 and cache.length == 1
    buffer = cache._key.data_ptr()
    for _ in range(8):
        cache.append(k, k)
    assert cache._key.data_ptr() == buffer and cache.length == 9


def test_a_search_reserves_its_longest_decode():
    for model, ids in (
        (tiny_gpt2(), torch.randint(3, V, (2, 5))),
        (tiny_transformer(), torch.randint(3, V, (2, 5))),
    ):
        config = model.generation_config(max_new_tokens=7)
        with torch.no_grad():  # as a search runs (a cache autograd records grows by concatenation)
            start = begin(model, ids, torch.ones_like(ids), config)
        caches = start.state.caches
        if isinstance(start.state.caches[0].self_attn.key, torch.Tensor):  # GPT-2: the prompt's keys
            assert all(c.self_attn.capacity == 4 + 8 for c in caches)
        else:  # the Transformer: made at the first step
            assert all(c.self_attn._reserved == 8 for c in caches)


def test_unpadded_prompts_decode_without_a_mask_as_full_recomputation():
    model = tiny_gpt2()
    ids = torch.randint(3, V, (3, 6))
    state = model.start(ids[:, :-1])
    assert state.attention_mask is None
    out = model.generate(ids, max_new_tokens=6)
    seq = ids
    with torch.no_grad():
        for _ in range(6):  # greedy by recomputing the whole prefix, no cache
            seq = torch.cat([seq, model(seq).logits[:, -1].argmax(-1, keepdim=True)], 1)
    keep = out.ne(model.config.eos_token_id).all(1)  # rows that did not end early
    assert torch.equal(out[keep], seq[keep])
