"""Distillation losses (objectives/distillation.py) against their equations: DistilBERT's soft targets and
cosine loss, TinyBERT's layer map and its MSEs on hidden states and on the attention scores before the
softmax — those scores checked against the weights the model itself computes — and the Distiller around
a teacher and a student."""

import pytest
import torch
import torch.nn.functional as F

from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.tasks import BertForSequenceClassification, BertForTokenClassification
from seq2bert.objectives.distillation import (
    Distiller,
    DistillWeights,
    attention_kl,
    attention_mse,
    cosine_embedding_loss,
    hidden_mse,
    layer_map,
    pool_heads,
    soft_cross_entropy,
)


def test_layer_map_is_tinyberts_uniform_strategy():
    assert layer_map(4, 12) == [3, 6, 9, 12]  # TinyBERT-4 from BERT-base: g(m) = 3m
    assert layer_map(3, 6) == [2, 4, 6]  # DistilBERT's one layer out of two
    assert layer_map(6, 6) == [1, 2, 3, 4, 5, 6]
    assert layer_map(4, 6) == [1, 3, 4, 6]  # rounded down, the last always the teacher's last
    with pytest.raises(ValueError):
        layer_map(7, 6)


def test_soft_cross_entropy_is_t_squared_times_cross_entropy_and_its_gradient_is_hintons():
    torch.manual_seed(0)
    zs, zt, T = torch.randn(5, 7, requires_grad=True), torch.randn(5, 7), 3.0
    loss = soft_cross_entropy(zs, zt, T)
    p_t, p_s = torch.softmax(zt / T, -1), torch.softmax(zs / T, -1)
    entropy = -(p_t * p_t.log()).sum(-1).mean()
    kl = F.kl_div(torch.log_softmax(zs / T, -1), p_t, reduction="batchmean")
    torch.testing.assert_close(loss, T**2 * (kl + entropy))
    loss.backward()
    # Hinton et al. Eq. 2 times T²: ∂/∂z_i = T (s_i − t_i), averaged over the 5 rows
    torch.testing.assert_close(zs.grad, T * (p_s - p_t).detach() / 5)


def test_soft_cross_entropy_over_tokens_reads_the_real_ones_only():
    torch.manual_seed(1)
    zs, zt = torch.randn(2, 4, 3), torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    loss = soft_cross_entropy(zs, zt, 2.0, mask)
    zs2 = zs.clone()
    zs2[mask == 0] = 100.0  # padding changed: nothing changes
    assert torch.equal(loss, soft_cross_entropy(zs2, zt, 2.0, mask))
    rows = mask.bool()
    torch.testing.assert_close(loss, soft_cross_entropy(zs[rows], zt[rows], 2.0))


def test_cosine_loss_is_one_minus_cosine_over_real_tokens():
    h = torch.randn(2, 3, 8)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert float(cosine_embedding_loss(h, 2.5 * h, mask)) == pytest.approx(0.0, abs=1e-6)  # directions only
    assert float(cosine_embedding_loss(h, -h, mask)) == pytest.approx(2.0, abs=1e-6)
    other = h.clone()
    other[0, 2] = -h[0, 2]  # a padded position opposed: ignored
    assert float(cosine_embedding_loss(h, other, mask)) == pytest.approx(0.0, abs=1e-6)


def test_hidden_mse_is_the_mean_squared_error_of_the_real_tokens():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    mask = torch.tensor([[1, 1, 0], [0, 1, 1]])
    expected = ((a - b) ** 2)[mask.bool()].mean()
    torch.testing.assert_close(hidden_mse(a, b, mask), expected)


