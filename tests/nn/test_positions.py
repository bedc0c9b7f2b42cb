"""The position channel (seq2bert/nn/positions.py): Shaw et al.'s relative position representations against
the paper's equations written out here, clipping, the fused kernel with a score bias, cached against
uncached steps and causality through the stack; ALiBi, rotary and absolute positions through the same
channel; XLNet's second query stream."""

import math

import pytest
import torch
from torch import nn

from seq2bert.nn.embeddings import ScaledEmbedding
from seq2bert.nn.layers import QueryStream, transformer_layer
from seq2bert.nn.masks import causal_mask
from seq2bert.nn.multihead import FEW_QUERIES, MultiHeadAttention, scaled_dot_product_attention
from seq2bert.nn.positions import (
    AbsolutePositions,
    ALiBi,
    PositionScheme,
    RelativePositionRepresentations,
    RelativePositions,
    RotaryPositions,
    alibi_slopes,
)
from seq2bert.nn.stack import TransformerStack

D, H, FF, V = 16, 4, 32, 30
DK = D // H


def clip(x: int, k: int) -> int:
    return max(-k, min(k, x))  # Shaw et al. Sect. 3.2


def shaw_reference(att: MultiHeadAttention, x: torch.Tensor, k: int, mask=None) -> torch.Tensor:
    """Eq. 4 and 3 (the paper's numbers, arXiv:1803.02155v2) with loops over heads, i and j:
    e_ij = x_i W^Q (x_j W^K + a^K_ij)ᵀ / √d_z,
    z_i = Σ_j α_ij (x_j W^V + a^V_ij), a_ij = w_clip(j−i, k); then Concat(z) W^O."""
    B, T, _ = x.shape
    W, b = att.qkv.weight, att.qkv.bias  # rows [W^Q; W^K; W^V]ᵀ
    wk, wv = att.position.keys.weight, att.position.values.weight  # (2k + 1, d_z): w_{−k} … w_k
    out = torch.zeros(B, T, H * DK, dtype=torch.float64)
    for n in range(B):
        for h in range(H):
            rows = [slice(part * D + h * DK, part * D + (h + 1) * DK) for part in range(3)]
            q, kk, v = (x[n].double() @ W[r].double().T + b[r].double() for r in rows)  # (T, d_z) each
            for i in range(T):
                e = torch.empty(T, dtype=torch.float64)
                for j in range(T):
                    a_k = wk[clip(j - i, k) + k].double()
                    e[j] = q[i] @ (kk[j] + a_k) / math.sqrt(DK)  # Eq. 4
                    if mask is not None and not mask[n, 0, i, j]:
                        e[j] = -math.inf
                alpha = torch.softmax(e, 0)
                z = sum(alpha[j] * (v[j] + wv[clip(j - i, k) + k].double()) for j in range(T))  # Eq. 3
                out[n, i, h * DK : (h + 1) * DK] = z
    return (out @ att.out.weight.double().T + att.out.bias.double()).float()


def shaw_attention(k: int) -> MultiHeadAttention:
    torch.manual_seed(0)
    att = MultiHeadAttention(D, H, position=RelativePositionRepresentations(DK, DK, k)).eval()
    return att


@pytest.mark.parametrize("T", [5, FEW_QUERIES + 4])  # the explicit path and (T > FEW_QUERIES) the long one
@pytest.mark.parametrize("masked", [False, True])
def test_relative_attention_is_the_papers_equations_3_and_4(T, masked):
    k = 3
    att = shaw_attention(k)
    x = torch.randn(2, T, D)
    mask = None
    if masked:  # causal, and the last two keys of row 1 are padding
        mask = causal_mask(T)[None, None].expand(2, 1, T, T).clone()
        mask[1, ..., T - 2 :] = False
        mask[1, :, T - 2 :, T - 2 :] = True  # a padding query still sees something (only its own rows)
    positions = RelativePositions(k).positions(T)
    got, _ = att(x, mask=mask, positions=positions)
    torch.testing.assert_close(got, shaw_reference(att, x, k, mask), rtol=0, atol=1e-5)


