"""Pipelines that decode: translation by an encoder-decoder, text generation by a decoder-only language
model."""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from seq2bert.data.batching import pad_sequences
from seq2bert.decoding.generation import GREEDY, Decoding
from seq2bert.errors import ConfigError
from seq2bert.models.alignment import encoder_decoder, loaded, source_ids, source_limit, within_positions
from seq2bert.models.family import max_input_length
from seq2bert.pipelines.loading import (
    ENCODER,
    _device,
    _load,
    inference_precision,
    log,
    model_pair,
    text_list,
)


@torch.no_grad()
def translate(
    checkpoint_or_model,
    texts: str | list[str],
    *,
    tokenizer=None,
    batch_size: int = 64,
    decoding: Decoding | None = None,
    int8: bool = False,
    bf16: bool | str = "auto",
    max_source_length: int | None = None,
    draft=None,
    compile: bool = False,
    int4: bool = False,
    **settings,
) -> str | list[str]:
    """Translations of ``texts`` (greedy, or beam search with ``decoding=Decoding(num_beams=5)`` or
    ``num_beams=5``: ``settings`` are GenerationConfig's, seq2bert/decoding/config.py, over the recipes'
    ``Decoding``) by a checkpoint (path) or a loaded model with its tokenizer; ``int8``: decoded by the
    model's int8 twin (int8 Linear weights, their inputs int8 where the CPU has VNNI/AMX; activations in bf16 where native, else fp32;
    models/weight_only.py). ``draft``: a smaller Transformer of the same vocabularies (a directory or a
    model), whose proposals the model checks (speculative decoding: the same translations greedily, in
    fewer passes of the model; decoding/speculative.py); it runs in the model's precision. ``int4``: by its
    int4 twin (weights in groups of 32: faster than int8 for one sentence at a time, slower for a batch;
    benchmarks/RESULTS.md). ``compile``: the
    model's decoder under torch.compile (loading.compiled: it compiles at the first call, then pays on
    many sentences).
    A string is one sentence (its translation, a string); an empty text translates to "". A source longer
    than ``max_source_length`` tokens (default: the model's positions, else 512; models/alignment.py
    ``source_limit``) is truncated with a warning, and no translation outgrows the decoder's positions.
    A checkpoint's model is loaded once and kept for the next call; it decodes in bf16 where the device
    computes bf16 natively (``bf16="auto"``: a bf16-weights copy of a kept model, autocast for a model
    passed in; loading.inference_precision), in fp32 with ``bf16=False``."""
    if decoding is not None and settings:
        raise ConfigError(f"translate: give decoding=… or the settings {', '.join(settings)}, not both")
    decoding = Decoding.of(**settings) if settings else decoding or GREEDY
    if isinstance(texts, str):
        return translate(
            checkpoint_or_model,
            [texts],
            tokenizer=tokenizer,
            batch_size=batch_size,
            decoding=decoding,
            int8=int8,
            bf16=bf16,
            max_source_length=max_source_length,
            draft=draft,
            compile=compile,
            int4=int4,
        )[0]
    texts = text_list(texts, "translate: texts (a string, or a list of them)")
    kept = isinstance(checkpoint_or_model, (str, Path))
    if kept:
        encoder_decoder(checkpoint_or_model)
        model, tokenizer, _ = _load(checkpoint_or_model, ENCODER)
    else:
        if not isinstance(checkpoint_or_model, torch.nn.Module):  # a (model, tokenizer) pair
            checkpoint_or_model, tokenizer = model_pair(checkpoint_or_model)
        model, tokenizer = loaded(checkpoint_or_model, tokenizer)
    device = next(model.parameters()).device
    limit = source_limit(model.config, max_source_length)
    decoding = within_positions(decoding, model.config)
    out: list[str] = [""] * len(texts)
    order = sorted((i for i in range(len(texts)) if texts[i].strip()), key=lambda i: len(texts[i]))
    with (
        inference_precision(model, bf16, kept=kept, int8=int8, int4=int4, compile=compile) as net,
        drafted(draft, ENCODER, bf16, int8, int4) as small,
    ):
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            rows = source_ids(tokenizer, [texts[i] for i in idx], limit)
            input_ids, mask = pad_sequences(rows, tokenizer.pad_token_id)
            found = decoding.ids(net, tokenizer, input_ids.to(device), mask.to(device), draft=small)
            for i, text in zip(idx, tokenizer.decode_batch(found), strict=True):
                out[i] = text
    return out


@contextlib.contextmanager
def drafted(draft, head, bf16: bool | str, int8: bool, int4: bool = False):
    """The draft model of speculative decoding (a directory, a model or a (model, tokenizer) pair; None:
    none) in the precision its model runs in."""
    if draft is None:
        yield None
        return
    kept = isinstance(draft, (str, Path))
    net = _load(draft, head)[0] if kept else draft[0] if isinstance(draft, tuple) else draft
    with inference_precision(net, bf16, kept=kept, int8=int8, int4=int4) as small:
        yield small


# --- text generation: decoder-only language models (GPT, GPT-2)


def _generation_config(net, settings: dict):
    """The GenerationConfig of ``net`` (its [EOS] and [PAD]) with ``settings``."""
    from seq2bert.decoding.config import GenerationConfig

    if hasattr(net, "generation_config"):
        return net.generation_config(**settings)
    c = net.config
    return GenerationConfig(eos_token_id=c.eos_token_id, pad_token_id=c.pad_token_id or 0, **settings)


