"""XLNet (Yang et al. 2019) against transformers' XLNetModel / XLNetLMHeadModel, same weights (converted by
the family's key map), in odd sizes (3 heads of 16, d_inner 80, 3 layers): padded batches with segments,
left-to-right attention with clamped distances, the memory of the previous segment on and off, the
permutation mask and partial prediction through the query stream; the conversion both ways; and the
attention's score against Transformer-XL's and XLNet's equations written out."""

import math

import pytest
import torch

from seq2bert.models.xlnet.config import XLNetConfig
from seq2bert.models.xlnet.convert import from_hf_state_dict, to_hf_state_dict
from seq2bert.models.xlnet.model import XLNetLMHeadModel, XLNetModel, relative_sinusoids
from tests.models.hf_parity import CLOSE, made_to_count

transformers = pytest.importorskip("transformers")

SIZES = dict(vocab_size=101, d_model=48, n_layer=3, n_head=3, d_inner=80, dropout=0.0, mem_len=7)


def pair(attn_type="bi", clamp_len=-1, architecture="XLNetLMHeadModel"):
    """transformers' random model (biases and norms made to count) and ours with its weights."""
    torch.manual_seed(0)
    theirs = getattr(transformers, architecture)(
        transformers.XLNetConfig(**SIZES, attn_type=attn_type, clamp_len=clamp_len)
    )
    made_to_count(theirs)
    cfg = XLNetConfig(**SIZES, attn_type=attn_type, clamp_len=clamp_len)
    ours = {"XLNetModel": XLNetModel, "XLNetLMHeadModel": XLNetLMHeadModel}[architecture](cfg).eval()
    ours.load_state_dict(from_hf_state_dict(theirs.state_dict(), cfg, architecture))
    return theirs, ours, cfg


def batch(T=9, padded=True):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 101, (2, T), generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    if padded:
        mask[1, :3] = 0  # XLNet pads on the left
    types = torch.zeros(2, T, dtype=torch.long)
    types[:, T // 2 :] = 1
    return ids, mask, types


@pytest.mark.parametrize("architecture", ["XLNetModel", "XLNetLMHeadModel"])
def test_a_padded_batch_of_two_segments_and_its_memory_equal_transformers(architecture):
    theirs, ours, _ = pair(architecture=architecture)
    ids, mask, types = batch()
    with torch.no_grad():
        a = ours(ids, mask, token_type_ids=types)
        b = theirs(ids, attention_mask=mask, token_type_ids=types)
    field = "logits" if architecture == "XLNetLMHeadModel" else "last_hidden_state"
    torch.testing.assert_close(getattr(a, field), getattr(b, field), **CLOSE)  # padding rows too
    assert len(a.mems) == 3
    for m, n in zip(a.mems, b.mems, strict=True):  # (B, M, d) against their (M, B, d); mem_len 7 of 9
        torch.testing.assert_close(m, n.transpose(0, 1), **CLOSE)
    # the next segment reads the memory: 9 states kept to mem_len = 7
    nxt = torch.randint(0, 101, (2, 5), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        a2 = ours(nxt, mems=[m.clone() for m in a.mems])
        b2 = theirs(nxt, mems=b.mems)
    torch.testing.assert_close(getattr(a2, field), getattr(b2, field), **CLOSE)
    assert a2.mems[0].shape == (2, 7, 48)
    for m, n in zip(a2.mems, b2.mems, strict=True):
        torch.testing.assert_close(m, n.transpose(0, 1), **CLOSE)


def test_left_to_right_attention_with_clamped_distances_equals_transformers():
    theirs, ours, _ = pair(attn_type="uni", clamp_len=4)
    ids, _, types = batch(padded=False)  # transformers' "uni" with an attention mask fails (in-place add)
    with torch.no_grad():
        a, b = ours(ids, token_type_ids=types), theirs(ids, token_type_ids=types)
        torch.testing.assert_close(a.logits, b.logits, **CLOSE)
        nxt = ids[:, :4]
        torch.testing.assert_close(ours(nxt, mems=a.mems).logits, theirs(nxt, mems=b.mems).logits, **CLOSE)


def test_the_permutation_mask_and_partial_prediction_equal_transformers():
    """perm_mask alone changes the content stream; with a target_mapping the query stream predicts the P
    positions. Every query sees at least one key (a query that sees none: transformers averages every key,
    ours reads nothing)."""
    theirs, ours, _ = pair()
    ids, mask, types = batch()
    g = torch.Generator().manual_seed(4)
    perm = (torch.rand(2, 9, 9, generator=g) < 0.5).float()
    perm[..., 0] = 0
    targets = torch.zeros(2, 3, 9)
    targets[:, 0, 2] = targets[:, 1, 5] = targets[:, 2, 8] = 1
    labels = torch.randint(0, 101, (2, 3), generator=g)
    with torch.no_grad():
        for extra in ({}, {"target_mapping": targets, "labels": labels}):
            a = ours(ids, mask, perm_mask=perm, token_type_ids=types, **extra)
            b = theirs(ids, attention_mask=mask, perm_mask=perm, token_type_ids=types, **extra)
            torch.testing.assert_close(a.logits, b.logits, **CLOSE)
        torch.testing.assert_close(a.loss, b.loss, **CLOSE)
        assert a.logits.shape == (2, 3, 101)


def test_the_conversion_both_ways_is_the_identity():
    theirs, ours, cfg = pair()
    back = to_hf_state_dict(ours.state_dict(), cfg, "XLNetLMHeadModel")
    expected = theirs.state_dict()
    assert set(back) == set(expected)
    for key, value in expected.items():
        assert torch.equal(back[key], value), key
    assert back["transformer.layer.0.rel_attn.q"].shape == (48, 3, 16)


def test_one_score_is_transformer_xl_and_xlnets_equation():
    """A_ij = (q_i + u)·k_j + (q_i + v)·W_R R_{i−j} + (q_i + b)·s_ij, over √d_head, for one head and one pair
    (i, j) of a one-layer model, computed from the layer's weights by hand."""
    cfg = XLNetConfig(**{**SIZES, "n_layer": 1})
    torch.manual_seed(5)
    model = XLNetModel(cfg).eval()
    ids, _, types = batch(T=6, padded=False)
    layer = model.stack.layers[0]
    attn, rel = layer.self_attn, layer.self_attn.position
    with torch.no_grad():
        weights = model(ids, token_type_ids=types, output_attentions=True).attentions[0]  # (B, h, T, T)
        x = model.stack.embeddings(ids)  # h^(0)
        q, k, _ = attn.qkv(x).split(48, dim=-1)
        head, d = 1, 16
        q, k = q[0, :, head * d : (head + 1) * d], k[0, :, head * d : (head + 1) * d]  # (T, d)
        i = 4
        scores = []
        for j in range(6):
            r = relative_sinusoids(torch.tensor([i - j]), 48)[0]
            wr = (rel.r.weight @ r)[head * d : (head + 1) * d]
            s = rel.seg_embed[int(types[0, i] != types[0, j]), head]
            a = (q[i] + rel.r_w_bias[head]) @ k[j]
            a = a + (q[i] + rel.r_r_bias[head]) @ wr + (q[i] + rel.r_s_bias[head]) @ s
            scores.append(a / math.sqrt(d))
        expected = torch.softmax(torch.stack(scores), dim=0)
    torch.testing.assert_close(weights[0, head, i], expected, rtol=0, atol=1e-6)
