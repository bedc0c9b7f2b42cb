"""Scaled dot-product and multi-head attention: Eq. 1 by hand, torch's fused kernel, torch's
nn.MultiheadAttention on the same weights, and the key/value cache against full recomputation."""

import math

import pytest
import torch
import torch.nn.functional as F

from seq2bert.nn.masks import causal_mask, combine, is_causal, padding_mask
from seq2bert.nn.multihead import FEW_QUERIES, KVCache, MultiHeadAttention, scaled_dot_product_attention


def test_masks_follow_one_convention():
    am = torch.tensor([[1, 1, 0], [1, 1, 1]])
    pm = padding_mask(am)
    assert pm.shape == (2, 1, 1, 3) and pm.dtype == torch.bool and not pm[0, 0, 0, 2] and pm[1, 0, 0, 2]
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    # two new queries after two cached keys: query 0 is position 2 and sees keys 0..2
    assert torch.equal(causal_mask(2, past=2), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool))
    both = combine(pm, causal_mask(3), None)
    assert both.shape == (2, 1, 3, 3) and not both[0, 0, 2, 2] and both[1, 0, 2, 2] and not both[1, 0, 0, 1]
    assert combine(None, None) is None and padding_mask(None) is None


def test_explicit_attention_is_equation_1():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 6)
    out, w = scaled_dot_product_attention(q, k, v, need_weights=True)
    by_hand = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(w, by_hand)
    torch.testing.assert_close(out, torch.einsum("bhqk,bhkd->bhqd", by_hand, v))


@pytest.mark.parametrize("masked", [False, True])
def test_fused_and_explicit_paths_agree(masked):
    torch.manual_seed(0)
    T = FEW_QUERIES + 2  # more queries than the explicit path takes without need_weights
    q, k, v = torch.randn(2, 4, T, 16), torch.randn(2, 4, T + 2, 16), torch.randn(2, 4, T + 2, 16)
    mask = (
        combine(padding_mask(torch.tensor([[1] * (T + 2), [1] * (T - 1) + [0] * 3])), causal_mask(T, past=2))
        if masked
        else None
    )
    fast, none = scaled_dot_product_attention(q, k, v, mask)
    slow, w = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    assert none is None
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-5)
    if masked:
        assert (w[1, :, :, T - 1 :] == 0).all() and (w[0, :, 0, 3:] == 0).all()  # padding, future: weight 0
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, T))


@pytest.mark.parametrize("scale", [None, 1.0, 0.1])
def test_a_query_without_visible_keys_gets_zeros_on_both_paths_and_the_scale_is_honoured(scale):
    """A causal model's left pad sees no key: zeros, not NaN, on both paths (NaN would reach the real
    tokens through the next layer's values); ``scale`` replaces 1/√d_k on both paths."""
    torch.manual_seed(0)
    T = FEW_QUERIES + 2  # the fused kernel's path, then the explicit one's
    q, k, v = torch.randn(2, 3, T, 8), torch.randn(2, 3, T, 8), torch.randn(2, 3, T, 8)
    mask = combine(padding_mask(torch.tensor([[0, 0] + [1] * (T - 2), [1] * T])), causal_mask(T))
    fast, _ = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    slow, w = scaled_dot_product_attention(q, k, v, mask, need_weights=True, scale=scale)
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-5)
    assert (w[0, :, :2] == 0).all() and (slow[0, :, :2] == 0).all() and not slow.isnan().any()
    s = 1 / math.sqrt(8) if scale is None else scale
    expected = torch.softmax(q[1] @ k[1].transpose(-2, -1) * s + (~causal_mask(T)) * -1e9, dim=-1)
    torch.testing.assert_close(w[1], expected, rtol=0, atol=1e-6)
    one, _ = scaled_dot_product_attention(q[:, :, :1], k, v, mask[:, :, :1])  # one query: the explicit path
    assert (one[0] == 0).all()


def torch_mha_from(ours: MultiHeadAttention, d_model: int) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(d_model, ours.h, batch_first=True)
    with torch.no_grad():
        if ours.cross:
            ref.in_proj_weight.copy_(torch.cat([ours.q.weight, ours.kv.weight]))
            ref.in_proj_bias.copy_(torch.cat([ours.q.bias, ours.kv.bias]))
        else:
            ref.in_proj_weight.copy_(ours.qkv.weight)  # the same [W^Q; W^K; W^V] layout
            ref.in_proj_bias.copy_(ours.qkv.bias)
        ref.out_proj.weight.copy_(ours.out.weight)
        ref.out_proj.bias.copy_(ours.out.bias)
    return ref.eval()


