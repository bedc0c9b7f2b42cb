"""What every pipeline shares: loading a checkpoint directory (or taking a loaded ``(model, tokenizer)``
pair) with the head it needs, keeping the models it loaded for the next call, and the limits of its inputs."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import torch

from seq2bert.errors import CheckpointError, UserError
from seq2bert.io import read_json
from seq2bert.models import quantized, registry
from seq2bert.models.family import max_input_length
from seq2bert.models.weight_only import int8_description, int8_twin, quantized_bits
from seq2bert.precision import describe_device, use_bf16

log = logging.getLogger("seq2bert.pipelines")

KEEP = 4  # models kept loaded between calls, the least recently used dropped first
_KEPT: OrderedDict[tuple, tuple] = OrderedDict()  # (directory, head, int8) → (its files' stamp, loaded)


ENCODER = None  # the head of the pipelines that read the encoder alone: whichever model the directory holds


def _load(model, head: str | tuple[str, ...] | None, int8: bool = False):
    """(model with ``head`` — "masked_lm", "sequence", "tokens", "qa", "causal_lm", …; of several, the one
    the directory holds; ENCODER (None): the model config.json names, whose encoder the caller reads —,
    tokenizer, its directory) of a checkpoint directory (or a Hub model name) of any family in the registry, or of a ``(model,
    tokenizer)`` pair. ``int8``: its Linear layers dynamically quantised (models/quantized.py; a copy of a
    pair's model), unless they are already (an int8 directory). A directory's model is loaded once and kept
    for the next call (``_kept``)."""
    if isinstance(model, (str, Path)):
        return _kept(model, head, int8)
    net, tok = model_pair(model)
    return (int8_model(copy.deepcopy(net)) if int8 else net.eval()), tok, None


def model_pair(model) -> tuple:
    """``model``, a (model, tokenizer) pair already loaded; anything else (a list of texts given where the model
    goes, None) is a one-line UserError."""
    if isinstance(model, (tuple, list)) and len(model) == 2 and isinstance(model[0], torch.nn.Module):
        return tuple(model)
    raise UserError(
        f"model: expected a checkpoint directory or a (model, tokenizer) pair, got {shown(model)}"
    )


def _read(model, head, int8: bool):
    net, tok = registry.load(model, head=head)
    if tok is None:
        raise CheckpointError(f"{model}: no tokenizer (tokenizer.json, vocab.txt, …) in the directory")
    return (int8_model(net) if int8 else net), tok, Path(model)


def has_head(net, head, named: str | None) -> bool:
    """Whether a loaded ``net`` is the model ``head`` asks for; ENCODER asks for the one config.json names
    (``named``), not one of another directory's (an ELECTRA run's generator/)."""
    family = registry.family_of(net)
    if head is ENCODER:
        return family.architecture_of(net) == named
    return family.architecture_of(net) in [
        family.heads.get(h) for h in ((head,) if isinstance(head, str) else head)
    ]


def _kept(model, head, int8: bool = False):
    """``_read`` of a directory, kept between calls: the last ``KEEP`` models loaded stay in memory, each read
    again only when a file in its directory changes (size or modification time). A model kept for one head
    serves another it satisfies (a classifier kept for classify serves embed: its encoder). A model name of
    the Hugging Face Hub is read from its folder in the huggingface_hub cache (models/hub.py)."""
    model = registry.local_path(model)
    directory = registry.checkpoint_dir(model).resolve()
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(directory.iterdir()))
    named = None
    for key, (kept_stamp, loaded) in list(_KEPT.items()):
        if key[0] == str(directory) and key[2] == int8:
            if kept_stamp != stamp:  # its files changed: the stale model goes before the new one is read
                del _KEPT[key]
                continue
            named = named or (read_json(directory / "config.json").get("architectures") or [None])[0]
            if key[1] == head or has_head(loaded[0], head, named):
                _KEPT.move_to_end(key)
                return loaded
    loaded = _read(model, head, int8)
    _KEPT[str(directory), head, int8] = (stamp, loaded)
    while len(_KEPT) > KEEP:
        _KEPT.popitem(last=False)
    return loaded


def shown(value) -> str:
    """A value as an error message shows it: its type and (the start of) its repr."""
    if value is None:
        return "None"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def text_list(texts, name: str, *, pairs: bool = False) -> list:
    """``texts`` — a list, tuple or other iterable of strings (with ``pairs``: or of (text, pair) tuples) — as
    a list (pairs as tuples); anything else (None, one string where a list is expected, an item that is not a
    string) is a one-line UserError naming the argument ``name`` and what was expected. An empty list is a
    list: its results are empty."""
    expected = "a list of strings" + (" or (text, pair) tuples" if pairs else "")
    if texts is None or isinstance(texts, (str, bytes, dict)) or not isinstance(texts, Iterable):
        raise UserError(f"{name}: expected {expected}, got {shown(texts)}")
    items = list(texts)
    for i, item in enumerate(items):
        if (
            pairs
            and isinstance(item, (tuple, list))
            and len(item) == 2
            and all(isinstance(t, str) for t in item)
        ):
            items[i] = tuple(item)
        elif not isinstance(item, str):
            raise UserError(
                f"{name}[{i}]: expected a string{' or a (text, pair) tuple of strings' if pairs else ''}, "
                f"got {shown(item)}"
            )
    return items


def one_text(text, name: str, *, empty: bool = True) -> str:
    """``text``, a string (not ``empty`` unless allowed); anything else is a one-line UserError naming the
    argument ``name``."""
    if not isinstance(text, str):
        raise UserError(f"{name}: expected a string, got {shown(text)}")
    if not empty and not text.strip():
        raise UserError(f"{name}: empty; expected some text")
    return text


def int8_model(net):
    """``net`` with dynamically quantised int8 Linears (in place), on the CPU."""
    return net if quantized.is_quantized(net) else quantized.quantize(net)


def _base(net):
    """The bare encoder inside a head model."""
    return registry.family_of(net).base_model(net)


def _device(net) -> torch.device:
    return next(net.parameters()).device


def positions(config, longest: int) -> int:
    """The longest input a model takes: ``longest``, cut to its position table (an LSTM has none)."""
    return min(longest, max_input_length(config, longest))


def said_truncated(encodings, max_length: int) -> None:
    """A warning for the texts the tokenizer cut to ``max_length`` tokens."""
    if cut := sum(getattr(e, "truncated", False) for e in encodings):
        log.warning("%d text(s) longer than %d tokens truncated (max_length)", cut, max_length)


def default_max_length(directory: Path | None, fallback: int) -> int:
    """sentence-transformers' max_seq_length (sentence_bert_config.json) when the directory has one."""
    config = directory / "sentence_bert_config.json" if directory is not None else None
    if config is not None and config.is_file():
        try:
            return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])
        except (ValueError, KeyError, TypeError, json.JSONDecodeError):
            raise CheckpointError(f"{config}: expected a max_seq_length") from None
    return fallback


