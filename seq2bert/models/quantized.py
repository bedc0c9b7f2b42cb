"""Dynamic int8 quantisation of a model's Linear layers (torch.ao), and int8 checkpoint directories.

Dynamic quantisation (Jacob et al. 2018's affine scheme, applied after training): each nn.Linear's weight is
stored as int8 with one scale per output row (per-channel symmetric, zero point 0),

    W ≈ s ⊙ W_q,   W_q ∈ {−128 … 127}^{out×in},  s ∈ R^{out}

and at run time each input is quantised to uint8 with a scale and zero point read off its own range, the
matmul runs in integers (fbgemm on x86, qnnpack on ARM) and the result is rescaled to float. Embeddings,
LayerNorms, convolutions and recurrent cells stay in float. Activations stay fp32: a quantised Linear takes no
bf16 input, so an int8 model runs without bf16 autocast (seq2bert.precision).

An int8 directory (``seq2bert quantize DIR --out DIR8``) is the source directory's files — config.json, the
tokenizer — with ``model.safetensors`` replaced by ``model.int8.safetensors``: for each quantised Linear
``<name>.weight_int8`` (int8, out × in), ``<name>.weight_scale`` (out,), ``<name>.bias``; every other tensor
as it was; and ``quantization.json`` saying so. Loading rebuilds the float model from config.json, quantises
its Linears the same way and fills them: the result is the model ``quantize`` returned when it was saved
(equal outputs, tested). transformers does not read these directories; the source directory stays the
interchange format.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as QuantizedLinear
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from seq2bert.config import atomic_write_text
from seq2bert.errors import CheckpointError
from seq2bert.io import WEIGHT_FILES, read_json, save_tensors, write_dir_atomically

QUANTIZATION = "quantization.json"
INT8_WEIGHTS = WEIGHT_FILES[1]
METHOD = "dynamic_int8"


def engine() -> str:
    """The quantised-kernel backend of this CPU: x86 (fbgemm) or qnnpack (ARM)."""
    supported = torch.backends.quantized.supported_engines
    for name in ("x86", "fbgemm", "qnnpack"):
        if name in supported:
            return name
    raise RuntimeError(f"no quantised kernels in this torch build (engines: {supported})")


def quantize(model: nn.Module) -> nn.Module:
    """``model`` (in place) with every nn.Linear a dynamically quantised int8 one (per-channel weights);
    evaluation mode, on the CPU (torch's quantised kernels are CPU kernels)."""
    torch.backends.quantized.engine = engine()
    model = model.cpu().eval()
    with (
        warnings.catch_warnings()
    ):  # torch 2.13 marks torch.ao.quantization deprecated (for torchao); it works
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
        return quantize_dynamic(
            model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True
        )


def is_quantized(model: nn.Module) -> bool:
    return any(isinstance(m, QuantizedLinear) for m in model.modules())


def int8_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The tensors of a quantised model, as the module docstring lays them out."""
    out: dict[str, torch.Tensor] = {}
    inside: list[str] = []
    for name, module in model.named_modules():
        if isinstance(module, QuantizedLinear):
            w, b = module._weight_bias()  # a per-channel quantised tensor and the float bias
            if w.qscheme() not in (torch.per_channel_symmetric, torch.per_channel_affine):
                raise ValueError(f"{name}: a {w.qscheme()} weight; int8 directories hold per-channel ones")
            if bool(w.q_per_channel_zero_points().ne(0).any()):
                raise ValueError(f"{name}: non-zero weight zero points (expected symmetric quantisation)")
            out[f"{name}.weight_int8"] = w.int_repr().contiguous()
            out[f"{name}.weight_scale"] = w.q_per_channel_scales().float().contiguous()
            if b is not None:
                out[f"{name}.bias"] = b.detach().contiguous()
            inside.append(name + ".")
    for key, value in model.state_dict().items():
        if isinstance(value, torch.Tensor) and not value.is_quantized and not key.startswith(tuple(inside)):
            out.setdefault(key, value.detach().clone())  # tied weights saved once per name
    return out


def load_int8_state(model: nn.Module, state: dict[str, torch.Tensor], source: str) -> None:
    """Fill a quantised skeleton (``quantize`` of the float model) with ``int8_state``'s tensors."""
    layers = {name: m for name, m in model.named_modules() if isinstance(m, QuantizedLinear)}
    inside = tuple(name + "." for name in layers)
    own = model.state_dict()
    floats = {k for k, v in own.items() if not k.startswith(inside)}
    ours = {k for k in state if not k.startswith(inside)}
    if floats != ours:
        missing, unexpected = sorted(floats - ours), sorted(ours - floats)
        raise CheckpointError(
            f"{source}: int8 weights do not fit the model (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]})"
        )
    for k in floats:  # into the state dict itself: its metadata tells the quantised layers their format
        own[k] = state[k]
    model.load_state_dict(own)  # the quantised layers' own weights are set below
    for name, module in layers.items():
        try:
            q, scale = state[f"{name}.weight_int8"], state[f"{name}.weight_scale"]
        except KeyError as e:
            raise CheckpointError(f"{source}: no {e.args[0]} (an int8 Linear of the model)") from None
        if q.shape != (module.out_features, module.in_features) or q.dtype != torch.int8:
            raise CheckpointError(
                f"{source}: {name}.weight_int8 is {q.dtype} {tuple(q.shape)}, the model's Linear "
                f"is int8 {(module.out_features, module.in_features)}"
            )
        zero = torch.zeros(q.size(0), dtype=torch.long)
        w = torch._make_per_channel_quantized_tensor(q, scale.double(), zero, 0)
        module.set_weight_bias(w, state.get(f"{name}.bias"))


def save_int8(model: nn.Module, source: Path, out: Path) -> None:
    """Write the quantised ``model`` of the directory ``source`` as an int8 directory ``out``: the source's
    other files and folders (tokenizer, ``1_Pooling/``, …) beside the int8 weights and quantization.json,
    written atomically (``io.write_dir_atomically``). The command checks ``out`` first
    (``io.check_output_dir``): this replaces it."""
    fp32 = {"model.safetensors", "pytorch_model.bin", "trainer_state.pt"}

    def write(tmp: Path) -> None:
        for f in Path(source).iterdir():
            if f.is_dir():
                shutil.copytree(f, tmp / f.name)
            elif f.is_file() and f.name not in fp32:
                shutil.copy2(f, tmp / f.name)
        save_tensors(int8_state(model), str(tmp / INT8_WEIGHTS))
        info = {
            "method": METHOD,
            "weights": "int8, per-channel symmetric",
            "modules": "Linear",
            "activations": "quantised per batch for each matmul, fp32 elsewhere",
        }
        atomic_write_text(tmp / QUANTIZATION, json.dumps(info, indent=2) + "\n")

    write_dir_atomically(Path(out), write)


def is_int8_dir(path: Path) -> bool:
    return (Path(path) / QUANTIZATION).is_file()


def load_int8(build: Any, path: Path, device: str | torch.device = "cpu") -> nn.Module:
    """The quantised model of an int8 directory; ``build()`` makes its float skeleton from config.json."""
    path = Path(path)
    if torch.device(device).type != "cpu":
        raise CheckpointError(
            f"{path}: an int8 directory runs on the CPU (torch's quantised kernels), not {device}"
        )
    info = read_json(path / QUANTIZATION)
    if info.get("method") != METHOD:
        raise CheckpointError(f"{path / QUANTIZATION}: method {info.get('method')!r}, expected {METHOD!r}")
    if not (path / INT8_WEIGHTS).is_file():
        raise CheckpointError(f"{path}: no {INT8_WEIGHTS}")
    try:
        state = load_file(str(path / INT8_WEIGHTS))
    except Exception as e:  # a truncated or foreign file
        raise CheckpointError(f"{path / INT8_WEIGHTS}: not a readable safetensors file ({e})") from None
    model = quantize(build())
    load_int8_state(model, state, str(path / INT8_WEIGHTS))
    return model
