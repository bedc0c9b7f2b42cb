"""The models a server holds: each checkpoint directory, the pipelines it serves (from the family and the
architecture its config.json names), loaded once at start, and the call of each pipeline on a batch of
requests' inputs.

    encoder         embed, attention; + fill-mask (a masked-LM head: …ForMaskedLM, …ForPreTraining, an
                    ELECTRA run's generator/), classify (…ForSequenceClassification), tag
                    (…ForTokenClassification), qa (…ForQuestionAnswering)
    decoder         generate (a language model), classify (GPT-1's classifier)
    encoder-decoder translate (with the alignment of each translation when asked), attention

A model without attention weights (a Seq2Seq's fixed vector, a BiLSTM) serves no attention, nor a
translation's alignment: its listing leaves them out, and a request for them is answered 422, never 500.
An attention answer shows at most ``max_tokens`` tokens a side and is refused (AnswerTooLarge, 413) when
its JSON would pass the server's budget, measured before any weight is written out. JSON has no NaN: a
checkpoint with weights that are not finite is refused at load, and an output that is not finite for one
input is that request's UserError (422).
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from seq2bert.decoding.generation import Decoding
from seq2bert.errors import CheckpointError, UserError
from seq2bert.io import read_json
from seq2bert.models import registry
from seq2bert.models.alignment import align
from seq2bert.pipelines import answer, classify, embed, fill_mask, generate, loading, tag, translate
from seq2bert.pipelines.generation import drafted
from seq2bert.pipelines.loading import ENCODER
from seq2bert.viz.inspect import DECIMALS, alignment_maps, attends, attention_maps, rounded, select

PIPELINES = ("translate", "classify", "tag", "qa", "fill-mask", "embed", "generate", "attention")
# the head each encoder pipeline loads (pipelines/loading.py keeps one model per directory and head)
HEADS = {
    "embed": loading.ENCODER,
    "attention": loading.ENCODER,
    "fill-mask": "masked_lm",
    "classify": ("sequence", "similarity"),
    "tag": "tokens",
    "qa": "qa",
    "generate": "causal_lm",
}


def served_pipelines(directory: Path) -> tuple[Any, str, list[str]]:
    """(family, the architecture config.json names, the pipelines the directory serves)."""
    family = registry.family_at(directory)
    config = read_json(directory / "config.json")
    architecture = (config.get("architectures") or [None])[0]
    if family.kind == "encoder-decoder":
        return family, architecture, ["translate", "attention"]
    named = {head for head, arch in family.heads.items() if arch == architecture}
    pipelines = []
    if named & {"sequence", "similarity"}:
        pipelines.append("classify")
    if family.kind == "decoder" or config.get("is_decoder"):
        if named & {"causal_lm", "pretraining"}:
            pipelines.append("generate")
        if "tokens" in named:
            pipelines.append("tag")
        return family, architecture, pipelines
    mlm = named & {"masked_lm"} or (named & {"pretraining"} and family.pretraining_objective == "masked_lm")
    generator = family.head_dirs.get("masked_lm")
    if mlm or (generator and (directory / generator / "config.json").is_file()):
        pipelines.append("fill-mask")
    pipelines += [p for p, head in (("tag", "tokens"), ("qa", "qa")) if head in named]
    return family, architecture, [*pipelines, "embed", "attention"]


@dataclass
class ServedModel:
    """One checkpoint directory a server answers for, under ``name``."""

    name: str
    directory: Path
    family: str = ""
    architecture: str = ""
    pipelines: list[str] = field(default_factory=list)
    pair: tuple | None = None  # an encoder-decoder's (model, tokenizer), loaded once
    attends: bool = True  # whether the model has attention weights to show (a Seq2Seq, a BiLSTM: no)
    int8: bool = False  # translate and generate decode with the model's int8 twin (models/weight_only.py)
    draft: str | None = None  # translate and generate decode speculatively with this draft directory
    compile: bool = False  # translate and generate decode with the decoding stack under torch.compile

    @classmethod
    def load(cls, name: str, path: str | Path, *, int8: bool = False, compile: bool = False) -> ServedModel:
        """The model of ``path`` (a checkpoint or run directory) with every pipeline it serves loaded;
        ``int8``: its decoding pipelines run its int8 twin (made here, once); ``compile``: they run its
        decoding stack under torch.compile (compiled by the first requests)."""
        directory = registry.checkpoint_dir(path)
        family, architecture, pipelines = served_pipelines(directory)
        if not pipelines:
            raise CheckpointError(
                f"{path}: a {architecture} serves none of the pipelines ({', '.join(PIPELINES)})"
            )
        served = cls(name, directory, family.model_type, architecture or "", pipelines, int8=int8)
        served.compile = compile
        if family.kind == "encoder-decoder":
            served.pair = registry.load(directory)
            served.attends = has_attention(*served.pair)
        else:  # a checkpoint of NaN or infinite weights is refused here (models/pretrained.py finite)
            for pipeline in pipelines:  # into pipelines/loading.py's keeping, where every call finds it
                net, _, _ = loading._load(str(directory), HEADS[pipeline])
                if pipeline == "attention":
                    served.attends = attends(loading._base(net))
        if not served.attends:
            served.pipelines = [p for p in pipelines if p != "attention"]
        # the twins made now, not by the first request; a model with no stack to compile is refused now
        if (int8 or compile) and "translate" in served.pipelines:
            with served.decoder(compile=compile):
                pass
        if compile and "generate" in served.pipelines:
            loading.compiled(loading._load(str(directory), HEADS["generate"])[0])
        return served

    def drafted_by(self, draft: str) -> None:
        """Decode speculatively with the draft model of directory ``draft`` (loaded now, in the precision
        this model decodes in); a model that neither translates nor generates refuses."""
        if not {"translate", "generate"} & set(self.pipelines):
            raise UserError(f"--draft: {self.name} neither translates nor generates")
        self.draft = str(registry.checkpoint_dir(draft))
        head = ENCODER if "translate" in self.pipelines else "causal_lm"
        with drafted(self.draft, head, "auto", self.int8):
            pass

    def describe(self, show_paths: bool = False) -> dict:
        """The listing of GET /v1/models: the directory relative to the working directory, or its last two
        parts, unless ``show_paths`` (the absolute path)."""
        return {
            "name": self.name,
            "directory": str(self.directory.resolve()) if show_paths else shown(self.directory),
            "model_type": self.family,
            "architecture": self.architecture,
            "pipelines": self.pipelines,
        }

    def run(self, pipeline: str, items: list, options: tuple) -> list:
        """The outputs of ``pipeline`` for ``items`` (the inputs of one or several requests, in order) with the
        requests' shared ``options`` (a sorted tuple of (name, value)); one output per item. An output with a
        NaN or an infinity (no JSON number) is its request's UserError instead."""
        out = self.outputs(pipeline, items, dict(options))
        if pipeline == "attention":  # its weights were checked as tensors
            return out
        bad = UserError(f"{self.name}: its output for this input is not finite (NaN or infinity)")
        return [o if isinstance(o, Exception) or finite(o) else bad for o in out]

    def outputs(self, pipeline: str, items: list, kw: dict) -> list:
        model = str(self.directory)
        if pipeline == "classify":
            texts = [x if isinstance(x, str) else tuple(x) for x in items]
            return classify(texts, model, top_k=kw["top_k"], batch_size=max(len(texts), 1))
        if pipeline == "embed":
            vectors = embed(items, model, normalize=kw["normalize"], batch_size=32)
            return vectors.tolist()
        if pipeline == "translate":
            return self.translations(items, kw)
        if pipeline == "tag":
            return each(lambda text: tag(text, model, aggregate=kw["aggregate"]), items)
        if pipeline == "fill-mask":
            return each(lambda text: fill_mask(text, model, top_k=kw["top_k"]), items)
        if pipeline == "qa":
            return each(lambda x: answer(*x, model, max_answer_length=kw["max_answer_length"]), items)
        if pipeline == "generate":
            settings = {k: v for k, v in kw.items() if v is not None}
            return each(
                lambda prompt: generate(
                    prompt, model, int8=self.int8, draft=self.draft, compile=self.compile, **settings
                ),
                items,
            )
        if pipeline == "attention":
            return each(lambda x: self.attention(*x, kw), items)
        raise UserError(f"{pipeline}: not a pipeline ({', '.join(PIPELINES)})")

    def translations(self, texts: list[str], kw: dict) -> list[dict]:
        settings = {k: v for k, v in kw.items() if k != "alignment"}
        decoding = Decoding.of(**settings)
        if not kw["alignment"]:
            with self.decoder(compile=self.compile) as (model, tokenizer, draft):
                found = translate(
                    model, texts, tokenizer=tokenizer, decoding=decoding, bf16=False, draft=draft
                )
            return [{"translation": t} for t in found]
        with self.decoder() as (model, tokenizer, draft):
            out = []
            for text in texts:
                a = align(model, text, tokenizer=tokenizer, decoding=decoding)
                out.append(
                    {
                        "translation": a.translation,
                        "source_tokens": a.source_tokens,
                        "target_tokens": a.target_tokens,
                        "weights": rounded(a.weights, 4),
                    }
                )
        return out

    @contextlib.contextmanager
    def decoder(self, compile: bool = False):
        """(model, tokenizer) of an encoder-decoder as ``seq2bert.translate`` runs a directory: its bf16-weights
        copy where bf16 is native, made once (a recurrent model: under autocast), else the fp32 model — one
        precision for a translation with its alignment or without, and for its attention maps; and the draft
        model (None: none) in that precision. ``compile``: its decoder under torch.compile (translations
        without alignments)."""
        model, tokenizer = self.pair
        with (
            loading.inference_precision(model, "auto", kept=True, int8=self.int8, compile=compile) as net,
            drafted(self.draft, ENCODER, "auto", self.int8) as small,
        ):
            yield net, tokenizer, small

    def attention(self, text: str, pair: str | None, kw: dict) -> dict:
        """Every layer's and head's weights (or ``kw["layer"]``'s) over the first ``kw["max_tokens"]`` tokens:
        {"kinds": {kind: {"query_tokens", "key_tokens", "layers": (layer, head, T_q, T_k) nested lists}}};
        AnswerTooLarge when its JSON would pass ``kw["budget"]`` bytes."""
        max_tokens = kw["max_tokens"]
        if self.pair is not None:
            if pair is not None:
                raise UserError("pair: a translation model reads one text")
            with self.decoder() as (model, tokenizer, _):
                a = align(
                    model, text, tokenizer=tokenizer, max_source_length=max_tokens, setting="max_tokens"
                )
            maps = alignment_maps(a, max_tokens)
        else:
            maps = attention_maps(str(self.directory), text, pair=pair, max_tokens=max_tokens)
        layers, first = maps.layers, {k: 0 for k in maps.layers}
        if kw["layer"] is not None:
            layers = {k: [select(maps, k, kw["layer"])] for k in maps.layers}
            first = {k: kw["layer"] % len(maps.layers[k]) for k in maps.layers}
        if not all(torch.isfinite(w).all() for ws in layers.values() for w in ws):
            raise UserError(
                f"{self.name}: its attention weights for this text are not finite (NaN or infinity)"
            )
        size = answer_bytes(layers, maps.tokens)
        if size > kw["budget"]:
            raise AnswerTooLarge(too_large(maps, size, kw["budget"], kw["layer"]))
        return {
            "kinds": {
                k: {
                    "query_tokens": list(q),
                    "key_tokens": list(kk),
                    "first_layer": first[k],
                    "layers": [rounded(w) for w in layers[k]],
                }
                for k, (q, kk) in maps.tokens.items()
            }
        }