_BF16_COPIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a kept model → its bf16-weights copy
_COPYING = threading.Lock()  # serve's threads may ask for the same copy at once


@contextlib.contextmanager
def inference_precision(
    net,
    bf16: bool | str = "auto",
    *,
    kept: bool = False,
    int8: bool = False,
    int4: bool = False,
    compile: bool = False,
) -> Iterator:
    """The model a pipeline runs and the precision it computes in (a context that yields the model);
    ``compile`` (the decoding pipelines): that model with its decoding stack under torch.compile
    (``compiled``). The path taken is logged."""
    with _precision(net, bf16, kept, quantized_bits(int8, int4)) as chosen:
        if compile:
            chosen = compiled(chosen)
            _said(net, "its decoding stack under torch.compile")
        yield chosen


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a model → its compiled twin
STACKS = ("decoder", "transformer")  # an encoder-decoder's decoding stack, a decoder-only model's


def compiled(net: torch.nn.Module) -> torch.nn.Module:
    """``net`` whose decoding stack (a Transformer's ``decoder``, a GPT's ``transformer``) runs under
    torch.compile, with dynamic shapes (the key/value cache grows at every step): a shallow copy sharing
    every weight, made once per model and kept beside it. The stack compiles at its first calls — seconds for
    a small model, minutes for GPT-2 small — after which a step runs as a few fused kernels instead of
    hundreds of dispatched operators (benchmarks/RESULTS.md: 1.2–1.6× the eager step). It pays where a model
    decodes much: ``serve``, a long file. The tokens are those of the eager model up to rounding."""
    with _COPYING:
        if net not in _COMPILED:
            name = next((n for n in STACKS if isinstance(getattr(net, n, None), torch.nn.Module)), None)
            stack = None if name is None else getattr(net, name)
            if stack is None or not _transformer_stack(stack):
                raise UserError(
                    f"--compile: {type(net).__name__} has no Transformer decoding stack to compile "
                    "(a Transformer's or a GPT's)"
                )
            twin = copy.copy(net)  # the same weights and sub-modules, but its own table of them
            twin._modules = dict(net._modules)
            twin._modules[name] = torch.compile(stack, dynamic=True)
            _COMPILED[net] = twin
        return _COMPILED[net]


def _transformer_stack(stack: torch.nn.Module) -> bool:
    """Whether ``stack`` is a Transformer's: multi-head attention, no recurrent layer or cell."""
    from seq2bert.nn.multihead import MultiHeadAttention

    recurrent = (torch.nn.RNNBase, torch.nn.RNNCellBase)
    modules = list(stack.modules())
    return any(isinstance(m, MultiHeadAttention) for m in modules) and not any(
        isinstance(m, recurrent) for m in modules
    )


