"""The Transformer layer equals torch's nn.TransformerEncoderLayer (without cross-attention) and
nn.TransformerDecoderLayer (with it) on the same weights, post- and pre-norm; its cached steps equal full
recomputation; embeddings and Eq. 2 by hand."""

import math

import pytest
import torch

from seq2bert.nn.embeddings import (
    ScaledEmbedding,
    SinusoidalPositionalEncoding,
    init_sinusoidal_,
    sinusoidal_table,
)
from seq2bert.nn.feed_forward import PositionwiseFeedForward
from seq2bert.nn.layers import LayerCache, TransformerLayer
from seq2bert.nn.masks import causal_mask, padding_mask
from seq2bert.nn.multihead import MultiHeadAttention

D, H, FF = 16, 4, 40


def encoder_layer(norm_first):
    return TransformerLayer(
        D, MultiHeadAttention(D, H), PositionwiseFeedForward(D, FF), dropout=0.1, norm_first=norm_first
    )


def decoder_layer(norm_first):
    return TransformerLayer(
        D,
        MultiHeadAttention(D, H),
        PositionwiseFeedForward(D, FF),
        cross_attn=MultiHeadAttention(D, H, cross=True),
        dropout=0.1,
        norm_first=norm_first,
    )


def copy_attention(ref, ours):
    if ours.cross:
        ref.in_proj_weight.copy_(torch.cat([ours.q.weight, ours.kv.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q.bias, ours.kv.bias]))
    else:
        ref.in_proj_weight.copy_(ours.qkv.weight)
        ref.in_proj_bias.copy_(ours.qkv.bias)
    ref.out_proj.load_state_dict(ours.out.state_dict())


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch(norm_first):
    torch.manual_seed(0)
    ours = encoder_layer(norm_first).eval()
    ref = torch.nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.1, batch_first=True, norm_first=norm_first
    ).eval()
    with torch.no_grad():
        copy_attention(ref.self_attn, ours.self_attn)
        ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
        ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
        ref.norm1.load_state_dict(ours.self_attn_sublayer.norm.state_dict())
        ref.norm2.load_state_dict(ours.ffn_sublayer.norm.state_dict())
    x = torch.randn(2, 5, D)
    am = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    out = ours(x, padding_mask(am)).hidden
    expected = ref(x, src_key_padding_mask=~am.bool())
    torch.testing.assert_close(out[0], expected[0], rtol=0, atol=1e-5)
    torch.testing.assert_close(
        out[1, :3], expected[1, :3], rtol=0, atol=1e-5
    )  # torch's fast path zeroes pads


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch(norm_first):
    torch.manual_seed(0)
    ours = decoder_layer(norm_first).eval()
    ref = torch.nn.TransformerDecoderLayer(
        D, H, FF, dropout=0.1, batch_first=True, norm_first=norm_first
    ).eval()
    with torch.no_grad():
        copy_attention(ref.self_attn, ours.self_attn)
        copy_attention(ref.multihead_attn, ours.cross_attn)
        ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
        ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
        ref.norm1.load_state_dict(ours.self_attn_sublayer.norm.state_dict())
        ref.norm2.load_state_dict(ours.cross_attn_sublayer.norm.state_dict())
        ref.norm3.load_state_dict(ours.ffn_sublayer.norm.state_dict())
    x, memory = torch.randn(2, 4, D), torch.randn(2, 6, D)
    am = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0]])
    out = ours(x, causal_mask(4), memory, padding_mask(am)).hidden
    expected = ref(x, memory, tgt_mask=~causal_mask(4), memory_key_padding_mask=~am.bool())
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)


def test_decoder_layer_cached_steps_equal_full_recomputation():
    torch.manual_seed(0)
    layer = decoder_layer(False).eval()
    x, memory = torch.randn(2, 5, D), torch.randn(2, 3, D)
    mm = padding_mask(torch.tensor([[1, 1, 1], [1, 1, 0]]))
    o = layer(x, causal_mask(5), memory, mm, need_weights=True)
    full, sw, cw = o.hidden, o.self_weights, o.cross_weights
    assert sw.shape == (2, H, 5, 5) and cw.shape == (2, H, 5, 3) and (cw[1, :, :, 2] == 0).all()
    cache = LayerCache()
    steps = [layer(x[:, t : t + 1], causal_mask(1, past=t), memory, mm, cache=cache).hidden for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=1e-5)
    assert cache.self_attn.length == 5 and cache.cross_attn.length == 3


def test_residual_dropout_only_in_training():
    torch.manual_seed(0)
    layer = encoder_layer(False)
    x = torch.randn(2, 5, D)
    layer.eval()
    a = layer(x).hidden
    torch.testing.assert_close(a, layer(x).hidden, rtol=0, atol=0)
    layer.train()
    assert not torch.allclose(a, layer(x).hidden)


def test_sinusoidal_table_is_the_formula_of_section_3_5():
    pe = sinusoidal_table(50, 10)
    for pos in (0, 1, 7, 49):
        for i in range(5):
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 10)), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / 10)), abs=1e-6)
    split = sinusoidal_table(50, 10, interleaved=False)
    torch.testing.assert_close(split, torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1))
    assert sinusoidal_table(3, 7).shape == (3, 7) and sinusoidal_table(3, 7, interleaved=False).shape == (
        3,
        7,
    )


def test_learned_positions_start_from_scaled_sinusoids():
    table = torch.nn.Embedding(512, 256)
    init_sinusoidal_(table, 0.02)
    assert table.weight.requires_grad  # still learned
    assert table.weight.pow(2).mean().sqrt().item() == pytest.approx(0.02, rel=0.02)  # the N(0, 0.02²) scale
    torch.testing.assert_close(table.weight / (0.02 * math.sqrt(2)), sinusoidal_table(512, 256))
    near = torch.nn.functional.cosine_similarity(table.weight[:-1], table.weight[1:], dim=1)
    assert near.mean() > 0.9  # neighbours alike from the start (a random table: about 0)


def test_split_sinusoids_equal_marian():
    marian = pytest.importorskip("transformers.models.marian.modeling_marian")
    for d in (16, 15):
        emb = marian.MarianSinusoidalPositionalEmbedding(40, d)
        torch.testing.assert_close(
            sinusoidal_table(40, d, interleaved=False), emb.create_weight(), rtol=0, atol=1e-6
        )


def test_positional_encoding_grows_past_its_table_and_is_not_saved():
    pe = SinusoidalPositionalEncoding(8, max_positions=4)
    out = pe(torch.tensor([[0, 3, 9]]))
    torch.testing.assert_close(out[0], sinusoidal_table(10, 8)[[0, 3, 9]])
    assert pe.state_dict() == {}


def test_scaled_embedding_and_feed_forward():
    torch.manual_seed(0)
    emb = ScaledEmbedding.transformer(11, 16, padding_idx=0)
    ids = torch.tensor([[3, 0]])
    torch.testing.assert_close(emb(ids), emb.weight[ids] * 4.0)
    assert (emb(ids)[0, 1] == 0).all()
    ffn = PositionwiseFeedForward(16, 32)
    x = torch.randn(2, 3, 16)
    by_hand = (
        torch.clamp(x @ ffn.w_1.weight.T + ffn.w_1.bias, min=0) @ ffn.w_2.weight.T + ffn.w_2.bias
    )  # Eq. 2
    torch.testing.assert_close(ffn(x), by_hand)
    with pytest.raises(ValueError, match="activation"):
        PositionwiseFeedForward(4, 8, activation="tanhh")