class AnswerTooLarge(UserError):
    """An answer past the server's budget (--max-answer-bytes): answered 413, saying what to ask instead."""


def answer_bytes(layers: dict[str, list[torch.Tensor]], tokens: dict[str, tuple[list, list]]) -> int:
    """At most the bytes of an attention answer's JSON: each weight rounded to DECIMALS is at most
    "0.123," (DECIMALS + 3 characters), each row "[…]," 3 more, and the tokens as JSON strings."""
    weights = sum(w.numel() for ws in layers.values() for w in ws)
    rows = sum(w.numel() // max(w.shape[-1], 1) + w.shape[0] + 1 for ws in layers.values() for w in ws)
    words = sum(len(json.dumps(t)) + 1 for q, k in tokens.values() for t in (*q, *k))
    return weights * (DECIMALS + 3) + rows * 3 + words + 100 * len(layers)


def too_large(maps, size: int, budget: int, layer: int | None) -> str:
    """What AnswerTooLarge says: the size, the budget, and what to ask for instead."""
    longest = max(len(q) for q, _ in maps.tokens.values())
    fits = max(1, int(0.9 * longest * (budget / size) ** 0.5))  # the weights grow with the tokens' square
    layers = max(len(v) for v in maps.layers.values())
    one = f" or one layer (layer: 0 … {layers - 1})" if layer is None and layers > 1 else ""
    return (
        f"the attention of {longest} tokens would be an answer of about {size:,} bytes, past the server's "
        f"{budget:,} (--max-answer-bytes): ask for fewer tokens (max_tokens: {fits}){one}"
    )


def shown(directory: Path) -> str:
    """A directory as /v1/models shows it: relative to the working directory, else its last two parts."""
    path = Path(directory).resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(Path("…", *path.parts[-2:]))


def finite(x) -> bool:
    """Whether every number in a pipeline's output (nested lists, dicts, tuples) is finite: JSON has no NaN."""
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(finite(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(finite(v) for v in x)
    return True


def has_attention(model, tokenizer) -> bool:
    """Whether an encoder-decoder gives attention weights (a Seq2Seq's fixed vector: none), from one
    step over one token."""
    one = torch.tensor([[tokenizer.bos_token_id]], device=next(model.parameters()).device)
    with torch.no_grad():
        return model(one, torch.ones_like(one), one, output_attentions=True).attentions is not None


def each(call, items: list) -> list:
    """``call`` of each item, one at a time; an item the pipeline refuses (a UserError: a fill-mask text
    without [MASK], …) gives its exception, the answer of its request alone."""
    out = []
    for item in items:
        try:
            out.append(call(item))
        except UserError as e:
            out.append(e)
    return out
