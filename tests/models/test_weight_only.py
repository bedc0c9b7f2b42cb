"""A model's int8 twin (seq2bert/models/weight_only.py) decodes as the float model whose Linear weights are
the dequantised int8 ones (and, with int8 activations, whose Linear inputs are each token's dequantised int8
values): the same logits (fp32, 1e-5) and the same greedy and beam-search tokens, for GPT-2 and the
Transformer; the twin is made once and made again when the weights change."""

import copy

import pytest
import torch
from torch import nn

from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.models.weight_only import int8_twin, is_weight_only_int8, weight_only_int8
from seq2bert.nn.weight_only import Int4Linear, Int8Linear, quantize_rows, quantize_tokens
from seq2bert.precision import native_int8
from tests.models.tiny_decoders import V, tiny_gpt2, tiny_transformer


def gpt2():
    return tiny_gpt2(2, 0)


def transformer():
    return tiny_transformer(2, 0)


def fake_int8(module: nn.Module, args: tuple) -> tuple:
    """A Linear layer's input replaced by r ⊙ x_q, each token's dequantised int8 values (Eq. 4)."""
    x = args[0]
    x_q, r = quantize_tokens(x.reshape(-1, x.size(-1)))
    return ((x_q.float() * r).view_as(x).to(x.dtype),)


def dequantised(model: nn.Module, int8_activations: bool = False) -> nn.Module:
    """The float model whose every Linear weight is s ⊙ W_q (a tied one untied, as the twin's), and whose
    Linear inputs are r ⊙ x_q where ``int8_activations``."""
    out = copy.deepcopy(model)
    for module in list(out.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Linear:
                q, s = quantize_rows(child.weight)
                linear = nn.Linear(child.in_features, child.out_features, bias=child.bias is not None)
                with torch.no_grad():
                    linear.weight.copy_(q.float() * s[:, None])
                    if child.bias is not None:
                        linear.bias.copy_(child.bias)
                if int8_activations:
                    linear.register_forward_pre_hook(fake_int8)
                setattr(module, name, linear)
    return out


def inputs(model):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(3, V, (3, 6), generator=g)
    mask = torch.ones_like(ids)
    if isinstance(model, GPT2LMHeadModel):  # left padding
        mask[1, :2] = 0
    else:  # right padding
        mask[1, 4:] = 0
    return ids.masked_fill(mask == 0, 0), mask


MODELS = {"gpt2": gpt2, "transformer": transformer}


@pytest.mark.parametrize("family", list(MODELS))
def test_the_twin_has_int8_linears_only_and_keeps_the_model_as_it_was(family):
    model = MODELS[family]()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    twin = weight_only_int8(model)
    assert is_weight_only_int8(twin) and not is_weight_only_int8(model)
    assert not any(type(m) is nn.Linear for m in twin.modules())
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    weights = sum(m.weight.numel() for m in twin.modules() if isinstance(m, Int8Linear))
    assert weights > 0.5 * sum(p.numel() for p in model.parameters())  # the LM head's copy included


@pytest.mark.parametrize("family", list(MODELS))
@pytest.mark.parametrize("int8_activations", [False, True])
def test_twin_logits_equal_the_dequantised_float_model(family, int8_activations):
    model = MODELS[family]()
    twin = weight_only_int8(model, int8_activations=int8_activations)
    ref = dequantised(model, int8_activations)
    ids, mask = inputs(model)
    with torch.no_grad():
        if family == "gpt2":
            a, b = twin(ids, mask).logits, ref(ids, mask).logits
        else:
            dec = torch.tensor([[1, 5, 6, 7]] * 3)
            a, b = twin(ids, mask, decoder_input_ids=dec).logits, ref(ids, mask, decoder_input_ids=dec).logits
            full = model(ids, mask, decoder_input_ids=dec).logits
            assert not torch.allclose(a, full, atol=1e-6)  # int8 is not the float model itself
    assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("family", list(MODELS))
@pytest.mark.parametrize("settings", [dict(num_beams=1), dict(num_beams=3, num_return_sequences=2)])
def test_generate_int8_decodes_as_the_dequantised_model(family, settings):
    model = MODELS[family]()
    ids, mask = inputs(model)
    out = model.generate(ids, mask, int8=True, max_new_tokens=12, **settings)
    ref = dequantised(model, native_int8("cpu"))  # the CPU decides whether activations are int8 too
    assert torch.equal(out, ref.generate(ids, mask, max_new_tokens=12, **settings))


def test_bf16_twin_decodes_in_bf16():
    model = gpt2()
    twin = int8_twin(model, torch.bfloat16)
    assert twin.transformer.embeddings.token.weight.dtype == torch.bfloat16
    ids, mask = inputs(model)
    out = twin.generate(ids, mask, max_new_tokens=5)
    assert out.shape == (3, 11)


def test_the_twin_is_kept_until_the_weights_change():
    model = gpt2()
    twin = int8_twin(model)
    assert int8_twin(model) is twin and int8_twin(twin) is twin
    with torch.no_grad():
        model.lm_head.weight.mul_(2.0)  # in place, as an optimizer step
    again = int8_twin(model)
    assert again is not twin
    q, s = quantize_rows(model.lm_head.weight)
    assert torch.equal(again.lm_head.weight, q)


def test_a_model_without_linear_layers_is_refused():
    with pytest.raises(ValueError, match="no Linear layer"):
        weight_only_int8(nn.Sequential(nn.Embedding(4, 3)))


def test_an_int4_twin_computes_with_its_dequantised_weights():
    model = tiny_gpt2(2, 0)
    twin = weight_only_int8(model, bits=4)
    layers = [m for m in twin.modules() if isinstance(m, Int4Linear)]
    assert layers and not any(type(m) is nn.Linear for m in twin.modules())
    ref = copy.deepcopy(model)
    for child in list(ref.modules()):
        if type(child) is nn.Linear:
            child.weight = nn.Parameter(Int4Linear.from_linear(child).dequantized())
    ids, mask = inputs(model)
    with torch.no_grad():
        assert torch.allclose(twin(ids, mask).logits, ref(ids, mask).logits, atol=1e-4)
