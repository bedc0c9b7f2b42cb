"""Weight-only int8 Linear layers: decoding reads every weight once per step, so it runs at the speed memory
hands the weights over, and int8 weights are a quarter of fp32's bytes (half of bf16's).

Each output row j of a weight W ∈ R^{out×in} is stored as int8 with one scale (per-channel, symmetric, zero
point 0):

    s_j = max_i |W_ji| / 127,   W_q,ji = round(W_ji / s_j) ∈ {−127 … 127},   W ≈ s ⊙ W_q          (1)

and the layer computes, with the activations x in their own precision (bf16 or fp32; never quantised),

    y = x W_qᵀ ⊙ s + b                                                                           (2)

where the scale is applied to the output, after the integer weights were widened inside the matmul: the
kernel (torch's ``aten._weight_int8pack_mm`` on a CPU) never writes the widened weights to memory. On
another device, or where that kernel refuses the shapes, (2) is computed as x (s ⊙ W_q)ᵀ + b from a
dequantised copy made for the call (correct everywhere; the speed is the CPU kernel's).

Where the CPU multiplies int8 by int8 natively (VNNI, AMX-INT8), torch's weight-only kernel is the slower
of the two: it widens every weight before its float multiply-adds. There each row of the activations (each
token) is quantised too, symmetrically with its own scale computed at the call (dynamic, per token),

    r = max_i |x_i| / 127,   x_q,i = round(x_i / r),   x ≈ r x_q                                   (4)

and the layer computes the product of the integers exactly (int32 sums: ``torch._int_mm``), scaled after:

    y = (x_q W_qᵀ) ⊙ (r sᵀ) + b                                                                 (5)

(LLM.int8's vector-wise quantisation without its outlier split; SmoothQuant's W8A8 per-token dynamic
scheme without its smoothing). ``int8_activations`` chooses; by default the CPU does (``native_int8``).

The error of (1) is at most s_j / 2 per weight, that of (4) r / 2 per activation; tests/nn/test_weight_only.py
checks (2) and (5) against the fp64 matmul of the dequantised operands, and the layer against the float one it
replaces within the bounds these give.
"""

from __future__ import annotations

import torch
from torch import nn

from seq2bert.precision import native_int8

QMAX = 127  # symmetric: −127 … 127 (−128 is never produced, so negation is exact)


def quantize_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 1: weight (out, in) → int8 weights (out, in) and fp32 scales (out,); a zero row gets scale 1."""
    w = weight.detach().float()
    scale = w.abs().amax(dim=1) / QMAX  # (out,)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(w / scale[:, None]).clamp(-QMAX, QMAX).to(torch.int8)  # (out, in)
    return q, scale


# torch's CPU kernel reads bf16 activations 16 at a time along the inner dimension and crashes (torch 2.13,
# AVX-512) on any other width: those layers take the dequantising path
BF16_WIDTH = 16


def int8_matmul(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Eq. 2 without the bias: x (M, in), int8 weight (out, in), scale (out,) of x's dtype → (M, out)."""
    if _kernel_takes(x):
        return torch.ops.aten._weight_int8pack_mm(x.contiguous(), weight, scale)
    return x @ (weight.to(x.dtype) * scale[:, None]).T  # dequantised for the call


