"""Pruning: a pruned head is a head whose gate is 0, and a head of transformers' whose weights are 0 (same
outputs; the dense directory transformers reads); importance is |∂L/∂ξ| (Michel et al. 2019, Eq. 2)
against finite differences; magnitude pruning zeroes the smallest weights over all layers at once."""

import copy
import json

import pytest
import torch

from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.pretrained import load, save_hf
from seq2bert.models.pruning import (
    attention_layers,
    count_heads,
    dense,
    encoder_linears,
    head_importance,
    least_important,
    prune_heads,
    prune_weights,
)
from seq2bert.nn.multihead import MultiHeadAttention
from tests.models.hf_parity import CLOSE, made_to_count, padded
from tests.models.small_configs import small_config


def test_a_pruned_head_is_a_head_whose_gate_is_zero():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    gated = copy.deepcopy(mha)
    gated.head_gate = torch.tensor([1.0, 0.0, 1.0, 0.0])
    mha.prune_heads([3, 1])
    assert (mha.h, mha.heads, mha.qkv.out_features, mha.out.in_features) == (2, [0, 2], 24, 8)
    torch.testing.assert_close(mha(x)[0], gated(x)[0])
    mha.prune_heads([2])  # original numbers, after an earlier pruning
    assert mha.heads == [0]
    with pytest.raises(ValueError, match="no head"):
        mha.prune_heads([0])


def task_model(model_type="bert"):
    family = registry.get(model_type)
    torch.manual_seed(0)
    cfg = small_config(family)
    cfg.num_attention_heads, cfg.num_hidden_layers = 4, 3
    return made_to_count(family.make(cfg, family.architecture_for("sequence")))


def zero_heads(hf_model, heads, d):
    """transformers' model with ``heads`` silenced by hand: their rows of W^Q, W^K, W^V, value bias and
    columns of W^O set to 0."""
    with torch.no_grad():
        for layer, numbers in heads.items():
            attention = hf_model.base_model.encoder.layer[layer].attention
            for h in numbers:
                rows = slice(h * d, (h + 1) * d)
                for linear in (attention.self.query, attention.self.key, attention.self.value):
                    linear.weight[rows] = 0
                    linear.bias[rows] = 0
                attention.output.dense.weight[:, rows] = 0
    return hf_model


@pytest.mark.parametrize("model_type", ["bert", "roberta", "electra"])
def test_pruned_heads_are_heads_that_add_nothing_and_transformers_reads_the_dense_directory(
    model_type, tmp_path
):
    transformers = pytest.importorskip("transformers")
    family = registry.get(model_type)
    ours = task_model(model_type)
    save_hf(family, ours, tmp_path / "full")
    hf_class = getattr(transformers, type(ours).__name__)
    heads = {0: [1, 3], 2: [0, 1, 2]}
    theirs = zero_heads(hf_class.from_pretrained(tmp_path / "full").eval(), heads, 16 // 4)
    prune_heads(ours, heads)
    batch = padded(ours.config.vocab_size)
    with torch.no_grad():
        expected = theirs(**batch).logits
        torch.testing.assert_close(ours(**batch).logits, expected, **CLOSE)
    assert count_heads(ours) == 12 - 5 and ours.config.pruned_heads == heads
    assert attention_layers(ours)[2].qkv.out_features == 3 * 4  # one head of 4 dimensions left
    save_hf(family, ours, tmp_path / "pruned")  # transformers 4's layout: smaller matrices, pruned_heads
    assert json.loads((tmp_path / "pruned" / "config.json").read_text())["pruned_heads"] == {
        "0": [1, 3],
        "2": [0, 1, 2],
    }
    again, _ = load(tmp_path / "pruned")
    save_hf(family, dense(ours), tmp_path / "dense")  # every version's: full size, the heads' weights 0
    assert "pruned_heads" not in json.loads((tmp_path / "dense" / "config.json").read_text())
    read = hf_class.from_pretrained(tmp_path / "dense").eval()
    with torch.no_grad():
        torch.testing.assert_close(again(**batch).logits, expected, **CLOSE)
        torch.testing.assert_close(read(**batch).logits, expected, **CLOSE)


def test_importance_is_the_gradient_of_the_loss_with_respect_to_each_heads_gate():
    model = task_model().double()
    batch = {**padded(model.config.vocab_size), "labels": torch.tensor([0, 1, 1])}
    raw = head_importance(model, [batch], normalise=False)
    for layer, attention in enumerate(attention_layers(model)):
        for i in range(attention.h):  # central difference of L(ξ) at ξ = 1
            losses = []
            for eps in (1e-5, -1e-5):
                gate = torch.ones(attention.h, dtype=torch.float64)
                gate[i] += eps
                attention.head_gate = gate
                with torch.no_grad():  # the loss in float64 (the model's own is fp32)
                    logits = model.eval()(**padded(model.config.vocab_size)).logits
                    losses.append(float(torch.nn.functional.cross_entropy(logits, batch["labels"])))
            attention.head_gate = None
            assert raw[layer][i].item() == pytest.approx(
                abs(losses[0] - losses[1]) / 2e-5, rel=1e-3, abs=1e-9
            )
    normalised = head_importance(model, [batch])
    for r, n in zip(raw, normalised, strict=True):
        torch.testing.assert_close(n, r / r.norm())
        assert n.norm().item() == pytest.approx(1.0)
    assert all(p.grad is None for p in model.parameters())  # the weights' gradients untouched


def test_the_least_important_heads_are_taken_globally_and_every_layer_keeps_one():
    model = task_model()
    importance = [torch.tensor([0.1, 0.9, 0.2, 0.8]), torch.tensor([0.01, 0.02, 0.03, 0.04]), torch.ones(4)]
    assert least_important(importance, model, 4) == {1: [0, 1, 2], 0: [0]}  # layer 1 keeps its 4th head
    prune_heads(model, {1: [0, 1]})
    assert least_important([importance[0], importance[1][2:], importance[2]], model, 2) == {1: [2], 0: [0]}


def test_magnitude_pruning_zeroes_the_smallest_weights_of_all_layers_at_once():
    model = task_model()
    linears = encoder_linears(model)
    weights = torch.cat([m.weight.detach().abs().flatten() for m in linears])
    threshold = weights.kthvalue(int(0.6 * weights.numel())).values
    head = model.classifier.weight.detach().clone()
    assert prune_weights(model, 0.6) == pytest.approx(0.6, abs=1e-3)
    for m in linears:  # exactly the smallest 60 %, wherever they are
        w = m.weight.detach()
        assert torch.all((w == 0) | (w.abs() >= threshold))
    assert not hasattr(linears[0], "weight_orig") and torch.equal(model.classifier.weight, head)
    with pytest.raises(ConfigError, match="--sparsity"):
        prune_weights(model, 1.0)


def test_families_without_recorded_heads_are_one_clear_error():
    with pytest.raises(ConfigError, match="pruned_heads"):
        attention_layers(task_model("distilbert"))
    with pytest.raises(Exception, match="pruned_heads"):
        BertConfig(num_attention_heads=2, hidden_size=8, pruned_heads={"0": [0, 1]})
