"""LoRA (Hu et al. 2021): the layer is Eq. 3 scaled by α/r, starts as the base model, trains r·(k + d) parameters
per adapted projection besides the head, and merges into plain Linear layers with the same outputs — for every
family that has attention and feed-forward layers."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.models import registry
from seq2bert.nn.lora import (
    ROLES,
    LoRALinear,
    apply_lora,
    load_trainable_state,
    lora_layers,
    merge_lora,
    merged_state_dict,
    trainable_state_dict,
)
from tests.models.small_configs import small_config


def randomised(layer: LoRALinear) -> LoRALinear:
    with torch.no_grad():
        layer.lora_B.normal_()  # B = 0 at the start: given values, so that BA counts
    return layer


def test_the_layer_is_eq3_scaled_by_alpha_over_r():
    torch.manual_seed(0)
    base = nn.Linear(5, 7)
    W0, b = base.weight.detach().clone(), base.bias.detach().clone()
    layer = randomised(LoRALinear(base, r=3, alpha=6.0))
    A, B = layer.lora_A.detach(), layer.lora_B.detach()
    assert A.shape == (3, 5) and B.shape == (7, 3)
    x = torch.randn(2, 4, 5)
    # h = W_0 x + (α/r) B A x  (Eq. 3, with the scaling of Sect. 4.1), on row vectors: x W_0ᵀ + b + (α/r) x Aᵀ Bᵀ
    expected = x @ W0.T + b + (6.0 / 3) * (x @ A.T @ B.T)
    torch.testing.assert_close(layer(x), expected)
    torch.testing.assert_close(layer.weight, W0 + 2.0 * B @ A)
    assert not base.weight.requires_grad and not base.bias.requires_grad
    assert layer.lora_A.requires_grad and layer.lora_B.requires_grad


def test_a_fused_projection_adapts_its_chosen_blocks_as_separate_layers_would():
    torch.manual_seed(0)
    base = nn.Linear(6, 9)  # [W_q W_k W_v], 3 rows each
    W0, b = base.weight.detach().clone(), base.bias.detach().clone()
    layer = randomised(LoRALinear(base, r=2, alpha=4.0, parts=[(3, True), (3, False), (3, True)]))
    A, B = layer.lora_A.detach(), layer.lora_B.detach()
    assert A.shape == (4, 6) and B.shape == (6, 2)  # A_q, A_v stacked; B_q, B_v stacked
    A_q, A_v, B_q, B_v = A[:2], A[2:], B[:3], B[3:]
    x = torch.randn(3, 6)
    s = 4.0 / 2
    q = x @ W0[:3].T + b[:3] + s * x @ A_q.T @ B_q.T
    k = x @ W0[3:6].T + b[3:6]
    v = x @ W0[6:].T + b[6:] + s * x @ A_v.T @ B_v.T
    torch.testing.assert_close(layer(x), torch.cat([q, k, v], dim=-1))


def test_dropout_is_on_the_input_of_the_low_rank_path_only():
    torch.manual_seed(0)
    base = nn.Linear(8, 4)
    layer = randomised(LoRALinear(base, r=2, alpha=2.0, dropout=0.5)).train()
    x = torch.randn(16, 8)
    torch.manual_seed(1)
    out = layer(x)
    torch.manual_seed(1)
    dropped = F.dropout(x, 0.5, training=True)
    A, B = layer.lora_A.detach(), layer.lora_B.detach()
    torch.testing.assert_close(out, base(x) + dropped @ A.T @ B.T)
    layer.eval()
    torch.testing.assert_close(layer(x), base(x) + x @ A.T @ B.T)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="r: the rank must be >= 1"):
        LoRALinear(nn.Linear(2, 2), r=0, alpha=1.0)
    with pytest.raises(ValueError, match="alpha: must be > 0"):
        LoRALinear(nn.Linear(2, 2), r=1, alpha=0.0)
    with pytest.raises(ValueError, match="targets: expected some of query"):
        apply_lora(nn.Linear(2, 2), r=1, alpha=1.0, targets=["qery"])


# --- whole models of every family with attention and feed-forward layers
def inputs(family):
    ids = torch.tensor([[2, 5, 9, 11, 3, 1], [2, 7, 4, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    if family.kind == "encoder-decoder":
        return dict(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :4])
    return dict(input_ids=ids, attention_mask=mask)


def task_model(family):
    torch.manual_seed(0)
    architecture = family.heads.get("sequence") or family.heads.get("seq2seq")
    config = small_config(family)
    if family.heads.get("sequence"):
        config = dataclasses_replace(config, id2label={0: "no", 1: "yes"}, pad_token_id=0)
    return family.make(config, architecture).eval()


def dataclasses_replace(config, **fields):
    import dataclasses

    names = {f.name for f in dataclasses.fields(config)}
    return dataclasses.replace(config, **{k: v for k, v in fields.items() if k in names})


def outputs(model, family):
    with torch.no_grad():
        return model(**inputs(family)).logits


ADAPTED = [
    pytest.param(family, id=family.model_type)
    for family in registry.FAMILIES.values()
    if family.model_type not in ("seq2seq", "cho", "bahdanau", "luong", "rnn-lm", "bilstm", "elmo")
    and (family.heads.get("sequence") or family.heads.get("seq2seq"))
]


def test_every_family_with_attention_is_covered():
    covered = {p.values[0].model_type for p in ADAPTED}
    assert {
        "bert",
        "roberta",
        "albert",
        "distilbert",
        "electra",
        "mobilebert",
        "gpt2",
        "openai-gpt",
    } <= covered
    assert {"transformer", "marian"} <= covered  # cross-attention: q and [W^K W^V]


def expected_count(model, r, head):
    """r·(k + d_i) for every adapted projection (a block of a fused Linear counts as its own layer), plus
    the head's parameters."""
    n = 0
    for layer in lora_layers(model).values():
        n += sum(r * (layer.in_features + rows) for rows, on in layer.parts if on)
    return n + sum(p.numel() for name, p in model.named_parameters() if name.split(".")[0] in head)