@pytest.mark.parametrize("cross", [False, True])
def test_multi_head_equals_torch_multihead_attention(cross):
    torch.manual_seed(0)
    d, h = 24, 4
    ours = MultiHeadAttention(d, h, cross=cross).eval()
    ref = torch_mha_from(ours, d)
    x, memory = torch.randn(3, 5, d), torch.randn(3, 6, d)
    keys = memory if cross else x
    am = torch.tensor(
        [[1] * keys.size(1), [1, 1, 0, 0, 0, 0][: keys.size(1)], [1] * (keys.size(1) - 1) + [0]]
    )
    mask = padding_mask(am)
    out, w = ours(x, memory if cross else None, mask, need_weights=True)
    ref_out, ref_w = ref(x, keys, keys, key_padding_mask=~am.bool(), need_weights=True)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-5)
    torch.testing.assert_close(w.mean(1), ref_w, rtol=0, atol=1e-6)  # torch averages the heads
    fast, _ = ours(x, memory if cross else None, mask)
    torch.testing.assert_close(fast, out, rtol=0, atol=1e-5)


def test_heads_of_other_sizes_than_d_model_over_h():
    """Table 3, row B: d_k smaller than d_model / h; d_v may differ from d_k."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4, d_k=3, d_v=5)
    assert mha.qkv.weight.shape == (4 * 3 * 2 + 4 * 5, 32) and mha.out.weight.shape == (32, 20)
    out, w = mha(torch.randn(2, 6, 32), need_weights=True)
    assert out.shape == (2, 6, 32) and w.shape == (2, 4, 6, 6)
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(30, 4)


def test_cached_self_attention_equals_full_causal_attention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).eval()
    x = torch.randn(2, 6, 16)
    full, _ = mha(x, mask=causal_mask(6))
    cache, steps = KVCache(), []
    for t in range(6):
        out, _ = mha(x[:, t : t + 1], mask=causal_mask(1, past=t), cache=cache)
        steps.append(out)
    assert cache.length == 6
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-6)
    # two steps at once after a prefix of three
    cache = KVCache()
    a, _ = mha(x[:, :3], mask=causal_mask(3), cache=cache)
    b, _ = mha(x[:, 3:5], mask=causal_mask(2, past=3), cache=cache)
    torch.testing.assert_close(torch.cat([a, b], 1), full[:, :5], rtol=0, atol=1e-6)


def test_cross_attention_projects_the_memory_once_and_reorders():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, cross=True).eval()
    x, memory = torch.randn(3, 1, 16), torch.randn(3, 4, 16)
    cache = KVCache()
    first, _ = mha(x, memory, cache=cache)
    again, _ = mha(x, None, cache=cache)  # from the cache, no memory needed
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    index = torch.tensor([2, 0, 0])
    moved, _ = mha(x[index], None, cache=cache.reorder(index))
    torch.testing.assert_close(moved, first[index], rtol=0, atol=0)
    with pytest.raises(ValueError, match="memory"):
        mha(x, None)


@pytest.mark.parametrize("need_weights", [False, True])
def test_rows_sharing_a_memory_row_equal_a_repeated_memory(need_weights):
    """Beam search keeps g rows per source: rows b·g … b·g + g − 1 attending to memory row b must equal
    attending to g copies of it, weights included."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, cross=True).eval()
    g, memory, x = 3, torch.randn(2, 5, 16), torch.randn(6, 2, 16)
    mask = padding_mask(torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]))
    shared, w_shared = mha(x, memory, mask, need_weights=need_weights)
    index = torch.arange(2).repeat_interleave(g)
    copied, w_copied = mha(x, memory[index], mask[index], need_weights=need_weights)
    torch.testing.assert_close(shared, copied, rtol=0, atol=1e-6)
    if need_weights:
        torch.testing.assert_close(w_shared, w_copied, rtol=0, atol=1e-6)
        assert w_shared[:3, :, :, 3:].abs().max() == 0  # row 0's padding gets no weight
    with pytest.raises(ValueError, match="do not divide"):
        mha(torch.randn(5, 1, 16), memory)


def test_attention_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, dropout=0.5)
    x = torch.randn(2, 5, 16)
    mha.eval()
    a, _ = mha(x)
    b, _ = mha(x)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    mha.train()
    c, _ = mha(x)
    assert not torch.allclose(a, c)