def test_attention_mse_over_pairs_of_real_tokens_and_pooled_heads():
    torch.manual_seed(2)
    s, t = torch.randn(2, 2, 3, 3), torch.randn(2, 6, 3, 3)
    pooled = pool_heads(t, 2)
    torch.testing.assert_close(pooled[:, 1], t[:, 3:].mean(1))  # heads 3, 4, 5 → student head 1
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    expected = torch.cat(
        [((s[0] - pooled[0])[:, :2, :2] ** 2).flatten(), ((s[1] - pooled[1]) ** 2).flatten()]
    ).mean()
    torch.testing.assert_close(attention_mse(s, t, mask), expected)
    with pytest.raises(ValueError, match="do not group"):
        pool_heads(torch.randn(1, 6, 2, 2), 4)


def test_attention_kl_is_mobileberts_at_over_real_queries_and_keys():
    """L_AT = 1/(TA) Σ_t Σ_a KL(a^T ‖ a^S): each real query's distributions over the real keys, by
    torch's kl_div row by row; the padding changes nothing; the teacher's 6 heads' distributions are
    averaged into the student's 2."""
    torch.manual_seed(5)
    s, t = torch.randn(2, 2, 4, 4), torch.randn(2, 6, 4, 4)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    rows = []
    for b, n in ((0, 3), (1, 4)):
        for a in range(2):
            for q in range(n):
                p = torch.softmax(t[b, 3 * a : 3 * a + 3, q, :n], -1).mean(0)  # the group's mean distribution
                log_q = torch.log_softmax(s[b, a, q, :n], -1)
                rows.append(F.kl_div(log_q, p, reduction="sum"))
    torch.testing.assert_close(attention_kl(s, t, mask), torch.stack(rows).mean())
    alone = attention_kl(s[:1, :, :3, :3], t[:1, :, :3, :3])  # row 0 without its padding
    torch.testing.assert_close(attention_kl(s[:1], t[:1], mask[:1]), alone)
    assert float(attention_kl(t[:, ::3], t[:, ::3], mask)) == pytest.approx(0.0, abs=1e-6)


def tiny(layers=4, hidden=32, heads=4, **kw):
    kw = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, **kw}
    return BertConfig(vocab_size=50, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                      intermediate_size=2 * hidden, max_position_embeddings=16, **kw)  # fmt: skip


def batch(B=3, T=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 50, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 5:], mask[2, 3:] = 0, 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def test_attention_scores_of_a_layers_input_give_the_weights_the_model_computes():
    """softmax of the recomputed scores, padding masked, equals output_attentions: the scores are the
    pre-softmax A of Eq. 7, of the right layer (hidden_states[ℓ] is layer ℓ's input)."""
    torch.manual_seed(3)
    model = BertForSequenceClassification(tiny()).eval()
    b = batch()
    out = model(**b, output_hidden_states=True, output_attentions=True)
    stack = model.base_model
    keys = b["attention_mask"].bool()[:, None, None, :]  # (B, 1, 1, T)
    for i in range(4):
        scores = stack.layer(i).attention_scores(out.hidden_states[i])
        weights = torch.softmax(scores.masked_fill(~keys, float("-inf")), -1)
        torch.testing.assert_close(weights, out.attentions[i], atol=1e-6, rtol=1e-5)