def test_both_relative_terms_matter():
    """a^K (Eq. 4) and a^V (Eq. 3) each change the output: neither is silently dropped."""
    att = shaw_attention(2)
    x = torch.randn(1, 6, D)
    positions = RelativePositions(2).positions(6)
    base = att(x, positions=positions)[0]
    for table in (att.position.keys, att.position.values):
        with torch.no_grad():
            saved = table.weight.clone()
            table.weight.zero_()
        assert not torch.allclose(att(x, positions=positions)[0], base, atol=1e-4)
        with torch.no_grad():
            table.weight.copy_(saved)


def test_clipping_index_and_which_pairs_share_a_vector():
    k, T = 2, 7
    p = RelativePositions(k).positions(T, past=0)
    expected = torch.tensor([[clip(j - i, k) + k for j in range(T)] for i in range(T)])
    assert torch.equal(p.index, expected)
    assert p.index.min() == 0 and p.index.max() == 2 * k
    # a query at position 9 of a cache of 9 steps: keys 0 … 9, distances −9 … 0 clipped at −k
    step = RelativePositions(k).positions(1, past=9)
    assert step.query.tolist() == [9] and step.key.tolist() == list(range(10))
    assert step.index.tolist() == [[0] * 8 + [1, 2]]
    # w^K_{−k} reaches every pair with j − i ≤ −k, and no other
    att = shaw_attention(k)
    q = torch.randn(1, H, T, DK)
    before = att.position.score_bias(q, None, p, 1.0)
    with torch.no_grad():
        att.position.keys.weight[0] += 1.0
    changed = (att.position.score_bias(q, None, p, 1.0) - before).abs().sum(dim=(0, 1)) > 0  # (T, T)
    far = torch.tensor([[j - i <= -k for j in range(T)] for i in range(T)])
    assert torch.equal(changed, far)
    with pytest.raises(ValueError, match="max_relative_position: must be at least 1, got 0"):
        RelativePositions(0)


@pytest.mark.parametrize("causal", [False, True])
def test_a_score_bias_through_the_fused_kernel_equals_the_explicit_computation(causal):
    torch.manual_seed(0)
    T = FEW_QUERIES + 5
    q, k, v = (torch.randn(2, H, T, DK) for _ in range(3))
    bias = torch.randn(2, H, T, T)
    mask = causal_mask(T) if causal else torch.tensor([1] * (T - 3) + [0] * 3).bool()[None, None, None]
    fused, none = scaled_dot_product_attention(q, k, v, mask, bias=bias)
    explicit, weights = scaled_dot_product_attention(q, k, v, mask, bias=bias, need_weights=True)
    assert none is None
    torch.testing.assert_close(fused, explicit, rtol=0, atol=1e-5)
    scores = q @ k.transpose(-2, -1) / math.sqrt(DK) + bias  # QKᵀ/√d_k + b, then the softmax (Eq. 1)
    reference = torch.softmax(scores.masked_fill(~mask, -math.inf), -1)
    torch.testing.assert_close(weights, reference, rtol=0, atol=1e-6)


class Embed(nn.Module):
    """Token embeddings only (the positions come from the scheme), called as the stack calls them."""

    def __init__(self):
        super().__init__()
        self.tokens = ScaledEmbedding(V, D)

    def forward(self, input_ids, *, offset=0):
        return self.tokens(input_ids)


def stack(scheme: PositionScheme | None, attention=None, *, causal=True, n=2, norm_first=False):
    torch.manual_seed(0)
    layers = [
        transformer_layer(
            D, H, FF, norm_first=norm_first, position=None if attention is None else attention()
        )
        for _ in range(n)
    ]
    final = nn.LayerNorm(D) if norm_first else None
    return TransformerStack(Embed(), layers, final_norm=final, causal=causal, positions=scheme).eval()


