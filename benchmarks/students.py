"""Inference throughput of a teacher and its students: sentences/s classifying SST-2 dev-shaped sentences.

For each model directory (the teacher first) and each way of running it, in one run on the same batches:

    fp32        seq2bert's classifier, batches of sentences sorted by length and padded to their longest
    bf16        the same under bf16 autocast (only where the CPU computes bf16 natively)
    int8        the same with its Linear layers dynamically quantised (models/quantized.py; fp32 activations)
    onnxruntime an ONNX Runtime session (CPUExecutionProvider, fp32) of the model exported by `seq2bert export`,
                fed the same batches (skipped, saying so, without the extra onnx)

Each way is timed once a round, in turn, for ``--repeats`` rounds (the median is its figure), so that a
drift in the machine's speed falls on every model alike. Before timing, each way's predicted labels are compared with fp32's on every sentence (agreement printed: int8
and bf16 may flip a few near-ties; ONNX Runtime must agree). The table gives sentences/s, and the ratio to the
teacher's fp32 figure measured in the same run; parameters are the model's.

    python benchmarks/students.py runs/minilm-sst2-bf16-lr3e-5/best runs/distil-sst2-l3/best runs/distil-sst2-tiny4/best
    python benchmarks/students.py TEACHER STUDENT --sentences ../shared/data/sst2/train.tsv --limit 2048

The sentences: the first ``--limit`` of ``--sentences`` (a GLUE TSV with a ``sentence`` column; default the
SST-2 training file in ../shared/data, as issue 22's embedding benchmark reads them).
"""

from __future__ import annotations

import argparse
import csv
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from common import seconds
from tqdm import tqdm

from seq2bert.models import quantized, registry
from seq2bert.precision import native_bf16

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2" / "train.tsv"


def read_sentences(path: Path, limit: int) -> list[str]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [r["sentence"] for _, r in zip(range(limit), rows, strict=False)]


def batches_of(tok, sentences: list[str], batch: int, max_length: int = 128) -> list[dict[str, torch.Tensor]]:
    """The sentences sorted by length, in padded batches (the order the pipelines read them in)."""
    order = sorted(range(len(sentences)), key=lambda i: len(tok.encode(sentences[i]).ids))
    out = []
    for s in range(0, len(order), batch):
        chunk = [sentences[i] for i in order[s : s + batch]]
        enc = tok.encode_batch(chunk, max_length=max_length, truncation="longest_first", padding="longest",
                               return_tensors="pt")  # fmt: skip
        out.append({k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc})
    return out


@torch.no_grad()
def torch_labels(model, batches, bf16: bool = False) -> list[int]:
    out = []
    for b in batches:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out += model(**b).logits.argmax(-1).tolist()
    return out


def ort_labels(session, names, batches) -> list[int]:
    out = []
    for b in batches:
        out += session.run(None, {k: v.numpy() for k, v in b.items() if k in names})[0].argmax(-1).tolist()
    return out


def ways(directory: str, batches, tmp: Path) -> list[tuple[str, object]]:
    """(name, a function that labels every batch) for each way this machine can run ``directory``."""
    model, _ = registry.load(directory)
    out = [("fp32", lambda: torch_labels(model, batches))]
    if native_bf16(torch.device("cpu")):
        out.append(("bf16", lambda: torch_labels(model, batches, bf16=True)))
    int8 = quantized.quantize(registry.load(directory)[0])
    out.append(("int8", lambda: torch_labels(int8, batches)))
    try:
        import onnxruntime as ort

        from seq2bert.recipes.export import export_onnx

        path = tmp / f"{Path(directory).parent.name or 'model'}-{len(out)}.onnx"
        export_onnx(directory, path)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        out.append(("onnxruntime", lambda: ort_labels(session, names, batches)))
    except ImportError:
        print("onnxruntime: not installed (the extra onnx); its column is skipped", file=sys.stderr)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="the teacher's directory first, then the students'")
    p.add_argument("--sentences", type=Path, default=DATA)
    p.add_argument("--limit", type=int, default=2048)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=5, help="rounds; each way's figure is its median")
    args = p.parse_args()
    sentences = read_sentences(args.sentences, args.limit)
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads; {len(sentences)} sentences from {args.sentences}, batch {args.batch}, sorted by length")  # fmt: skip
    entries = []  # (directory, parameters, way, its function, labels as fp32 %)
    with tempfile.TemporaryDirectory() as tmp:
        for directory in args.models:
            model, tok = registry.load(directory)
            params = sum(p.numel() for p in model.parameters())
            batches = batches_of(tok, sentences, args.batch)
            reference = None
            for name, fn in ways(directory, batches, Path(tmp)):
                labels = fn()  # the warm-up call
                reference = labels if reference is None else reference
                agree = 100.0 * sum(a == b for a, b in zip(labels, reference, strict=True)) / len(labels)
                entries.append((directory, params, name, fn, agree))
        # rounds: each way timed once a round, so that a drift in the machine's speed falls on all alike
        times = [[] for _ in entries]
        for _ in tqdm(range(args.repeats), desc="rounds", file=sys.stderr):
            for took, entry in zip(times, entries, strict=True):
                took.append(seconds(entry[3]))
    rows = []
    teacher = len(sentences) / statistics.median(times[0])
    for (directory, params, name, _, agree), took in zip(entries, times, strict=True):
        rate = len(sentences) / statistics.median(took)
        rows.append((directory, params, name, rate, rate / teacher, agree))
    print("\n| model | parameters | run | sentences/s | × teacher fp32 | labels as fp32 % |")
    print("|---|---|---|---|---|---|")
    for directory, params, name, rate, ratio, agree in rows:
        print(f"| {directory} | {params / 1e6:.1f} M | {name} | {rate:,.0f} | {ratio:.2f}× | {agree:.2f} |")


if __name__ == "__main__":
    main()