@pytest.mark.parametrize("family", ADAPTED)
def test_a_model_starts_as_its_base_trains_lora_and_head_only_and_merges_to_equal_outputs(family):
    model = task_model(family)
    base = copy.deepcopy(model)
    head = [m for m in family.head_modules if hasattr(model, m)]
    wrapped = apply_lora(model, r=4, alpha=8.0, trainable=head)
    assert wrapped
    # B = 0: at the start the adapted model computes what the base computes
    torch.testing.assert_close(outputs(model, family), outputs(base, family), rtol=0, atol=0)
    trains = {name for name, p in model.named_parameters() if p.requires_grad}
    assert all(name.split(".")[-1] in ("lora_A", "lora_B") or name.split(".")[0] in head for name in trains)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == expected_count(model, 4, head)
    # every attention and feed-forward projection is adapted: q, k, v, W^O, W_1, W_2 in each layer
    roles = [rows for layer in lora_layers(model).values() for rows in layer.parts]
    assert all(on for _, on in roles)
    blocks = [m for m in base.modules() if hasattr(m, "linear_roles")]
    assert len(wrapped) == sum(len(m.linear_roles()) for m in blocks) >= 4
    for layer in lora_layers(model).values():
        randomised(layer)  # as after training
    adapted = outputs(model, family)
    assert (adapted - outputs(base, family)).abs().max() > 1e-3
    # merged: the family's own state-dict keys, the same outputs
    state = merged_state_dict(model)
    assert state.keys() == base.state_dict().keys()
    merge_lora(model)
    assert not lora_layers(model) and model.state_dict().keys() == base.state_dict().keys()
    torch.testing.assert_close(outputs(model, family), adapted, rtol=0, atol=1e-5)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(state[key], value, rtol=0, atol=0, msg=key)
    base.load_state_dict(state)  # a plain model of the family takes the merged weights
    torch.testing.assert_close(outputs(base, family), adapted, rtol=0, atol=1e-5)


def test_the_papers_choice_adapts_query_and_value_rows_of_the_fused_projection():
    bert = registry.get("bert")
    model = task_model(bert)
    apply_lora(model, r=2, alpha=2.0, targets=["query", "value"], trainable=["classifier"])
    layers = lora_layers(model)
    assert sorted(name.split(".")[-1] for name in layers) == ["qkv", "qkv"]  # W^O and the FFN untouched
    H = model.config.hidden_size
    for layer in layers.values():
        assert layer.parts == ((H, True), (H, False), (H, True))
    n = sum(p.numel() for p in model.parameters() if p.requires_grad)
    classifier = sum(p.numel() for p in model.classifier.parameters())
    assert n == 2 * 2 * (2 * (H + H)) + classifier  # 2 layers × (W_q, W_v) × r·(k + d)


def test_a_shared_layer_is_adapted_once():
    albert = registry.get("albert")
    model = task_model(albert)
    apply_lora(model, r=2, alpha=2.0, trainable=["classifier"])
    assert len(lora_layers(model)) == 4  # one shared layer: qkv, W^O, W_1, W_2


def test_a_family_without_attention_layers_is_refused():
    bilstm = registry.get("bilstm")
    with pytest.raises(ValueError, match="has no Linear layer of the roles"):
        apply_lora(task_model(bilstm), r=2, alpha=2.0)


def test_the_trainable_state_round_trips_and_must_fit():
    model = task_model(registry.get("bert"))
    apply_lora(model, r=2, alpha=2.0, targets=ROLES, trainable=["classifier"])
    for layer in lora_layers(model).values():
        randomised(layer)
    state = {k: v.clone() for k, v in trainable_state_dict(model).items()}
    other = task_model(registry.get("bert"))
    apply_lora(other, r=2, alpha=2.0, trainable=["classifier"])
    load_trainable_state(other, state, "saved")
    torch.testing.assert_close(outputs(other, registry.get("bert")), outputs(model, registry.get("bert")))
    smaller = task_model(registry.get("bert"))
    apply_lora(smaller, r=1, alpha=2.0, trainable=["classifier"])
    with pytest.raises(ValueError, match="saved: .* has shape"):
        load_trainable_state(smaller, state, "saved")
    del state["classifier.bias"]
    with pytest.raises(ValueError, match=r"missing: \['classifier.bias'\]"):
        load_trainable_state(other, state, "saved")
