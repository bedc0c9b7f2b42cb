"""The models a server holds: each checkpoint directory, the pipelines it serves (from the family and the
architecture its config.json names), loaded once at start, and the call of each pipeline on a batch of
requests' inputs.

    encoder         embed, attention; + fill-mask (a masked-LM head: …ForMaskedLM, …ForPreTraining, an
                    ELECTRA run's generator/), classify (…ForSequenceClassification), tag
                    (…ForTokenClassification), qa (…ForQuestionAnswering)
    decoder         generate (a language model), classify (GPT-1's classifier)
    encoder-decoder translate (with the alignment of each translation when asked), attention
"""

from __future__ import annotations

import contextlib
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
from seq2bert.viz.inspect import attention_maps

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

    @classmethod
    def load(cls, name: str, path: str | Path) -> ServedModel:
        """The model of ``path`` (a checkpoint or run directory) with every pipeline it serves loaded."""
        directory = registry.checkpoint_dir(path)
        family, architecture, pipelines = served_pipelines(directory)
        if not pipelines:
            raise CheckpointError(
                f"{path}: a {architecture} serves none of the pipelines ({', '.join(PIPELINES)})"
            )
        served = cls(name, directory, family.model_type, architecture or "", pipelines)
        if family.kind == "encoder-decoder":
            served.pair = registry.load(directory)
        else:
            for pipeline in pipelines:  # into pipelines/loading.py's keeping, where every call finds it
                loading._load(str(directory), HEADS[pipeline])
        return served

    def describe(self) -> dict:
        return {
            "name": self.name,
            "directory": str(self.directory),
            "model_type": self.family,
            "architecture": self.architecture,
            "pipelines": self.pipelines,
        }

    def run(self, pipeline: str, items: list, options: tuple) -> list:
        """The outputs of ``pipeline`` for ``items`` (the inputs of one or several requests, in order) with the
        requests' shared ``options`` (a sorted tuple of (name, value)); one output per item."""
        kw = dict(options)
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
            return each(lambda prompt: generate(prompt, model, **settings), items)
        if pipeline == "attention":
            return each(lambda x: self.attention(*x), items)
        raise UserError(f"{pipeline}: not a pipeline ({', '.join(PIPELINES)})")

    def translations(self, texts: list[str], kw: dict) -> list[dict]:
        settings = {k: v for k, v in kw.items() if k != "alignment"}
        decoding = Decoding.of(**settings)
        with self.decoder() as (model, tokenizer):
            if not kw["alignment"]:
                found = translate(model, texts, tokenizer=tokenizer, decoding=decoding, bf16=False)
                return [{"translation": t} for t in found]
            out = []
            for text in texts:
                a = align(model, text, tokenizer=tokenizer, decoding=decoding)
                out.append(
                    {
                        "translation": a.translation,
                        "source_tokens": a.source_tokens,
                        "target_tokens": a.target_tokens,
                        "weights": rounded(a.weights),
                    }
                )
        return out

    @contextlib.contextmanager
    def decoder(self):
        """(model, tokenizer) of an encoder-decoder as ``seq2bert.translate`` runs a directory: its bf16-weights
        copy where bf16 is native, made once (a recurrent model: under autocast), else the fp32 model — one
        precision for a translation with its alignment or without, and for its attention maps."""
        model, tokenizer = self.pair
        with loading.inference_precision(model, "auto", kept=True) as net:
            yield net, tokenizer

    def attention(self, text: str, pair: str | None) -> dict:
        """Every layer's and head's weights: {"kinds": {kind: {"query_tokens", "key_tokens", "layers":
        (layer, head, T_q, T_k) nested lists}}}."""
        if self.pair is not None:
            if pair is not None:
                raise UserError("pair: a translation model reads one text")
            with self.decoder() as (model, tokenizer):
                a = align(model, text, tokenizer=tokenizer)
            sides = {
                "encoder": (a.source_tokens, a.source_tokens),
                "decoder": (a.target_tokens, a.target_tokens),
                "cross": (a.target_tokens, a.source_tokens),
            }
            layers = {k: v for k, v in a.layers.items() if k in sides} or {"cross": [a.weights[None]]}
            kinds = {k: sides[k] for k in layers}
        else:
            maps = attention_maps(str(self.directory), text, pair=pair)
            kinds, layers = maps.tokens, maps.layers
        return {
            "kinds": {
                k: {
                    "query_tokens": list(q),
                    "key_tokens": list(kk),
                    "layers": [rounded(w) for w in layers[k]],
                }
                for k, (q, kk) in kinds.items()
            }
        }


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


def rounded(weights: torch.Tensor, decimals: int = 4) -> list:
    """A tensor of attention weights as nested lists, rounded (JSON a page reads quickly)."""
    return torch.round(weights.float(), decimals=decimals).tolist()