def quantize_tokens(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 4: activations x (M, in) → int8 (M, in) and fp32 scales (M, 1), one per row; a zero row gets a
    scale that leaves it zero."""
    r = x.abs().amax(dim=-1, keepdim=True).float().clamp_(min=1e-30).div_(QMAX)  # (M, 1)
    return (x / r).round_().to(torch.int8), r


def int8_int8_matmul(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Eq. 5 without the bias: x (M, in) float, int8 weight (out, in), fp32 scale (out,) → (M, out) in fp32."""
    x_q, r = quantize_tokens(x)
    if x.device.type == "cpu":
        acc = torch._int_mm(x_q, weight.t())  # (M, out) int32: exact
    else:  # the same sums in fp32 (exact while they stay below 2^24), on any device
        acc = x_q.float() @ weight.float().t()
    return acc * (r * scale)


def _kernel_takes(x: torch.Tensor) -> bool:
    """Whether torch's CPU kernel computes Eq. 2 for activations x (M, in)."""
    if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return False
    return x.dtype != torch.bfloat16 or x.size(-1) % BF16_WIDTH == 0


class Int8Linear(nn.Module):
    """A Linear layer whose weight is int8 with a scale per output row: x (…, in) → (…, out) in the layer's
    activation dtype — weight-only (Eqs. 1–2), or with each token's activations int8 too (Eqs. 4–5,
    ``int8_activations``). Inference only: the weights are buffers, nothing trains."""

    def __init__(
        self,
        weight: torch.Tensor,
        scale: torch.Tensor,
        bias: torch.Tensor | None = None,
        *,
        int8_activations: bool = False,
        dtype: torch.dtype | None = None,
    ):
        super().__init__()
        if weight.dtype != torch.int8 or weight.dim() != 2 or scale.shape != weight.shape[:1]:
            raise ValueError("Int8Linear: expected an int8 weight (out, in) and a scale (out,)")
        self.in_features, self.out_features = weight.size(1), weight.size(0)
        self.int8_activations = int8_activations
        self.dtype = dtype or scale.dtype  # the activations' (the inputs are cast to it, the outputs are it)
        self.register_buffer("weight", weight)
        # weight-only: the scale in the activations' dtype (the kernel's); int8 activations: fp32 (Eq. 5)
        self.register_buffer("scale", scale.float() if int8_activations else scale.to(self.dtype))
        self.register_buffer("bias", bias)

    @classmethod
    def from_linear(
        cls, linear: nn.Linear, dtype: torch.dtype | None = None, int8_activations: bool | None = None
    ) -> Int8Linear:
        """The int8 twin of ``linear`` (its weight quantised by Eq. 1); bias and activations in ``dtype``
        (default: the linear's); the activations int8 too (Eq. 4) where ``int8_activations`` says, by default
        where the CPU multiplies int8 natively."""
        dtype = dtype or linear.weight.dtype
        if int8_activations is None:
            int8_activations = native_int8(linear.weight.device)
        q, scale = quantize_rows(linear.weight)
        bias = None if linear.bias is None else linear.bias.detach().to(dtype)
        return cls(q, scale, bias, int8_activations=int8_activations, dtype=dtype)

    def dequantized(self) -> torch.Tensor:
        """s ⊙ W_q (out, in) in fp32: the weight this layer multiplies by."""
        return self.weight.float() * self.scale.float()[:, None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != self.dtype:  # e.g. fp32 activations into a bf16 model's layer
            x = x.to(self.dtype)
        flat = x.reshape(-1, self.in_features)
        if self.int8_activations:
            y = int8_int8_matmul(flat, self.weight, self.scale).to(self.dtype)  # (M, out)
        else:
            y = int8_matmul(flat, self.weight, self.scale)  # (M, out)
        y = y.view(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        what = "int8 weights and activations" if self.int8_activations else "int8 weights"
        return f"in_features={self.in_features}, out_features={self.out_features}, {what}"


def int8_linears(
    module: nn.Module,
    dtype: torch.dtype | None = None,
    bits: int = 8,
    int8_activations: bool | None = None,
) -> int:
    """Every nn.Linear inside ``module`` replaced by its Int8Linear twin (``bits`` 4: its Int4Linear one,
    weight-only), in place; a Linear whose weight is tied to an embedding gets its own copy, the embedding
    stays as it was → how many were replaced. ``int8_activations``: as Int8Linear.from_linear."""
    count = 0
    for name, child in list(module.named_children()):
        if type(child) is nn.Linear:
            if bits == 4 and child.in_features % GROUP == 0:  # int4 where the inputs make whole groups
                twin = Int4Linear.from_linear(child, dtype)
            else:
                twin = Int8Linear.from_linear(child, dtype, int8_activations)
            setattr(module, name, twin)
            count += 1
        else:
            count += int8_linears(child, dtype, bits, int8_activations)
    return count


# --- int4: a quarter of int8's bytes again, at a coarser grid; groups of GROUP weights along each row
#
#     w ≈ (q − 8) · s_g + z_g,   q ∈ {0 … 15},   s_g = (max_g − min_g) / 15,   z_g = min_g + 8 · s_g        (3)
#
# (asymmetric: each group of GROUP consecutive inputs of a row has its own scale and offset), multiplied by
# torch's ``aten._weight_int4pack_mm_for_cpu``, which wants the output rows in multiples of 16: a layer whose
# row count is not (GPT-2's 50,257-token output layer) is padded with zero rows, cut from the result.
GROUP = 32
ROWS = 16


def quantize_groups(weight: torch.Tensor, group: int = GROUP) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 3: weight (out, in) → 4-bit codes (out, in) as int32 and (in / group, out, 2) scales and offsets."""
    out_features, in_features = weight.shape
    if in_features % group:
        raise ValueError(f"int4: {in_features} inputs are not whole groups of {group}")
    w = weight.detach().float().view(out_features, in_features // group, group)
    low, high = w.amin(-1), w.amax(-1)  # (out, in / group)
    scale = ((high - low) / 15).clamp(min=1e-8)
    q = torch.round((w - low[..., None]) / scale[..., None]).clamp(0, 15).to(torch.int32)
    offset = low + 8 * scale
    return q.view(out_features, in_features), torch.stack([scale, offset], -1).transpose(0, 1).contiguous()


class Int4Linear(nn.Module):
    """A Linear layer of 4-bit weights in groups (Eq. 3): x (…, in) → (…, out) in x's dtype. Inference only."""

    def __init__(
        self, q: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None, group: int, out_features: int
    ):
        super().__init__()
        self.in_features, self.out_features, self.group = q.size(1), out_features, group
        rows = -(-q.size(0) // ROWS) * ROWS  # padded to whole tiles of 16 rows
        if rows != q.size(0):
            q = torch.cat([q, q.new_full((rows - q.size(0), q.size(1)), 8)])  # code 8 with offset 0: zero
            pad = scales.new_zeros(scales.size(0), rows - scales.size(1), 2)
            pad[..., 0] = 1.0
            scales = torch.cat([scales, pad], 1)
        self.register_buffer("codes", q.to(torch.uint8))  # (rows, in): for the fallback and for tests
        # torch's packing is a CPU operator: packed there (another device computes from the codes)
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.cpu(), 1).to(q.device)
        self.register_buffer("packed", packed)
        self.register_buffer("scales", scales)  # (in / group, rows, 2), in the activations' dtype
        self.register_buffer("bias", bias)

    @classmethod
    def from_linear(
        cls, linear: nn.Linear, dtype: torch.dtype | None = None, group: int = GROUP
    ) -> Int4Linear:
        dtype = dtype or linear.weight.dtype
        q, scales = quantize_groups(linear.weight, group)
        bias = None if linear.bias is None else linear.bias.detach().to(dtype)
        return cls(q, scales.to(dtype), bias, group, linear.out_features)

    def dequantized(self) -> torch.Tensor:
        """The weight (out, in) this layer multiplies by, in fp32 (Eq. 3)."""
        s = self.scales.float().transpose(0, 1)  # (rows, in / group, 2)
        q = self.codes.float().unflatten(1, (-1, self.group))  # (rows, in / group, group)
        w = (q - 8) * s[..., :1] + s[..., 1:]
        return w.flatten(1)[: self.out_features]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != self.scales.dtype:
            x = x.to(self.scales.dtype)
        flat = x.reshape(-1, self.in_features)
        if x.device.type == "cpu":
            y = torch.ops.aten._weight_int4pack_mm_for_cpu(
                flat.contiguous(), self.packed, self.group, self.scales
            )
        else:  # dequantised for the call
            y = flat @ self.dequantized().to(x.dtype).T
        y = y[:, : self.out_features].view(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int4 weights in groups of {self.group}"