SCHEMES = {
    "relative": lambda: stack(RelativePositions(3), lambda: RelativePositionRepresentations(DK, DK, 3)),
    "relative, pre-norm": lambda: stack(
        RelativePositions(2), lambda: RelativePositionRepresentations(DK, DK, 2), norm_first=True
    ),
    "alibi": lambda: stack(ALiBi(H)),
    "rotary": lambda: stack(PositionScheme(), lambda: RotaryPositions(DK)),
}


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_cached_steps_equal_the_full_pass(scheme):
    """The query at t against keys 0 … t sees the positions it sees in the full pass (left padding too)."""
    s = SCHEMES[scheme]()
    T = FEW_QUERIES + 4  # the full pass on the fused kernel with its bias, the steps on the explicit path
    x = torch.randint(0, V, (2, T))
    am = torch.ones(2, T, dtype=torch.long)
    am[1, :2] = 0
    full = s(x, am).last_hidden_state
    caches = s.new_caches()
    first = s(x[:, :3], am[:, :3], caches=caches).last_hidden_state  # a prompt, then one token at a time
    steps = [
        s(x[:, t : t + 1], am[:, : t + 1], caches=caches, offset=t).last_hidden_state for t in range(3, T)
    ]
    torch.testing.assert_close(torch.cat([first, *steps], 1)[am.bool()], full[am.bool()], rtol=0, atol=1e-5)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_a_causal_stack_with_positions_does_not_look_ahead(scheme):
    s = SCHEMES[scheme]()
    x = torch.randint(0, V, (2, 11))
    y = x.clone()
    y[:, 8:] = (y[:, 8:] + 1) % V
    a, b = s(x).last_hidden_state, s(y).last_hidden_state
    torch.testing.assert_close(a[:, :8], b[:, :8], rtol=0, atol=0)
    assert not torch.allclose(a[:, 8:], b[:, 8:])


def test_positions_make_the_stack_order_aware_and_without_a_scheme_it_is_not():
    """Without positions a bidirectional stack is permutation-equivariant (Sect. 3.5); with relative positions
    it is not."""
    x = torch.randint(0, V, (1, 6))
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    plain = stack(None, causal=False)
    torch.testing.assert_close(plain(x[:, perm]).last_hidden_state, plain(x).last_hidden_state[:, perm])
    rel = stack(RelativePositions(3), lambda: RelativePositionRepresentations(DK, DK, 3), causal=False)
    assert not torch.allclose(rel(x[:, perm]).last_hidden_state, rel(x).last_hidden_state[:, perm], atol=1e-4)


