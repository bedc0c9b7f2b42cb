"""Int8 Linear layers (seq2bert/nn/weight_only.py) against the equations: the rounding bounds of Eqs. 1 and 4,
the CPU kernels against the dequantised matmuls of Eqs. 2 and 5, and the layer against the float one it
replaces within the bounds those give."""

import pytest
import torch
from torch import nn

from seq2bert.nn.weight_only import (
    QMAX,
    Int4Linear,
    Int8Linear,
    int8_int8_matmul,
    int8_linears,
    int8_matmul,
    quantize_groups,
    quantize_rows,
    quantize_tokens,
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
    layer = Int8Linear.from_linear(linear, int8_activations=False)
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


# --- int8 activations too (Eqs. 4–5)


def test_each_activation_is_within_half_a_step_of_its_int8_value():
    x = torch.randn(6, 50, generator=torch.Generator().manual_seed(0)) * torch.logspace(-2, 2, 6)[:, None]
    x[3] = 0.0  # a zero row stays zero
    x_q, r = quantize_tokens(x.bfloat16())
    assert x_q.dtype == torch.int8 and r.shape == (6, 1) and r.dtype == torch.float32
    assert torch.all(x_q.abs().amax(1)[[0, 1, 2, 4, 5]] == QMAX) and torch.all(x_q[3] == 0)
    # within half a step, up to fp32's rounding of x / r
    assert torch.all((x.bfloat16().float() - x_q.float() * r).abs() <= r * (0.5 + 1e-5))


@pytest.mark.parametrize("m", [1, 8, 33])
def test_the_int8_int8_kernel_equals_the_matmul_of_the_dequantised_operands(m):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(m, 96, generator=g)
    q, s = quantize_rows(torch.randn(70, 96, generator=g))
    y = int8_int8_matmul(x, q, s)
    x_q, r = quantize_tokens(x)
    ref = (x_q.double() * r.double()) @ (q.double() * s.double()[:, None]).T  # Eq. 5 in fp64
    assert y.dtype == torch.float32 and y.shape == (m, 70)
    assert torch.allclose(y.double(), ref, rtol=1e-6, atol=1e-6 * float(ref.abs().max()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_layer_with_int8_activations_stays_within_both_rounding_bounds(dtype):
    linear = nn.Linear(64, 24)
    layer = Int8Linear.from_linear(linear, dtype, int8_activations=True)
    assert layer.int8_activations and "activations" in repr(layer)
    x = torch.randn(3, 4, 64).to(dtype).float()
    y = layer(x.to(dtype))
    assert y.dtype == dtype and y.shape == (3, 4, 24)
    # x̂ŵ − xw = (x̂ − x)ŵ + x(ŵ − w): |Δy_j| ≤ r/2 Σ_i |ŵ_ji| + s_j/2 Σ_i |x_i|, plus the output's rounding
    r = x.abs().amax(-1, keepdim=True) / QMAX
    w = layer.dequantized()
    bound = r / 2 * w.abs().sum(1) + x.abs().sum(-1, keepdim=True) * layer.scale / 2
    ref = linear(x).detach()
    slack = 1e-5 if dtype == torch.float32 else 1e-2 * float(ref.abs().max())
    assert torch.all((y.float() - ref).abs() <= bound + slack)


def test_the_cpu_decides_whether_activations_are_int8(monkeypatch):
    import seq2bert.nn.weight_only as weight_only

    for native in (False, True):
        monkeypatch.setattr(weight_only, "native_int8", lambda device, n=native: n)
        net = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 4))
        int8_linears(net)
        assert [m.int8_activations for m in net] == [native, native]
    net = nn.Sequential(nn.Linear(8, 8))
    int8_linears(net, int8_activations=False)  # asked: weight-only on any CPU
    assert not net[0].int8_activations
