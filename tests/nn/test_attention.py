"""Attention modules against their papers' equations, computed here by hand one position at a time."""

import math

import pytest
import torch

from seq2bert.nn.attention import AdditiveAttention, LuongAttention, masked_softmax


def setup_memory(B=2, S=5, H=4, seed=0):
    torch.manual_seed(seed)
    memory = torch.randn(B, S, H, dtype=torch.double)
    mask = torch.tensor([[True] * S, [True] * 3 + [False] * (S - 3)])
    return memory, mask


def test_masked_softmax_gives_zero_weight_to_padding_and_rows_sum_to_one():
    scores = torch.randn(2, 4)
    mask = torch.tensor([[True, True, False, True], [False, False, False, False]])
    w = masked_softmax(scores, mask)
    assert w[0, 2] == 0 and torch.isclose(w[0].sum(), torch.tensor(1.0))
    assert w[1].abs().sum() == 0  # a row with nothing to attend to is all zeros, not NaN


def test_additive_attention_is_bahdanau_eq_4_to_6():
    memory, mask = setup_memory()
    att = AdditiveAttention(query_size=3, key_size=4, attention_size=6).double()
    s_prev = torch.randn(2, 3, dtype=torch.double)
    context, alpha = att(s_prev, memory, mask)
    for b in range(2):
        n = int(mask[b].sum())
        e = torch.stack(
            [
                att.v_a.weight[0]
                @ torch.tanh(att.W_a.weight @ s_prev[b] + att.U_a.weight @ memory[b, j] + att.U_a.bias)
                for j in range(n)
            ]
        )
        expected_alpha = torch.softmax(e, 0)
        torch.testing.assert_close(alpha[b, :n], expected_alpha)
        assert alpha[b, n:].abs().sum() == 0
        torch.testing.assert_close(context[b], (expected_alpha[:, None] * memory[b, :n]).sum(0))


@pytest.mark.parametrize("score", ["dot", "general", "concat", "location"])
def test_luong_global_scores(score):
    memory, mask = setup_memory()
    att = LuongAttention(4, score, max_source_length=8).double()
    h_t = torch.randn(2, 4, dtype=torch.double)
    context, alpha = att(h_t, memory, mask)
    for b in range(2):
        n = int(mask[b].sum())
        if score == "dot":
            e = torch.stack([h_t[b] @ memory[b, s] for s in range(n)])
        elif score == "general":
            e = torch.stack([h_t[b] @ att.W_a.weight @ memory[b, s] for s in range(n)])
        elif score == "concat":
            e = torch.stack(
                [
                    att.v_a.weight[0] @ torch.tanh(att.W_a.weight @ torch.cat([h_t[b], memory[b, s]]))
                    for s in range(n)
                ]
            )
        else:
            e = (att.W_a.weight @ h_t[b])[:n]
        torch.testing.assert_close(alpha[b, :n], torch.softmax(e, 0))
        assert alpha[b, n:].abs().sum() == 0
        torch.testing.assert_close(context[b], (alpha[b, :n, None] * memory[b, :n]).sum(0))


def test_precomputed_keys_give_the_same_result():
    memory, mask = setup_memory()
    for score in ("general", "concat"):
        att = LuongAttention(4, score).double()
        h_t = torch.randn(2, 4, dtype=torch.double)
        keys = att.project_keys(memory)
        torch.testing.assert_close(att(h_t, memory, mask, keys=keys)[1], att(h_t, memory, mask)[1])


def test_local_m_attends_to_a_window_around_t():
    memory, mask = setup_memory(S=9)
    mask = torch.ones(2, 9, dtype=torch.bool)
    att = LuongAttention(4, "dot", local="monotonic", window=2).double()
    h_t = torch.randn(2, 4, dtype=torch.double)
    _, alpha = att(h_t, memory, mask, t=4)
    assert alpha[:, :2].abs().sum() == 0 and alpha[:, 7:].abs().sum() == 0
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, dtype=torch.double))
    e = torch.einsum("bh,bsh->bs", h_t, memory)[:, 2:7]
    torch.testing.assert_close(alpha[:, 2:7], torch.softmax(e, -1))


def test_local_p_predicts_position_and_applies_gaussian_eq_9_10():
    memory, mask = setup_memory(S=9)
    att = LuongAttention(4, "general", local="predictive", window=2).double()
    h_t = torch.randn(2, 4, dtype=torch.double)
    _, alpha = att(h_t, memory, mask)
    lengths = mask.sum(-1).double()
    with torch.no_grad():
        p = lengths * torch.sigmoid(att.v_p.weight[0] @ torch.tanh(att.W_p.weight @ h_t.T)).squeeze()
    for b in range(2):
        window = [s for s in range(9) if abs(s - p[b]) <= 2 and mask[b, s]]
        e = torch.stack([h_t[b] @ att.W_a.weight @ memory[b, s] for s in window])
        align = torch.softmax(e, 0)
        gauss = torch.tensor(
            [math.exp(-((s - p[b]) ** 2) / (2 * 1.0**2)) for s in window], dtype=torch.double
        )
        torch.testing.assert_close(alpha[b, window], align * gauss)
        outside = [s for s in range(9) if s not in window]
        assert alpha[b, outside].abs().sum() == 0


ATTENTIONS = [
    ("additive", None),
    *[(score, None) for score in ("dot", "general", "concat", "location")],
    ("general", "monotonic"),
    ("general", "predictive"),
]


@pytest.mark.parametrize("score, local", ATTENTIONS)
def test_attention_computes_in_fp32_under_bf16_autocast(score, local):
    """Under bf16 autocast the keys, scores, softmax and context are fp32, equal to the fp32 computation on
    the same inputs (bf16 activations, as autocast's matmuls hand them over): no rounding of scores or
    weights to bf16's 8-bit mantissa, which once decided whether the tour's Luong model learned."""
    torch.manual_seed(0)
    B, S, H = 3, 7, 16
    memory = (3 * torch.randn(B, S, H)).bfloat16()  # large enough that bf16 scores would be coarse
    query = (3 * torch.randn(B, H)).bfloat16()
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 5:] = False
    if score == "additive":
        att = AdditiveAttention(H, H, 8)

        def run(q, m):
            return att(q, m, mask, projected_keys=att.project_keys(m))
    else:
        att = LuongAttention(H, score, local=local, window=2, max_source_length=S)

        def run(q, m):
            return att(q, m, mask, keys=att.project_keys(m), t=3, lengths=mask.sum(-1))

    expected_context, expected_alpha = run(query.float(), memory.float())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        context, alpha = run(query, memory)
    assert context.dtype == alpha.dtype == torch.float32
    torch.testing.assert_close(alpha, expected_alpha, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(context, expected_context, rtol=1e-6, atol=1e-6)
