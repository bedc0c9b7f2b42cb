"""MobileBERT's blocks take the stack's position channel (seq2bert/nn/positions.py): its bottleneck attention
with relative position representations equals nn/'s MultiHeadAttention with the same weights (tested
against Shaw et al.'s equations in tests/nn/test_positions.py), and a scheme that adds nothing leaves the
model's outputs as they are."""

import torch

from seq2bert.models.mobilebert.config import MobileBertConfig
from seq2bert.models.mobilebert.model import BottleneckAttention, MobileBertModel
from seq2bert.nn.multihead import FEW_QUERIES, MultiHeadAttention
from seq2bert.nn.positions import PositionScheme, RelativePositionRepresentations, RelativePositions
from tests.models.test_mobilebert import FIRST_SHAPE, SHAPES

D, H, K = 12, 3, 2


def test_bottleneck_attention_with_relative_positions_equals_multi_head_attention():
    torch.manual_seed(0)
    ours = BottleneckAttention(D, D, D, H, position=RelativePositionRepresentations(D // H, D // H, K)).eval()
    mha = MultiHeadAttention(D, H, position=ours.position).eval()
    with torch.no_grad():  # [W^Q W^K W^V] of the one fused projection
        mha.qkv.weight.copy_(torch.cat([ours.query.weight, ours.key.weight, ours.value.weight]))
        mha.qkv.bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
        mha.out.load_state_dict(ours.out.state_dict())
    for T in (5, FEW_QUERIES + 3):
        x = torch.randn(2, T, D)
        mask = torch.ones(2, 1, 1, T, dtype=torch.bool)
        mask[1, ..., -2:] = False
        positions = RelativePositions(K).positions(T)
        got, weights = ours(x, x, mask, need_weights=True, positions=positions)
        expected, expected_weights = mha(x, mask=mask, need_weights=True, positions=positions)
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
        torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-6)
        assert not torch.allclose(got, ours(x, x, mask)[0], atol=1e-4)  # the positions do change it


def test_a_scheme_that_adds_nothing_leaves_mobilebert_unchanged():
    torch.manual_seed(0)
    c = MobileBertConfig(max_position_embeddings=24, **SHAPES[FIRST_SHAPE])  # NoNorm, a shared bottleneck
    m = MobileBertModel(c).eval()
    ids = torch.randint(5, c.vocab_size, (2, 9))
    before = m(ids).last_hidden_state
    keys = set(m.state_dict())
    m.positions = PositionScheme()  # positions reach every block's attention, which adds nothing to them
    torch.testing.assert_close(m(ids).last_hidden_state, before, rtol=0, atol=1e-6)
    assert set(m.state_dict()) == keys