def test_explicit_attention_scores_in_fp32_under_bf16_autocast():
    """The explicit path (weights asked for, or one query in incremental decoding) takes QKᵀ/√d_k and the
    softmax in fp32 under autocast, as torch's fused kernel does: its weights equal the fp32 softmax of the
    same bf16 queries and keys, not a softmax of scores rounded to bf16."""
    torch.manual_seed(0)
    q, k, v = (4 * torch.randn(3, 2, 2, 5, 8)).bfloat16().unbind(0)  # each (B 2, h 2, T 5, d_k 8)
    expected = torch.softmax(q.float() @ k.float().transpose(-2, -1) / math.sqrt(8), dim=-1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, weights = scaled_dot_product_attention(q, k, v, need_weights=True)
    torch.testing.assert_close(weights.float(), expected.bfloat16().float(), rtol=0, atol=0)


def test_a_cache_writes_each_step_into_room_kept_ahead():
    """Appending equals concatenating; the buffer doubles when full (the first fill kept as given), so a step
    copies only its own keys; reordering gathers the rows in place, keeps the room and, from the second
    time on, allocates nothing (the two buffers are swapped)."""
    torch.manual_seed(0)
    steps = [torch.randn(3, 2, t, 4) for t in (5, 1, 1, 1, 1, 1, 2)]
    cache = KVCache()
    capacities = []
    for k in steps:
        key, value = cache.append(k, -k)
        capacities.append(cache.capacity)
    assert capacities == [5, 10, 10, 10, 10, 10, 20] and cache.length == 12
    torch.testing.assert_close(key, torch.cat(steps, 2), rtol=0, atol=0)
    torch.testing.assert_close(cache.value, -torch.cat(steps, 2), rtol=0, atol=0)
    expected = torch.cat(steps, 2)
    buffers = []
    for index in (torch.tensor([2, 0, 0]), torch.tensor([1, 2, 0]), torch.tensor([0, 0, 1])):
        assert cache.reorder(index) is cache and cache.capacity == 20 and cache.length == 12
        expected = expected[index]
        torch.testing.assert_close(cache.key, expected, rtol=0, atol=0)
        torch.testing.assert_close(cache.value, -expected, rtol=0, atol=0)
        buffers.append(cache.key.data_ptr())
    assert buffers[2] == buffers[0] != buffers[1]  # two buffers, in turn
    new = torch.randn(3, 2, 1, 4)
    key, _ = cache.append(new, new)
    torch.testing.assert_close(key, torch.cat([expected, new], 2), rtol=0, atol=0)
    first = KVCache()  # a first fill is not written into: its rows go to new buffers
    given = torch.randn(3, 2, 4, 4)
    first.append(given, given)
    before = given.clone()
    first.reorder(torch.tensor([1, 1, 1])).reorder(torch.tensor([0, 2, 1]))
    torch.testing.assert_close(given, before, rtol=0, atol=0)
    torch.testing.assert_close(first.key, before[[1, 1, 1]], rtol=0, atol=0)


def test_a_cache_under_autograd_backpropagates_through_every_step():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2)
    x = torch.randn(2, 4, 16, requires_grad=True)
    cache = KVCache()
    outs = [mha(x[:, t : t + 1], mask=causal_mask(1, past=t), cache=cache)[0] for t in range(4)]
    torch.cat(outs, 1).sum().backward()
    full = x.detach().requires_grad_()
    mha(full, mask=causal_mask(4))[0].sum().backward()
    torch.testing.assert_close(x.grad, full.grad, rtol=0, atol=1e-5)


def test_under_autocast_a_cache_keeps_its_keys_widened():
    """bf16 keys are widened once, as they are written, not at every step (the scores are fp32 either way)."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).eval()
    x = torch.randn(2, 6, 16)
    full, _ = mha(x, mask=causal_mask(6))
    cache, steps = KVCache(), []
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):  # as in decoding
        steps.append(mha(x[:, :3], mask=causal_mask(3), cache=cache)[0])  # a first fill, kept as given
        assert cache.key.dtype == torch.bfloat16
        for t in range(3, 6):
            steps.append(mha(x[:, t : t + 1], mask=causal_mask(1, past=t), cache=cache)[0])
    assert cache.key.dtype == torch.float32 and cache.value.dtype == torch.bfloat16
    torch.testing.assert_close(torch.cat(steps, 1).float(), full, rtol=0, atol=0.05)


def test_an_exactly_causal_mask_goes_to_the_fused_kernel_as_is_causal():
    """The same outputs and gradients as the mask itself; any other mask (padding too) is passed as it is."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 4, requires_grad=True) for _ in range(3))
    mask = causal_mask(7)
    assert is_causal(mask, 7) and not is_causal(causal_mask(6, past=1), 6) and not is_causal(mask.T, 7)
    assert not is_causal(combine(padding_mask(torch.ones(2, 7)), mask), 7) and not is_causal(None, 7)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out.sum().backward()
    grads = [x.grad for x in (q, k, v)]
    q2, k2, v2 = (x.detach().requires_grad_() for x in (q, k, v))
    expected = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask)
    expected.sum().backward()
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(grads, [q2.grad, k2.grad, v2.grad], rtol=0, atol=1e-6)