def prompt_ids(net, tok, prompts: list[str], max_new_tokens: int) -> list[list[int]]:
    """The token ids of each prompt as the model reads it (no special tokens added, as transformers' GPT
    tokenizers). An empty prompt starts from the model's [BOS] (else [EOS]: GPT-2's <|endoftext|>, as
    transformers' generate does without input_ids); without either it is a ConfigError. A prompt longer
    than the context leaves for the new tokens — its positions (GPT's n_positions, BERT's
    max_position_embeddings) − max_new_tokens — keeps its last tokens, with one warning for all of them."""
    c = net.config
    start = getattr(c, "bos_token_id", None)
    start = getattr(c, "eos_token_id", None) if start is None else start
    context = max_input_length(c)  # None: a recurrent model reads any length
    room = None if context is None else context - max_new_tokens
    if room is not None and room < 1:
        raise ConfigError(
            f"max_new_tokens: {max_new_tokens} leaves no room for a prompt in the model's context of "
            f"{context} positions (at most {context - 1})"
        )
    rows = tok.ids_batch(prompts)
    cut = []
    for i, ids in enumerate(rows):
        if not ids and start is None:
            raise ConfigError(
                f"prompt {i + 1} is empty, and the model has no begin or end token to start from "
                "(bos_token_id, eos_token_id): give some text"
            )
        if not ids:
            rows[i] = [start]
        elif room is not None and len(ids) > room:
            cut.append((i, len(ids)))
            rows[i] = ids[-room:]
    if cut:
        numbers = ", ".join(str(i + 1) for i, _ in cut[:5]) + (", …" if len(cut) > 5 else "")
        which = (
            f"prompt {numbers}: {cut[0][1]}"
            if len(cut) == 1
            else f"prompts {numbers}: up to {max(n for _, n in cut)}"
        )
        log.warning(
            "%s tokens, but the context holds %d positions, %d of them for new tokens: kept the last %d tokens",
            which,
            context,
            max_new_tokens,
            room,
        )
    return rows


@torch.no_grad()
def generate(
    prompts: str | list[str],
    model,
    *,
    stop: str | list[str] | None = None,
    batch_size: int = 16,
    on_text=None,
    bf16: bool | str = "auto",
    int8: bool = False,
    draft=None,
    compile: bool = False,
    int4: bool = False,
    **settings,
) -> str | list[str]:
    """The continuation of each prompt by a language model directory (GPT, GPT-2, BERT with is_decoder; its
    ``causal_lm`` head) or a ``(model, tokenizer)`` pair: the generated text alone, prompt excluded, [EOS]
    dropped — one string per prompt (a string for a string). ``settings`` are GenerationConfig's
    (seq2bert/decoding/config.py; ``TEXT_DEFAULTS``: 50 new tokens, top-k 50); ``stop``: stop strings (kept in
    the text, as transformers keeps them). Prompts are batched ``batch_size`` at a time, left-padded, in order
    of length. ``on_text``: called with each piece of text as it is generated (complete characters only,
    seq2bert/data/text_stream.py) — one prompt, one beam. The model of a directory is loaded once and kept
    for the next call (pipelines/loading.py); it decodes in bf16 where the device computes bf16 natively
    (``bf16="auto"``, as ``translate``), in fp32 with ``bf16=False``; ``int8``: by its int8 twin
    (as ``translate``); ``draft``: a smaller language model of the same vocabulary (a directory or a model)
    for speculative decoding, as ``translate``'s; ``compile``: the model's stack under torch.compile, and
    ``int4``: its int4 twin (as ``translate``'s)."""
    from seq2bert.data.text_stream import TextStream
    from seq2bert.decoding.config import TEXT_DEFAULTS, GenerationConfig
    from seq2bert.decoding.config import settings as config_settings
    from seq2bert.decoding.generation import generate as decode
    from seq2bert.decoding.stopping import StopStrings

    single = isinstance(prompts, str)
    prompts = [prompts] if single else text_list(prompts, "generate: prompts (a string, or a list of them)")
    settings = config_settings(settings, TEXT_DEFAULTS)
    max_new_tokens = settings["max_new_tokens"]
    GenerationConfig(eos_token_id=None, pad_token_id=0, **settings)  # invalid settings fail before any work
    if on_text is not None and (len(prompts) != 1 or settings.get("num_beams", 1) != 1):
        raise ConfigError("on_text: streams one prompt decoded greedily or by sampling (num_beams=1)")
    net, tok, _ = _load(model, "causal_lm")  # its family checked the tokenizer against the model
    config = _generation_config(net, settings)
    stopping = None if stop is None else StopStrings(tok, stop)
    rows = prompt_ids(net, tok, prompts, max_new_tokens)
    stream = streamer = None
    if on_text is not None:  # one prompt
        stream = TextStream(tok)

        def streamer(tokens: torch.Tensor) -> None:
            if piece := stream.push(tokens.tolist()):  # [EOS], a special token, adds no text
                on_text(piece)

    out: list[str] = [""] * len(prompts)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    with (
        inference_precision(
            net, bf16, kept=isinstance(model, (str, Path)), int8=int8, int4=int4, compile=compile
        ) as run,
        drafted(draft, "causal_lm", bf16, int8, int4) as small,
    ):
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            input_ids, mask = pad_sequences([rows[i] for i in idx], config.pad_token_id, left=True)
            found = decode(
                run,
                input_ids.to(_device(net)),
                mask.to(_device(net)),
                config,
                stopping=stopping,
                streamer=streamer,
                draft=small,
            )
            for i, text in zip(idx, tok.decode_batch(found.token_ids()), strict=True):
                out[i] = text
    if stream is not None and (rest := stream.flush()):
        on_text(rest)
    return out[0] if single else out