def test_the_depths_choose_the_layers_a_stage_learns():
    """MobileBERT's stage ℓ: L_FMT and L_AT of layer ℓ alone (and the embeddings' output with ℓ = 1)."""
    torch.manual_seed(6)
    teacher, student = (BertForSequenceClassification(tiny(layers=2)) for _ in range(2))
    weights = DistillWeights(hidden=1.0, attention_kl=1.0)
    b = batch()
    full = Distiller(student, teacher, student.base_model, teacher.base_model, weights)
    full(**b)
    s_out = student(**b, output_hidden_states=True)
    t_out = teacher(**b, output_hidden_states=True)
    mask = b["attention_mask"]
    for depth in (1, 2):
        d = Distiller(student, teacher, student.base_model, teacher.base_model, weights, depths={depth})
        d(**b)
        fmt = hidden_mse(s_out.hidden_states[depth], t_out.hidden_states[depth], mask)
        at = attention_kl(
            student.base_model.layer(depth - 1).attention_scores(s_out.hidden_states[depth - 1]),
            teacher.base_model.layer(depth - 1).attention_scores(t_out.hidden_states[depth - 1]),
            mask,
        )
        assert d.parts["hidden"] == pytest.approx(float(fmt), rel=1e-5)
        assert d.parts["attention_kl"] == pytest.approx(float(at), rel=1e-5)
    first = Distiller(student, teacher, student.base_model, teacher.base_model, weights, depths={0, 1})
    first(**b)
    embeddings = hidden_mse(s_out.hidden_states[0], t_out.hidden_states[0], mask)
    layer_1 = hidden_mse(s_out.hidden_states[1], t_out.hidden_states[1], mask)
    assert first.parts["hidden"] == pytest.approx(float(embeddings + layer_1), rel=1e-5)
    assert full.parts["attention_kl"] > first.parts["attention_kl"]


def test_a_student_equal_to_its_teacher_has_nothing_to_learn():
    torch.manual_seed(4)
    teacher = BertForTokenClassification(tiny(id2label={0: "a", 1: "b", 2: "c"}))
    student = BertForTokenClassification(tiny(id2label={0: "a", 1: "b", 2: "c"}))
    student.load_state_dict(teacher.state_dict())
    weights = DistillWeights(soft=1.0, cos=1.0, attention=1.0, hidden=1.0, temperature=2.0)
    d = Distiller(student, teacher, student.base_model, teacher.base_model, weights)
    b = batch()
    d(**b)
    assert d.parts["cos"] == pytest.approx(0.0, abs=1e-6)
    assert d.parts["hidden"] == pytest.approx(0.0, abs=1e-10)
    assert d.parts["attention"] == pytest.approx(0.0, abs=1e-10)
    logits = teacher(**b).logits[b["attention_mask"].bool()] / 2.0
    p = torch.softmax(logits, -1)
    entropy = float(-(p * p.log()).sum(-1).mean()) * 4  # soft CE at its minimum: T² · H(teacher)
    assert d.parts["soft"] == pytest.approx(entropy, rel=1e-5)


def test_a_narrower_student_learns_through_w_h_and_the_teacher_stays_frozen_in_eval_mode():
    torch.manual_seed(5)
    teacher = BertForSequenceClassification(
        tiny(layers=4, hidden=32, heads=4, id2label={0: "a", 1: "b"}, hidden_dropout_prob=0.3)
    )
    student = BertForSequenceClassification(tiny(layers=2, hidden=16, heads=2, id2label={0: "a", 1: "b"}))
    d = Distiller(
        student, teacher, student.base_model, teacher.base_model, DistillWeights(attention=1.0, hidden=1.0)
    )
    assert d.mapping == [2, 4]
    assert isinstance(d.W_h, torch.nn.Linear) and d.W_h.weight.shape == (32, 16)
    d.train()
    assert not teacher.training and student.training
    loss = d(**batch())
    loss.backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert d.W_h.weight.grad is not None and d.W_e.weight.grad is not None
    assert student.base_model.layer(0).self_attn.qkv.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="one width"):
        Distiller(student, teacher, student.base_model, teacher.base_model, DistillWeights(cos=1.0))


def test_hard_only_runs_no_teacher():
    torch.manual_seed(6)
    teacher = BertForSequenceClassification(tiny(id2label={0: "a", 1: "b"}))
    student = BertForSequenceClassification(tiny(layers=2, id2label={0: "a", 1: "b"}))
    calls = []
    teacher.register_forward_hook(lambda *a: calls.append(1))
    d = Distiller(student, teacher, student.base_model, teacher.base_model, DistillWeights(hard=1.0))
    b = {**batch(), "labels": torch.tensor([0, 1, 1])}
    torch.testing.assert_close(d(**b), student(**b).loss)
    assert not calls
