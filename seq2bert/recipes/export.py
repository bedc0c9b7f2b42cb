"""Recipe: export a BERT-family directory to ONNX and check it against ONNX Runtime — a task model (sequence
classification or regression, token classification, span QA) or an encoder, whose export also gives the
sentence embedding its sentence-transformers modules describe (pooling, normalisation).

    seq2bert export runs/sst2/best --onnx sst2.onnx
    seq2bert export $MINILM --onnx minilm.onnx        # last_hidden_state and sentence_embedding

Inputs ``input_ids``, ``attention_mask`` (and ``token_type_ids`` where the family has segments), int64,
(batch, sequence) with both axes dynamic; outputs by the model's head: ``logits`` (batch, labels) or
(batch, sequence, labels); ``start_logits`` and ``end_logits`` (batch, sequence); an encoder's
``last_hidden_state`` (batch, sequence, hidden) and ``sentence_embedding`` (batch, hidden). torch's ONNX
exporter (torch.export, opset 18) writes the graph; the check runs ONNX Runtime on padded batches of another
shape than the traced one and compares every output with ours (max |Δ| ≤ 1e-4, else the export fails and no
file is left). onnx, onnxscript and onnxruntime are the optional extra ``onnx``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.errors import ConfigError, UserError
from seq2bert.models import quantized, registry
from seq2bert.pipelines import POOLING, sentence_modules

log = logging.getLogger(__name__)

HEADS = {
    "sequence": ("logits",),
    "similarity": ("logits",),
    "tokens": ("logits",),
    "qa": ("start_logits", "end_logits"),
    "base": ("last_hidden_state", "sentence_embedding"),
}
TOLERANCE = 1e-4


class Exported(nn.Module):
    """The model with plain tensor inputs and outputs, as ONNX holds them."""

    def __init__(self, net: nn.Module, head: str, pooling: str, normalize: bool, segments: bool):
        super().__init__()
        self.net, self.head, self.pooling, self.normalize, self.segments = (
            net,
            head,
            pooling,
            normalize,
            segments,
        )

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        extra = {"token_type_ids": token_type_ids} if self.segments else {}
        out = self.net(input_ids=input_ids, attention_mask=attention_mask, **extra)
        if self.head == "qa":
            return out.start_logits, out.end_logits
        if self.head != "base":
            return out.logits
        hidden = out.last_hidden_state  # (B, T, H)
        pooled = POOLING[self.pooling](hidden, attention_mask)  # (B, H)
        return hidden, F.normalize(pooled, dim=-1) if self.normalize else pooled


def head_of(net: nn.Module) -> str:
    family = registry.family_of(net)
    name = family.architecture_of(net)
    return next((h for h, a in family.heads.items() if a == name and h in HEADS), "")


def sample_batch(tok, vocab_size: int, segments: bool, seed: int = 0) -> dict[str, torch.Tensor]:
    """A padded batch unlike the traced one: real texts of several lengths (a pair among them) and random
    ids, 4 rows."""
    texts = [
        "A gripping, beautifully shot film.",
        "Dull.",
        ("Is it raining?", "The streets are wet and grey."),
    ]
    enc = tok.encode_batch(texts, padding="longest", return_tensors="pt")
    T = enc["input_ids"].size(1)
    g = torch.Generator().manual_seed(seed)
    ids = torch.cat([enc["input_ids"], torch.randint(5, vocab_size, (1, T), generator=g)])
    mask = torch.cat([enc["attention_mask"], torch.ones(1, T, dtype=torch.long)])
    batch = {"input_ids": ids.long(), "attention_mask": mask.long()}
    if segments:
        types = enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))
        batch["token_type_ids"] = torch.cat([types, torch.zeros(1, T, dtype=torch.long)]).long()
    return batch


def export_onnx(directory: str | Path, out: str | Path, *, check: bool = True) -> dict:
    """Write ``directory``'s model as ONNX to ``out`` (atomically) and check it with ONNX Runtime; returns
    {"onnx", "inputs", "outputs", "max_abs_diff"}."""
    try:
        import onnxruntime  # noqa: F401 (the check needs it; the exporter needs onnx and onnxscript)
        import onnxscript  # noqa: F401
    except ImportError as e:
        raise UserError(
            f"export: needs the optional extra onnx (pip install 'seq2bert[onnx]'): {e}"
        ) from None
    directory = registry.local_path(directory)  # a Hub model name: its folder in the cache
    net, tok = registry.load(directory)
    if quantized.is_quantized(net):
        raise ConfigError(
            f"{directory}: an int8 directory; export the float one (ONNX Runtime quantises its own)"
        )
    head = head_of(net)
    if not head:
        raise ConfigError(
            f"{directory}: a {type(net).__name__}; export takes a BERT-family encoder or a task "
            f"model ({', '.join(HEADS)})"
        )
    if tok is None:
        raise ConfigError(f"{directory}: no tokenizer in the directory")
    pooling, normalize = (
        sentence_modules(Path(directory)) if head == "base" else ("pooling_mode_mean_tokens", False)
    )
    segments = getattr(net.config, "type_vocab_size", 0) > 1
    model = Exported(net.float().eval(), head, pooling, normalize, segments)
    inputs = ["input_ids", "attention_mask"] + (["token_type_ids"] if segments else [])
    outputs = list(HEADS[head])
    g = torch.Generator().manual_seed(1)
    example = torch.randint(5, net.config.vocab_size, (2, 7), generator=g)
    args = (example, torch.ones_like(example)) + ((torch.zeros_like(example),) if segments else ())
    B, T = (
        torch.export.Dim("batch"),
        torch.export.Dim("sequence", max=max(net.config.max_position_embeddings, 8)),
    )
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        torch.onnx.export(
            model,
            args,
            str(tmp),
            dynamo=True,
            input_names=inputs,
            output_names=outputs,
            dynamic_shapes={k: {0: B, 1: T} for k in inputs},
            external_data=False,
            verbose=False,
            optimize=True,
        )
        result = {"onnx": str(out), "inputs": inputs, "outputs": outputs}
        if check:
            result["max_abs_diff"] = check_onnx(
                tmp, model, sample_batch(tok, net.config.vocab_size, segments), outputs
            )
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return result


@torch.no_grad()
def check_onnx(path: Path, model: nn.Module, batch: dict[str, torch.Tensor], outputs: list[str]) -> float:
    """The largest |ONNX Runtime − torch| over every output on ``batch`` (real tokens only for per-token
    outputs); an error above TOLERANCE."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = session.run(outputs, {k: v.numpy() for k, v in batch.items()})
    ours = model(**batch)
    ours = ours if isinstance(ours, tuple) else (ours,)
    mask = batch["attention_mask"].bool().numpy()
    worst = 0.0
    for name, a, b in zip(outputs, theirs, ours, strict=True):
        b = b.float().numpy()
        diff = np.abs(a - b)
        if diff.ndim >= 2 and diff.shape[:2] == mask.shape:  # per token: padding's values are no one's
            diff = diff[mask]
        worst = max(worst, float(diff.max()))
        if not worst <= TOLERANCE:
            raise UserError(
                f"export: ONNX Runtime's {name} differs from the model's by {worst:.2e} (> {TOLERANCE})"
            )
    return worst