@contextlib.contextmanager
def _precision(net, bf16: bool | str, kept: bool, bits: int | None) -> Iterator:
    """The model a pipeline runs and the precision it computes in.

    bf16 when ``bf16`` is true (with a warning where the device only emulates it), or "auto" and the device
    computes bf16 natively (a CPU with AVX-512 BF16 or AMX, a CUDA device with bf16); fp32 otherwise, and
    always for a dynamically quantised int8 model (its quantised Linears take fp32 activations). In bf16, a
    model the pipelines keep loaded (``kept``: read from a directory) runs as a copy with bf16 weights, made
    once and kept beside it — every layer, LayerNorm and residual sum included, computes in bf16 and nothing
    is cast per call, where autocast casts the activations between fp32 and bf16 around each LayerNorm and
    residual sum; a recurrent model, and a model the caller passed in (whose weights may change between
    calls), run under bf16 autocast instead, in one region per call (each weight cast once). Both stay at
    cosine ≥ 0.999 to fp32 on SST-2 sentences with all-MiniLM-L6-v2 (tests/test_pipelines.py;
    benchmarks/inference.py).

    ``int8`` (the decoding pipelines): the model's int8 twin (models/weight_only.py: int8 Linear weights and
    output layer, a scale per row; the inputs of those layers int8 too, a scale per token, where the CPU
    multiplies int8 natively), its activations in the precision chosen above, made once and kept beside
    the model until its weights change. The path taken is logged (``describe``)."""
    if bf16 not in (True, False, "auto"):
        raise UserError(f"bf16: expected true, false or 'auto', got {bf16!r}")
    use = use_bf16(bf16, _device(net))
    if use and quantized.is_quantized(net):
        if bf16 is True:
            log.warning(
                "bf16 with an int8 model: its quantised Linears take fp32 activations; computing in fp32"
            )
        use = False
    if bits and not quantized.is_quantized(net):
        twin = int8_twin(net, torch.bfloat16 if use else torch.float32, bits)
        _said(net, int8_description(twin, "bf16" if use else "fp32"))
        yield twin
        return
    if not use:
        _said(net, "int8 (dynamic)" if quantized.is_quantized(net) else "fp32")
        yield net
        return
    if kept and not any(isinstance(m, torch.nn.RNNBase) for m in net.modules()):
        with _COPYING:
            if net not in _BF16_COPIES:
                _BF16_COPIES[net] = bf16_copy(net)
            half = _BF16_COPIES[net]
        _said(net, "bf16 weights")
        yield half
        return
    _said(net, "bf16 autocast")
    with torch.autocast(_device(net).type, dtype=torch.bfloat16):
        yield net


_SAID: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a model → the paths already logged


def _said(net, path: str) -> None:
    """Log, once per model and path, the precision a pipeline runs it in and why."""
    said = _SAID.setdefault(net, set())
    if path not in said:
        said.add(path)
        device = _device(net)
        log.info("%s: %s on %s", type(net).__name__, path, describe_device(device))


def bf16_copy(net: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``net`` in eval mode with bf16 weights (floating buffers too), each parameter cast as it is
    copied, so no second fp32 copy is ever made; tied parameters stay tied."""
    memo = {
        id(p): torch.nn.Parameter(p.detach().to(torch.bfloat16), requires_grad=False)
        for p in net.parameters()
    }
    return copy.deepcopy(net, memo).to(torch.bfloat16).eval()


BLOCK = 64  # batches sorted together: a long input is tokenized and sorted this many batches at a time


def sorted_batches(tok, texts: list, batch_size: int, max_length: int, pad_id: int | None):
    """(the texts' indices, the model's inputs) of batches of similar length (``length_batches``), the texts
    tokenized (truncated to ``max_length``, with a warning) and sorted ``BLOCK`` batches at a time."""
    step = batch_size * BLOCK
    for start in range(0, len(texts), step):
        encodings = tok.encode_batch(
            texts[start : start + step], max_length=max_length, truncation="longest_first"
        )
        said_truncated(encodings.encodings, max_length)
        for indices, batch in length_batches(encodings.encodings, batch_size, pad_id):
            yield [start + i for i in indices], batch


def length_batches(
    encodings: Sequence, batch_size: int, pad_id: int | None
) -> Iterator[tuple[list[int], dict]]:
    """Batches of encodings of similar length, longest first, each padded to its own longest with ``pad_id``:
    (the indices of its encodings, {"input_ids", "token_type_ids", "attention_mask"} (B, T)). Sorting by
    length spends the matmuls on tokens, not on padding (sentence-transformers' ``encode`` sorts the same
    way); the caller puts the results back in the input order through the indices."""
    order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i]))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        longest = len(encodings[chunk[0]])
        if pad_id is None and any(len(encodings[i]) < longest for i in chunk):
            raise UserError("texts of different lengths need padding, and the tokenizer has no pad token")
        rows = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
        for i in chunk:
            e, pad = encodings[i], longest - len(encodings[i])
            rows["input_ids"].append(e.ids + [pad_id] * pad)
            rows["token_type_ids"].append(e.type_ids + [0] * pad)
            rows["attention_mask"].append(e.attention_mask + [0] * pad)
        yield chunk, {k: torch.tensor(v, dtype=torch.long) for k, v in rows.items()}  # (B, T)


def pad_id(tok, config) -> int | None:
    """The id that pads a batch: the tokenizer's pad token, else the model's ``pad_token_id``."""
    return tok.pad_token_id if tok.pad_token_id is not None else getattr(config, "pad_token_id", None)