def test_alibi_bias_is_the_papers_and_computed_once_for_every_layer():
    """Press et al. 2022, Sect. 3: head h adds m_h·(j − i) to the scores, m = 2^(−8/H), 2^(−16/H), …"""
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    p = ALiBi(H).positions(4, past=2)
    for h in range(H):
        m = 2.0 ** (-8.0 * (h + 1) / H)
        expected = torch.tensor([[m * (j - i) for j in range(6)] for i in range(2, 6)])
        torch.testing.assert_close(p.bias[h], expected)
    s = stack(ALiBi(H), n=1)
    calls = []
    original = s.positions.positions
    s.positions.positions = lambda *a, **k: calls.append(1) or original(*a, **k)
    x = torch.randn(2, 5, D)
    layer = s.layers[0]
    att = layer.self_attn
    q, kk, v = (att.split_heads(t, DK) for t in att.qkv(x).split(D, -1))
    scores = q @ kk.transpose(-2, -1) / math.sqrt(DK) + ALiBi(H).positions(5).bias
    expected = att.out((torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(2, 5, D))
    got, _ = att(x, positions=ALiBi(H).positions(5))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    s(torch.randint(0, V, (2, 5)))
    assert len(calls) == 1


def test_rotary_scores_depend_on_the_distance_only():
    """(R_m q)·(R_n k) = (R_{m+s} q)·(R_{n+s} k): RoFormer, Eq. 16 (the rotation's relative property)."""
    rope = RotaryPositions(DK)
    q, k = torch.randn(1, 1, 1, DK), torch.randn(1, 1, 1, DK)
    dots = [
        (rope.rotate(q, torch.tensor([m])) * rope.rotate(k, torch.tensor([n]))).sum().item()
        for m, n in [(2, 5), (7, 10), (0, 3)]
    ]
    assert dots[0] == pytest.approx(dots[1], abs=1e-5) and dots[0] == pytest.approx(dots[2], abs=1e-5)
    # against the rotation written out for one pair of dimensions: angle m·θ_0 = m
    turned = rope.rotate(q, torch.tensor([4]))[0, 0, 0, :2]
    c, s_ = math.cos(4.0), math.sin(4.0)
    expected = torch.tensor([q[0, 0, 0, 0] * c - q[0, 0, 0, 1] * s_, q[0, 0, 0, 0] * s_ + q[0, 0, 0, 1] * c])
    torch.testing.assert_close(turned, expected)


def test_absolute_positions_as_a_scheme_add_to_the_input():
    """(a): AbsolutePositions(table) gives the sum today's embeddings compute themselves."""
    table = nn.Embedding(20, D)
    s = stack(AbsolutePositions(table), n=1)
    x = torch.randint(0, V, (2, 5))
    embedded = s.embeddings(x) + table(torch.arange(5))
    torch.testing.assert_close(s(x).last_hidden_state, s.layers[0](embedded, causal_mask(5)).hidden)


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_query_stream_follows_the_content_stream_with_its_own_mask(norm_first):
    """XLNet's two streams (Yang et al. 2019, Sect. 2.3): with the content's input and mask, the query stream
    is the content stream; with a mask that hides each query's own position, its output at i does not
    depend on the content at i, and the content stream is unchanged by the query stream."""
    s = stack(
        RelativePositions(2),
        lambda: RelativePositionRepresentations(DK, DK, 2),
        causal=False,
        norm_first=norm_first,
    )
    x = torch.randint(0, V, (2, 6))
    alone = s(x).last_hidden_state
    same = s(x, query_stream=s.embeddings(x))
    torch.testing.assert_close(same.last_query_stream_state, same.last_hidden_state, rtol=0, atol=1e-6)
    torch.testing.assert_close(same.last_hidden_state, alone, rtol=0, atol=0)
    not_itself = ~torch.eye(6, dtype=torch.bool)  # (T, T): query i sees every content key but its own
    g = torch.randn(1, 1, D).expand(2, 6, D)  # XLNet's g^(0) = w, a trainable vector, at every position
    a = s.layer(0)(s.embeddings(x), positions=s.position_info(6, 0, "cpu"), stream=QueryStream(g, not_itself))
    y = x.clone()
    y[:, 2] = (y[:, 2] + 1) % V
    b = s.layer(0)(s.embeddings(y), positions=s.position_info(6, 0, "cpu"), stream=QueryStream(g, not_itself))
    torch.testing.assert_close(a.stream[:, 2], b.stream[:, 2], rtol=0, atol=1e-6)  # its own content hidden
    assert not torch.allclose(a.stream[:, 3], b.stream[:, 3]) and not torch.allclose(
        a.hidden[:, 2], b.hidden[:, 2]
    )
    with pytest.raises(ValueError, match="takes no cache"):
        s(x, query_stream=g, caches=s.new_caches())


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_a_segment_after_its_predecessors_states_is_the_whole_sequence_read_at_once(scheme):
    """Segment recurrence (Transformer-XL, Dai et al. 2019, Sect. 3.2): a causal stack that reads segment τ
    with each layer's input states of segment τ − 1 as past_states (h̃ = [SG(h_{τ−1}) ∘ h_τ]) gives what the
    whole sequence gives at τ's positions — with relative positions as with absolute ones — and no gradient
    reaches the memory."""
    s = SCHEMES[scheme]()
    x = torch.randint(0, V, (2, 9))
    whole = s(x, output_hidden_states=True)
    first = s(x[:, :5], output_hidden_states=True)
    past = [h.detach().requires_grad_() for h in first.hidden_states[:-1]]  # each layer's input
    second = s(x[:, 5:], torch.ones(2, 9, dtype=torch.long), offset=5, past_states=past)
    torch.testing.assert_close(second.last_hidden_state, whole.last_hidden_state[:, 5:], rtol=0, atol=1e-5)
    second.last_hidden_state.sum().backward()
    assert all(p.grad is None for p in past)
    # a query stream reads the memory too: with the content's input and mask it is the content stream
    stream = dict(query_stream=s.embeddings(x[:, 5:]), query_stream_mask=causal_mask(4, 5))
    again = s(x[:, 5:], torch.ones(2, 9, dtype=torch.long), offset=5, past_states=past, **stream)
    torch.testing.assert_close(again.last_query_stream_state, again.last_hidden_state, rtol=0, atol=1e-6)
