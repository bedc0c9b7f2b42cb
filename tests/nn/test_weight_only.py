"""Weight-only int8 Linear layers (seq2bert/nn/weight_only.py) against the equations: the rounding bound of
Eq. 1, the CPU kernel against the dequantised matmul of Eq. 2, and the layer against the float one it
replaces within the bound Eq. 1 gives."""

import pytest
import torch
from torch import nn

from seq2bert.nn.weight_only import (
    QMAX,
    Int4Linear,
    Int8Linear,
    int8_linears,
    int8_matmul,
    quantize_groups,
    quantize_rows,
)


def test_each_weight_is_within_half_a_step_of_its_int8_value():
    w = torch.randn(48, 20) * torch.logspace(-3, 1, 48)[:, None]  # rows of very different ranges
    w[5] = 0.0  # a zero row
    q, s = quantize_rows(w)
    assert q.dtype == torch.int8 and s.shape == (48,)
    assert int(q.abs().max()) == QMAX  # each nonzero row uses the whole range
    assert torch.all((w - q.float() * s[:, None]).abs() <= s[:, None] / 2 + 1e-7)
    assert torch.all(q[5] == 0) and s[5] == 1.0


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_the_kernel_equals_the_dequantised_matmul(dtype, tol):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 64, generator=g)
    q, s = quantize_rows(torch.randn(96, 64, generator=g))
    y = int8_matmul(x.to(dtype), q, s.to(dtype)).float()
    ref = x.to(dtype).double() @ (q.double() * s.to(dtype).double()[:, None]).T  # Eq. 2 in fp64
    assert y.shape == (7, 96)
    assert torch.allclose(y.double(), ref, rtol=tol, atol=tol * float(ref.abs().max()))
    # the dequantising path every other device takes gives the same values
    fallback = int8_matmul(x.double(), q, s.double())
    assert torch.allclose(fallback, x.double() @ (q.double() * s.double()[:, None]).T)


def test_the_layer_stays_within_the_rounding_bound_of_the_float_one():
    linear = nn.Linear(40, 30)
    layer = Int8Linear.from_linear(linear)
    x = torch.randn(2, 5, 40)
    y, ref = layer(x), linear(x)
    assert y.shape == (2, 5, 30)
    # |Δy_j| = |Σ_i x_i ΔW_ji| ≤ Σ_i |x_i| · s_j / 2
    bound = x.abs().sum(-1, keepdim=True) * layer.scale / 2
    assert torch.all((y - ref).abs() <= bound + 1e-5)
    assert torch.allclose(y, x @ layer.dequantized().T + linear.bias, atol=1e-5)


def test_bf16_activations_give_bf16_outputs_and_fp32_inputs_are_cast():
    layer = Int8Linear.from_linear(nn.Linear(16, 8), torch.bfloat16)
    assert layer(torch.randn(3, 16, dtype=torch.bfloat16)).dtype == torch.bfloat16
    assert layer(torch.randn(3, 16)).dtype == torch.bfloat16


def test_every_linear_is_replaced_and_a_tied_one_gets_its_own_copy():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 8)
            self.block = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8))
            self.head = nn.Linear(8, 10, bias=False)
            self.head.weight = self.embed.weight  # tied

    net = Net()
    assert int8_linears(net) == 3
    assert not any(type(m) is nn.Linear for m in net.modules())
    assert net.embed.weight.dtype == torch.float32  # the embedding keeps its float weights
    q, _ = quantize_rows(net.embed.weight)
    assert torch.equal(net.head.weight, q)


def test_bad_weights_are_refused():
    with pytest.raises(ValueError, match="int8 weight"):
        Int8Linear(torch.zeros(3, 4), torch.ones(3))
    with pytest.raises(ValueError, match="int8 weight"):
        Int8Linear(torch.zeros(3, 4, dtype=torch.int8), torch.ones(4))


@pytest.mark.parametrize("width", [8, 24, 40])
def test_bf16_widths_the_kernel_does_not_take_are_computed_all_the_same(width):
    x = torch.randn(5, width, dtype=torch.bfloat16)
    q, s = quantize_rows(torch.randn(12, width))
    y = int8_matmul(x, q, s.bfloat16())
    ref = x.float() @ (q.float() * s.bfloat16().float()[:, None]).T
    assert torch.allclose(y.float(), ref, rtol=2e-2, atol=2e-2 * float(ref.abs().max()))


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("out_features", [64, 37])  # 37: rows padded to whole tiles of 16
def test_int4_groups_are_within_half_a_step_and_the_kernel_equals_the_dequantised_matmul(
    dtype, tol, out_features
):
    linear = nn.Linear(96, out_features)
    q, scales = quantize_groups(linear.weight)
    s = scales.transpose(0, 1)  # (out, groups, 2)
    w = linear.weight.detach().view(out_features, 3, 32)
    assert torch.all(
        (w - ((q.view(out_features, 3, 32) - 8) * s[..., :1] + s[..., 1:])).abs() <= s[..., :1] / 2 + 1e-6
    )
    layer = Int4Linear.from_linear(linear, dtype)
    x = torch.randn(2, 5, 96).to(dtype)
    y = layer(x)
    ref = x.double() @ layer.dequantized().double().T + linear.bias.detach().to(dtype).double()
    assert y.shape == (2, 5, out_features) and y.dtype == dtype
    assert torch.allclose(y.double(), ref, rtol=tol, atol=tol * float(ref.abs().max()))


def test_int4_twins_keep_int8_where_the_inputs_make_no_whole_groups():
    net = nn.Sequential(nn.Linear(64, 48), nn.Linear(48, 10))
    assert int8_linears(net, bits=4) == 2
    assert isinstance(net[0], Int4Linear) and isinstance(net[1], Int8Linear)
