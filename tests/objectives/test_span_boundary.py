"""SpanBERT's span-boundary objective (Joshi et al. 2019, Sect. 3.2): the head against Eq. 2 by hand, and the
boundary targets of hand-made spans."""

import numpy as np
import pytest
import torch

from seq2bert.data.masking import MaskingConfig, mask_tokens, runs
from seq2bert.objectives.span_boundary import SpanBoundaryHead, boundary_targets, span_boundary_loss


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / 2**0.5))


def layer_norm(x, norm):
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def test_the_head_computes_eq_2_by_hand():
    torch.manual_seed(0)
    head = SpanBoundaryHead(4, positions=10, position_size=3, layer_norm_eps=1e-5)
    for p in head.parameters():  # LayerNorm's gain and bias away from (1, 0), so that they count
        torch.nn.init.normal_(p)
    left, right = torch.randn(2, 4), torch.randn(2, 4)
    position = torch.tensor([0, 9])
    h0 = torch.cat([left, right, head.position_embeddings.weight[position]], -1)  # [x_{s−1}; x_{e+1}; p]
    h1 = layer_norm(gelu(h0 @ head.W1.weight.T + head.W1.bias), head.norm1)
    y = layer_norm(gelu(h1 @ head.W2.weight.T + head.W2.bias), head.norm2)
    torch.testing.assert_close(head(left, right, position), y, rtol=0, atol=1e-5)
    # a position past the table is clipped to its last row (spans of 10 words can have more WordPieces)
    torch.testing.assert_close(head(left, right, torch.tensor([0, 30])), y, rtol=0, atol=1e-6)


def test_boundary_targets_of_hand_made_spans_reach_cls_and_sep_at_the_edges():
    # [CLS] a b c d e f [SEP]: spans (1, 2) at the start and (5, 6) at the end, (4, 4) alone
    left, right, position = boundary_targets([(1, 2), (4, 4), (5, 6)], 8)
    assert left == [0, 0, 0, 0, 3, 4, 4, 0]  # x_{s−1}: [CLS] for the first span
    assert right == [0, 3, 3, 0, 5, 7, 7, 0]  # x_{e+1}: [SEP] for the last
    assert position == [0, 0, 1, 0, 0, 0, 1, 0]  # i − s: row of p_{i−s+1}
    with pytest.raises(ValueError, match="no boundary"):
        boundary_targets([(0, 1)], 8)


def test_masking_records_its_spans_without_changing_the_masks():
    assert runs([9, 4, 6, 5]) == [(4, 6), (9, 9)]
    tokens = [101, *range(1000, 1040), 102]
    special = np.zeros(len(tokens), bool)
    special[[0, -1]] = True
    for strategy in ("token", "whole_word", "span", "ngram"):
        cfg = MaskingConfig(strategy=strategy, vocab_size=2000, max_predictions_per_seq=10)
        plain = mask_tokens(tokens, special, cfg, np.random.default_rng(3))
        spans: list = []
        recorded = mask_tokens(tokens, special, cfg, np.random.default_rng(3), spans=spans)
        assert plain == recorded  # bit for bit: recording draws nothing
        labelled = [i for i, label in enumerate(plain[1]) if label != -100]
        assert sorted(i for s, e in spans for i in range(s, e + 1)) == labelled
        assert all(0 < s <= e < len(tokens) - 1 for s, e in spans)


def test_the_loss_is_the_mean_cross_entropy_of_the_span_tokens():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    expected = -(torch.log_softmax(logits, -1)[[0, 1], [0, 1]]).mean()
    torch.testing.assert_close(span_boundary_loss(logits, torch.tensor([0, 1])), expected)
