"""XLNet (Yang et al. 2019) against transformers' XLNetModel / XLNetLMHeadModel, same weights (converted by
the family's key map), in odd sizes (3 heads of 16, d_inner 80, 3 layers): padded batches with segments,
left-to-right attention with clamped distances, the memory of the previous segment on and off, the
permutation mask and partial prediction through the query stream; the conversion both ways; and the
attention's score against Transformer-XL's and XLNet's equations written out."""

import math

import pytest
import torch

from seq2bert.models import registry
from seq2bert.models.xlnet.config import XLNetConfig
from seq2bert.models.xlnet.convert import from_hf_state_dict, to_hf_state_dict
from seq2bert.models.xlnet.model import XLNetModel, one_hot_rows, relative_sinusoids
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
    ours = registry.FAMILIES["xlnet"].make(cfg, architecture).eval()
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
    positions, computed there only (a mapping that is not one-hot refused). Every query sees at least one key (a query that sees none: transformers averages every key,
    ours reads nothing)."""
    theirs, ours, _ = pair()
    ids, mask, types = batch()
    g = torch.Generator().manual_seed(4)
    perm = (torch.rand(2, 9, 9, generator=g) < 0.5).float()
    perm[..., 0] = 0
    targets = torch.zeros(2, 3, 9)
    targets[:, 0, 2] = targets[:, 1, 5] = targets[:, 2, 8] = 1
    labels = torch.randint(0, 101, (2, 3), generator=g)
    targets[1, 2] = 0  # a row predicting nothing (padding): no label reads it
    labels[1, 2] = -100
    soft = targets.clone()  # a mapping that mixes positions is refused
    soft[:, 0, 3] = 0.5
    assert one_hot_rows(targets).tolist() == [[2, 5, 8], [2, 5, 0]]
    with pytest.raises(ValueError, match="one-hot"):
        ours(ids, mask, perm_mask=perm, target_mapping=soft)
    with torch.no_grad():
        for extra in ({}, {"target_mapping": targets, "labels": labels}):
            a = ours(ids, mask, perm_mask=perm, token_type_ids=types, **extra)
            b = theirs(ids, attention_mask=mask, perm_mask=perm, token_type_ids=types, **extra)
            read = (slice(None),) if not extra else (labels != -100,)  # the empty row is not read
            torch.testing.assert_close(a.logits[read], b.logits[read], **CLOSE)
            if "labels" in extra:
                torch.testing.assert_close(a.loss, b.loss, **CLOSE)
        assert a.logits.shape == (2, 3, 101)


HEADS = {
    "XLNetForSequenceClassification": ("logits",),
    "XLNetForTokenClassification": ("logits",),
    "XLNetForQuestionAnsweringSimple": ("start_logits", "end_logits"),
}


@pytest.mark.parametrize("architecture", list(HEADS))
def test_each_task_head_equals_transformers_with_its_loss_and_memory(architecture):
    """Left padding (the summary reads the last token, <cls>), two segments, the loss, then a second segment
    reading the first's memory."""
    theirs, ours, _ = pair(architecture=architecture)
    ids, mask, types = batch()
    g = torch.Generator().manual_seed(6)
    if architecture == "XLNetForQuestionAnsweringSimple":
        targets = dict(start_positions=torch.tensor([3, 20]), end_positions=torch.tensor([5, 6]))
    elif architecture == "XLNetForTokenClassification":
        targets = dict(labels=torch.randint(0, 2, (2, 9), generator=g).masked_fill(mask == 0, -100))
    else:
        targets = dict(labels=torch.tensor([1, 0]))
    with torch.no_grad():
        a = ours(ids, mask, token_type_ids=types, **targets)
        b = theirs(ids, attention_mask=mask, token_type_ids=types, **targets)
        for field in HEADS[architecture]:
            torch.testing.assert_close(getattr(a, field), getattr(b, field), **CLOSE)
        torch.testing.assert_close(a.loss, b.loss, **CLOSE)
        nxt = ids[:, :5]
        a2, b2 = ours(nxt, mems=a.mems), theirs(nxt, mems=b.mems)
        for field in HEADS[architecture]:
            torch.testing.assert_close(getattr(a2, field), getattr(b2, field), **CLOSE)


def test_multiple_choice_and_regression_equal_transformers():
    theirs, ours, _ = pair(architecture="XLNetForMultipleChoice")
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, 101, (2, 3, 6), generator=g)
    mask = torch.ones_like(ids)
    mask[0, 1, :2] = 0
    labels = torch.tensor([2, 0])
    with torch.no_grad():
        a, b = ours(ids, mask, labels=labels), theirs(ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(a.logits, b.logits, **CLOSE)
    torch.testing.assert_close(a.loss, b.loss, **CLOSE)
    assert a.logits.shape == (2, 3)
    torch.manual_seed(0)
    cfg = transformers.XLNetConfig(**SIZES, num_labels=1)
    theirs = made_to_count(transformers.XLNetForSequenceClassification(cfg))
    ours = registry.FAMILIES["xlnet"].make(
        XLNetConfig(**SIZES, id2label={0: "score"}), theirs.__class__.__name__
    )
    state = from_hf_state_dict(theirs.state_dict(), ours.config, "XLNetForSequenceClassification")
    ours.load_state_dict(state)
    ids, mask, _ = batch()
    y = torch.tensor([0.5, -1.0])
    with torch.no_grad():
        a, b = ours.eval()(ids, mask, labels=y), theirs(ids, attention_mask=mask, labels=y)
    torch.testing.assert_close(a.logits, b.logits, **CLOSE)
    torch.testing.assert_close(a.loss, b.loss, **CLOSE)


@pytest.mark.parametrize("architecture", ["XLNetLMHeadModel", *HEADS, "XLNetForMultipleChoice"])
def test_the_conversion_both_ways_is_the_identity(architecture):
    theirs, ours, cfg = pair(architecture=architecture)
    back = to_hf_state_dict(ours.state_dict(), cfg, architecture)
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


@pytest.mark.parametrize("architecture", ["XLNetForSequenceClassification", "XLNetForMultipleChoice"])
def test_the_summary_reads_the_last_real_token_whichever_side_is_padded(architecture):
    """Relative positions make a row's states independent of where its padding is, so the summary of <cls>,
    read at the last real token, is the same when the padding moves from the left to the right."""
    _, ours, _ = pair(architecture=architecture)
    g = torch.Generator().manual_seed(8)
    ids = torch.randint(6, 101, (2, 7), generator=g)
    left = torch.ones_like(ids)
    left[1, :3] = 0
    right = left.flip(1)
    moved = ids.clone()
    moved[1] = torch.cat([ids[1, 3:], ids[1, :3]])  # the same 4 real tokens first, then the padding
    if architecture == "XLNetForMultipleChoice":
        ids, moved, left, right = (x[None] for x in (ids, moved, left, right))
    with torch.no_grad():
        a, b = ours(ids, left).logits, ours(moved, right).logits
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    with torch.no_grad():  # reading the last position instead (a pad on the right) would differ
        summary = ours.sequence_summary
        c = ours.logits_proj(
            summary(ours.transformer(moved.flatten(0, -2), right.flatten(0, -2)).last_hidden_state)
        )
    assert not torch.allclose(c.view_as(b), b, atol=1e-3)
