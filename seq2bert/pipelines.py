"""Pipelines over a checkpoint directory of any family in the registry: for encoders, sentence embeddings
(pooled contextual vectors), fill-mask, and the fine-tuned task shapes — text classification, token
classification (entities with character spans) and extractive question answering; for encoder-decoders,
translation.

    seq2bert.embed(["A man is eating."], model="all-MiniLM-L6-v2/", normalize=True)   # (n, hidden)
    seq2bert.fill_mask("Paris is the [MASK] of France.", model="my-bert/", top_k=5)
    seq2bert.classify(["a gripping film"], model="runs/sst2/best")        # [{"label", "score"}]
    seq2bert.tag("EU rejects German call", model="runs/ner/best")         # [{"entity_group", "word", …}]
    seq2bert.answer("What does NUS mean?", context, model="runs/squad/best")  # {"answer", "score", …}

    seq2bert.translate(["ein Hund läuft ."], model="runs/m30k")          # ["a dog runs ."]

and for decoder-only language models, text generation:

    seq2bert.generate(["Once upon a time"], model="gpt2/", max_new_tokens=40)   # [" there was …"]

``model`` is a checkpoint directory (or a ``(model, tokenizer)`` pair already loaded); the registry finds
the class with the head the pipeline needs.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import torch
import torch.nn.functional as F

from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import pad_sequences
from seq2bert.data.finetuning import aligned_words
from seq2bert.data.qa import strip_span
from seq2bert.decoding.generation import GREEDY, Decoding
from seq2bert.errors import CheckpointError, ConfigError, UserError
from seq2bert.models import quantized, registry
from seq2bert.models.alignment import loaded, source_ids, source_limit, within_positions
from seq2bert.models.family import max_input_length

log = logging.getLogger(__name__)


def _load(model, head: str | tuple[str, ...], int8: bool = False):
    """(model with ``head`` — "base", "masked_lm", "sequence", "tokens" or "qa"; of several, the one the
    directory holds —, tokenizer, its directory) of a checkpoint directory of any family in the registry, or of
    a ``(model, tokenizer)`` pair. ``int8``: its Linear layers dynamically quantised (models/quantized.py; a
    copy of a pair's model), unless they are already (an int8 directory)."""
    if isinstance(model, (str, Path)):
        net, tok = registry.load(model, head=head)
        if tok is None:
            raise CheckpointError(f"{model}: no tokenizer (tokenizer.json, vocab.txt, …) in the directory")
        return (int8_model(net) if int8 else net), tok, Path(model)
    net, tok = model
    return (int8_model(copy.deepcopy(net)) if int8 else net.eval()), tok, None


def int8_model(net):
    """``net`` with dynamically quantised int8 Linears (in place), on the CPU."""
    return net if quantized.is_quantized(net) else quantized.quantize(net)


def _base(net):
    """The bare encoder inside a head model."""
    return registry.family_of(net).base_model(net)


def _encode(encoder, tok, texts: list[str], max_length: int) -> tuple[dict, list[list[str]] | None]:
    """The encoder's inputs for ``texts``: the tokenizer's ids (padded, truncated to ``max_length``), or what
    its family makes of texts (ELMo: each word's characters), with the tokens they stand for."""
    family = registry.family_of(encoder)
    if family.text_inputs is not None:
        return family.text_inputs(encoder, tok, list(texts))
    batch = tok.encode_batch(list(texts), max_length=max_length, truncation="longest_first",
                             padding="longest", return_tensors="pt")  # fmt: skip
    said_truncated(batch.encodings, max_length)
    return dict(batch), None


def _layer(encoder, batch: dict, layer: int | str | None):
    """The token vectors (B, T, H) an encoder gives ``batch`` at ``layer``: an index into its layers
    (0: the embeddings, −1: the last), "mean" (the average of all of them), or None (its family's default:
    the last for BERT, the mean for ELMo)."""
    layer = registry.family_of(encoder).default_layer if layer is None else layer
    if layer == -1:
        return encoder(**batch).last_hidden_state
    layers = encoder(**batch, output_hidden_states=True).hidden_states
    if layer == "mean":
        return torch.stack(layers).mean(0)
    if not isinstance(layer, int) or not -len(layers) <= layer < len(layers):
        raise UserError(f"layer: expected 'mean' or an index of the {len(layers)} layers, got {layer!r}")
    return layers[layer]


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


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of the token vectors of each text, padding excluded: (B, T, H), (B, T) → (B, H)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


POOLING = {
    "pooling_mode_mean_tokens": mean_pool,
    "pooling_mode_cls_token": lambda hidden, mask: hidden[:, 0],
    "pooling_mode_max_tokens": lambda hidden, mask: hidden.masked_fill(
        ~mask.bool()[..., None], float("-inf")
    ).amax(1),
}


def sentence_modules(directory: Path | None) -> tuple[str, bool]:
    """What a sentence-transformers directory's modules.json says comes after the encoder: the pooling
    (its 1_Pooling/config.json: "pooling_mode_mean_tokens", "pooling_mode_cls_token" or
    "pooling_mode_max_tokens") and whether a Normalize module L2-normalises the result. Without
    modules.json: mean pooling, not normalised."""
    modules = directory / "modules.json" if directory is not None else None
    if modules is None or not modules.is_file():
        return "pooling_mode_mean_tokens", False
    try:
        entries = json.loads(modules.read_text(encoding="utf-8"))
        kinds = {e["type"].rsplit(".", 1)[-1]: e.get("path", "") for e in entries}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CheckpointError(f'{modules}: expected a list of {{"type", "path"}} modules') from None
    unknown = sorted(set(kinds) - {"Transformer", "Pooling", "Normalize"})
    if unknown:
        raise CheckpointError(
            f"{modules}: module(s) {', '.join(unknown)} are not supported (Transformer, Pooling, Normalize are)"
        )
    pooling = "pooling_mode_mean_tokens"
    if "Pooling" in kinds:
        config = directory / kinds["Pooling"] / "config.json"
        try:
            modes = [
                k
                for k, v in json.loads(config.read_text(encoding="utf-8")).items()
                if k.startswith("pooling_mode") and v
            ]
        except (OSError, ValueError, AttributeError):
            raise CheckpointError(f"{config}: expected the pooling module's settings") from None
        if len(modes) != 1 or modes[0] not in POOLING:
            raise CheckpointError(f"{config}: pooling {modes} is not supported (one of {', '.join(POOLING)})")
        pooling = modes[0]
    return pooling, "Normalize" in kinds


@torch.no_grad()
def embed(
    texts: list[str],
    model,
    *,
    normalize: bool | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    layer: int | str | None = None,
    int8: bool = False,
) -> torch.Tensor:
    """Sentence embeddings (n, hidden): each text's token vectors pooled as the directory's
    sentence-transformers modules say — by default averaged over its tokens ([CLS] and [SEP] included,
    padding excluded) — and L2-normalised when ``normalize``, whose default (None) is what the directory's
    modules.json says (a Normalize module: normalised, as sentence-transformers' ``encode`` gives). Texts
    longer than ``max_length`` tokens are truncated, with a warning (default: the directory's
    sentence-transformers setting, else the model's positions; never past them). ``layer``: which layer's vectors (``_layer``: the final one for
    BERT, the average of the layers for ELMo, unless an index or "mean" is given)."""
    if isinstance(texts, str):
        raise UserError("embed: give a list of texts")
    net, tok, directory = _load(model, "base", int8)
    encoder = _base(net)
    pooling, normalized = sentence_modules(directory)
    normalize = normalized if normalize is None else normalize
    table = max_input_length(
        encoder.config, 512
    )  # clamped to it: max_length=10**6 reads the model's positions
    max_length = positions(encoder.config, max_length or default_max_length(directory, table))
    device = next(encoder.parameters()).device
    out = []
    for start in range(0, len(texts), batch_size):
        batch, _ = _encode(encoder, tok, texts[start : start + batch_size], max_length)
        batch = {k: v.to(device) for k, v in batch.items()}
        hidden = _layer(encoder, batch, layer)
        out.append(POOLING[pooling](hidden.float(), batch["attention_mask"]))
    vectors = torch.cat(out) if out else torch.zeros(0, encoder.config.hidden_size)
    return F.normalize(vectors, dim=-1) if normalize else vectors


@torch.no_grad()
def word_vectors(texts: list[str], word: str, model, *, layer: int | str | None = None) -> torch.Tensor:
    """The contextual vector (averaged over its WordPieces) of the first occurrence of ``word`` in each
    text: (n, hidden), at ``layer`` (as ``embed``'s). The same word in different contexts gets different
    vectors — the point of contextual embeddings ("bank" of a river and of money)."""
    net, tok, _ = _load(model, "base")
    encoder = _base(net)
    spelled = registry.family_of(encoder).text_inputs is not None  # a model that reads words, spelled

    def tokens(text: str) -> tuple[dict, list]:  # the encoder's inputs and the tokens they stand for
        if spelled:
            batch, words = _encode(encoder, tok, [text], 0)
            return batch, words[0]
        batch = tok.encode_batch([text], return_tensors="pt")
        return dict(batch), batch["input_ids"][0].tolist()

    pieces = tokens(word)[1] if spelled else tok.encode(word, add_special_tokens=False).ids
    if not pieces:
        raise UserError(f"word_vectors: {word!r} has no tokens")
    out = []
    for text in texts:
        batch, ids = tokens(text)
        at = next((i for i in range(len(ids)) if ids[i : i + len(pieces)] == pieces), None)
        if at is None:
            raise UserError(f"word_vectors: {word!r} is not in {text!r}")
        hidden = _layer(encoder, batch, layer)
        out.append(hidden[0, at : at + len(pieces)].float().mean(0))
    return torch.stack(out)


@torch.no_grad()
def fill_mask(text: str, model, *, top_k: int = 5, int8: bool = False) -> list[dict] | list[list[dict]]:
    """The ``top_k`` most probable tokens for the [MASK] (the tokenizer's mask: RoBERTa's ``<mask>``) in
    ``text``: [{"token", "token_id", "score", "sequence"}, …] best first (one such list per [MASK] when there
    are several). Of an ELECTRA run's checkpoint, the generator (generator/) fills the mask. A text longer
    than the model's positions is truncated to them, with a warning."""
    net, tok, _ = _load(model, "masked_lm", int8)
    if getattr(net.config, "is_decoder", False):  # BERT's LTR: its LM head was trained on the next token
        raise UserError(f"fill_mask: {model if isinstance(model, (str, Path)) else 'the model'} is a left-to-right "
                        "language model (is_decoder): it predicts the next token, not a masked one; use generate")  # fmt: skip
    mask_id = tok.mask_token_id
    if mask_id is None:
        raise CheckpointError("fill_mask: the tokenizer has no [MASK] token")
    longest = max_input_length(net.config, 512)  # a text past the model's positions: its first ones
    enc = tok.encode_batch([text], max_length=longest, truncation="longest_first", return_tensors="pt")
    said_truncated(enc.encodings, longest)
    ids = enc["input_ids"]
    positions = (ids[0] == mask_id).nonzero().flatten().tolist()
    if not positions:
        where = f" in its first {longest} tokens" if enc.encodings[0].truncated else ""
        raise UserError(f"fill_mask: no {tok.id_to_token(mask_id)}{where} in {text[:80]!r}")
    device = next(net.parameters()).device
    logits = net(ids.to(device), enc["attention_mask"].to(device), enc["token_type_ids"].to(device)).logits
    results = []
    for p in positions:
        probs = logits[0, p].float().softmax(-1)
        scores, top = probs.topk(min(top_k, probs.numel()))
        rows = []
        for score, token_id in zip(scores.tolist(), top.tolist(), strict=True):
            filled = ids[0].clone()
            filled[p] = token_id
            rows.append(
                {
                    "token": tok.id_to_token(token_id),
                    "token_id": token_id,
                    "score": score,
                    "sequence": tok.decode(filled.tolist()),
                }
            )
        results.append(rows)
    return results[0] if len(results) == 1 else results


def _device(net) -> torch.device:
    return next(net.parameters()).device


def _word_features(net, encodings, texts) -> dict[str, torch.Tensor]:
    """For a model that also reads a frozen encoder's vectors of the words (a BiLSTM with ``features``):
    each token's word (``word_index``) and the encoder's inputs of the words, spelled as in the texts;
    {} for any other model."""
    if not getattr(getattr(net.config, "features", None), "encoder", None):
        return {}
    aligned = [
        aligned_words(e, [t] if isinstance(t, str) else list(t))
        for e, t in zip(encodings, texts, strict=True)
    ]
    word_index, _ = pad_sequences([index for _, index in aligned], -1)
    return {"word_index": word_index, **net.feature_inputs([words for words, _ in aligned])}


@torch.no_grad()
def classify(texts, model, *, top_k: int | None = 1, batch_size: int = 32, max_length: int = 512,
             int8: bool = False) -> list:  # fmt: skip
    """Labels of texts or ``(text, pair)`` tuples with a fine-tuned sequence classifier: BERT's, or a GPT's
    (GPT-1's input transformations; a similarity model reads each pair in both orders).

    Each text gets [{"label", "score"}, …]: the ``top_k`` most probable labels (softmax), best first —
    just the best one as a dict when ``top_k`` is 1; a regression model (one output, e.g. STS-B) gives
    {"label": its label name, "score": the predicted value}."""
    if isinstance(texts, str) or (isinstance(texts, tuple) and len(texts) == 2):
        return classify([texts], model, top_k=top_k, batch_size=batch_size, max_length=max_length, int8=int8)[
            0
        ]
    net, tok, _ = _load(model, ("sequence", "similarity"), int8)
    max_length = positions(net.config, max_length)
    labels = net.config.id2label
    decoder = registry.family_of(net).kind == "decoder"
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        if decoder:
            batch = _decoder_inputs(net, tok, chunk, max_length)
        else:
            batch = tok.encode_batch(chunk, max_length=max_length, truncation="longest_first", padding="longest",
                                     return_tensors="pt")  # fmt: skip
            said_truncated(batch.encodings, max_length)
            batch = {**batch, **_word_features(net, batch.encodings, chunk)}
        logits = net(**{k: v.to(_device(net)) for k, v in batch.items()}).logits.float()  # (B, K)
        for row in logits:
            if row.numel() == 1:  # regression
                out.append({"label": labels[0], "score": float(row[0])})
                continue
            probs = row.softmax(-1)
            k = min(top_k or probs.numel(), probs.numel())
            best = [{"label": labels[int(i)], "score": float(p)} for p, i in zip(*probs.topk(k), strict=True)]
            out.append(best[0] if top_k == 1 else best)
    return out


def _decoder_inputs(net, tok, items: list, max_length: int) -> dict:
    """A decoder's classifier reads texts through GPT-1's input transformations (data/gpt_finetuning.py):
    [start] text [extract], a pair as [start] A [delim] B [extract] — in both orders for a similarity model."""
    family = registry.family_of(net)
    similarity = family.architecture_of(net) == family.heads.get("similarity")
    rows = [
        gpt.encode_texts([x], tok, "similarity" if similarity else "classification" if isinstance(x, str)
                         else "entailment", max_length)[0]
        for x in items
    ]  # fmt: skip
    shape = "similarity" if similarity else "classification"
    return gpt.collate([{"input_ids": r} for r in rows], net.config.pad_token_id, shape, lm=False)


@torch.no_grad()
def tag(text: str, model, *, aggregate: bool = True, max_length: int = 512, int8: bool = False) -> list[dict]:
    """Named entities (or any tags) of ``text`` with a BertForTokenClassification directory.

    Each word — as the tokenizer's pre-tokenizer splits it — is labelled by its first sub-token (the
    fine-tuning convention). ``aggregate``: consecutive B-X, I-X, … words become one entity
    {"entity_group": "X", "score": mean word probability, "word": the text span, "start", "end"}, character
    offsets into ``text``; otherwise one {"entity", "score", "word", "start", "end"} per word not tagged O."""
    if not isinstance(text, str):
        return [tag(t, model, aggregate=aggregate, max_length=max_length) for t in text]
    net, tok, _ = _load(model, "tokens", int8)
    max_length = positions(net.config, max_length)
    enc = tok.encode(text, max_length=max_length, truncation="longest_first")
    said_truncated([enc], max_length)
    ids = torch.tensor([enc.ids], device=_device(net))
    words = {k: v.to(ids.device) for k, v in _word_features(net, [enc], [text]).items()}
    probs = (
        net(ids, torch.ones_like(ids), torch.tensor([enc.type_ids], device=ids.device), **words)
        .logits[0]
        .float()
        .softmax(-1)
    )
    words: dict[int, dict] = {}  # word index → its label, score and character span
    for i, w in enumerate(enc.word_ids):
        if w is None:
            continue
        start, end = enc.offsets[i]
        if w not in words:
            p, k = probs[i].max(-1)
            words[w] = {"entity": net.config.id2label[int(k)], "score": float(p), "start": start, "end": end}
        words[w]["end"] = end
    for w in words.values():  # a piece holding the space before its word (SentencePiece's "▁") starts on it
        w["start"], w["end"] = strip_span(text, w["start"], w["end"])
    tagged = [w for w in words.values() if w["entity"] != "O"]
    for w in tagged:
        w["word"] = text[w["start"] : w["end"]]
    if not aggregate:
        return [{"entity": w["entity"], "score": w["score"], "word": w["word"], "start": w["start"], "end": w["end"]}
                for w in tagged]  # fmt: skip
    groups: list[dict] = []
    previous_end = None
    for w in words.values():
        prefix, _, kind = w["entity"].rpartition("-") if "-" in w["entity"] else ("", "", w["entity"])
        if w["entity"] == "O":
            previous_end = None
            continue
        current = groups[-1] if groups and previous_end is not None else None
        if current is not None and prefix == "I" and current["entity_group"] == kind:
            current["end"], current["scores"] = w["end"], current["scores"] + [w["score"]]
        else:
            groups.append(
                {"entity_group": kind, "scores": [w["score"]], "start": w["start"], "end": w["end"]}
            )
        previous_end = w["end"]
    return [{"entity_group": g["entity_group"], "score": sum(g["scores"]) / len(g["scores"]),
             "word": text[g["start"] : g["end"]], "start": g["start"], "end": g["end"]} for g in groups]  # fmt: skip


@torch.no_grad()
def answer(question: str, context: str, model, *, max_seq_length: int = 384, doc_stride: int = 128,
           max_answer_length: int = 30, handle_impossible_answer: bool = False, int8: bool = False) -> dict:  # fmt: skip
    """The answer to ``question`` as a span of ``context`` with a BertForQuestionAnswering directory:
    {"answer", "score" (probability of the span among the n best), "start", "end"} (character offsets).
    Long contexts are read in overlapping windows (data/qa.py). ``handle_impossible_answer``: "" when the
    model prefers [CLS] (SQuAD v2)."""
    from seq2bert.data.qa import make_features, postprocess
    from seq2bert.data.squad import QAExample

    net, tok, _ = _load(model, "qa", int8)
    max_seq_length = positions(net.config, max_seq_length)
    example = QAExample(id="q", title="", context=context, question=question, answers=[])
    features = make_features([example], tok, max_seq_length=max_seq_length, doc_stride=doc_stride)
    starts, ends = [], []
    for f in features:
        ids = torch.tensor([f.input_ids], device=_device(net))
        o = net(ids, torch.ones_like(ids), torch.tensor([f.token_type_ids], device=ids.device))
        starts.append(o.start_logits[0].float().cpu())
        ends.append(o.end_logits[0].float().cpu())
    found = postprocess([example], features, starts, ends, max_answer_length=max_answer_length,
                        version_2=handle_impossible_answer)["q"]  # fmt: skip
    return {"answer": found.text, "score": found.probability, "start": found.start, "end": found.end}


@torch.no_grad()
def translate(checkpoint_or_model, texts: str | list[str], *, tokenizer=None, batch_size: int = 64,
              decoding: Decoding = GREEDY, int8: bool = False, max_source_length: int | None = None) -> str | list[str]:  # fmt: skip
    """Translations of ``texts`` (greedy, or beam search with ``decoding=Decoding(num_beams=5)``) by a
    checkpoint (path) or a loaded model with its tokenizer; ``int8``: with dynamically quantised Linears.
    A string is one sentence (its translation, a string); an empty text translates to "". A source longer
    than ``max_source_length`` tokens (default: the model's positions, else 512; models/alignment.py
    ``source_limit``) is truncated with a warning, and no translation outgrows the decoder's positions."""
    if isinstance(texts, str):
        return translate(checkpoint_or_model, [texts], tokenizer=tokenizer, batch_size=batch_size,
                         decoding=decoding, int8=int8, max_source_length=max_source_length)[0]  # fmt: skip
    model, tokenizer = loaded(checkpoint_or_model, tokenizer)
    if int8:
        model = int8_model(model if isinstance(checkpoint_or_model, (str, Path)) else copy.deepcopy(model))
    device = next(model.parameters()).device
    limit = source_limit(model.config, max_source_length)
    decoding = within_positions(decoding, model.config)
    out: list[str] = [""] * len(texts)
    order = sorted((i for i in range(len(texts)) if texts[i].strip()), key=lambda i: len(texts[i]))
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        rows = source_ids(tokenizer, [texts[i] for i in idx], limit)
        input_ids, mask = pad_sequences(rows, tokenizer.pad_token_id)
        found = decoding.ids(model, tokenizer, input_ids.to(device), mask.to(device))
        for i, text in zip(idx, tokenizer.decode_batch(found), strict=True):
            out[i] = text
    return out


# --- text generation: decoder-only language models (GPT, GPT-2)
_KEPT: dict[str, tuple] = {}  # the last model directory a pipeline loaded: {key: (files' stamp, loaded)}


def _kept(model, head: str):
    """``_load`` of a directory, kept between calls: the last directory loaded stays in memory and is read
    again only when a file in it changes (size or modification time). A loaded pair is used as it is."""
    if not isinstance(model, (str, Path)):
        return _load(model, head)
    directory = registry.checkpoint_dir(model).resolve()
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(directory.iterdir()))
    key = f"{directory}\0{head}"
    if key in _KEPT and _KEPT[key][0] == stamp:
        return _KEPT[key][1]
    _KEPT.clear()  # one model at a time
    loaded = _load(model, head)
    _KEPT[key] = (stamp, loaded)
    return loaded


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
    than the context leaves for the new tokens — n_positions − max_new_tokens — keeps its last tokens,
    with a warning."""
    c = net.config
    start = getattr(c, "bos_token_id", None)
    start = getattr(c, "eos_token_id", None) if start is None else start
    context = getattr(c, "n_positions", None)
    room = None if context is None else context - max_new_tokens
    if room is not None and room < 1:
        raise ConfigError(
            f"max_new_tokens: {max_new_tokens} leaves no room for a prompt in the model's context of "
            f"{context} positions (at most {context - 1})"
        )
    rows = tok.ids_batch(prompts)
    for i, ids in enumerate(rows):
        if not ids and start is None:
            raise ConfigError(
                f"prompt {i + 1} is empty, and the model has no begin or end token to start from "
                "(bos_token_id, eos_token_id): give some text"
            )
        if not ids:
            rows[i] = [start]
        elif room is not None and len(ids) > room:
            log.warning(
                "prompt %d: %d tokens, but the context holds %d positions, %d of them for new tokens: kept its "
                "last %d tokens", i + 1, len(ids), context, max_new_tokens, room,
            )  # fmt: skip
            rows[i] = ids[-room:]
    return rows


@torch.no_grad()
def generate(
    prompts: str | list[str],
    model,
    *,
    max_new_tokens: int = 50,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int = 50,
    top_p: float = 1.0,
    num_beams: int = 1,
    repetition_penalty: float = 1.0,
    no_repeat_ngram_size: int = 0,
    min_new_tokens: int = 0,
    length_penalty: float = 1.0,
    stop: str | list[str] | None = None,
    seed: int | None = None,
    batch_size: int = 16,
    on_text=None,
) -> str | list[str]:
    """The continuation of each prompt by a language model directory (GPT, GPT-2, BERT with is_decoder; its
    ``causal_lm`` head) or a ``(model, tokenizer)`` pair: the generated text alone, prompt excluded, [EOS]
    dropped — one string per prompt (a string for a string). The settings are ``model.generate``'s (seq2bert/models/decoder_only.py);
    ``stop``: stop strings (kept in the text, as transformers keeps them). Prompts are batched
    ``batch_size`` at a time, left-padded, in order of length. ``on_text``: called with each piece of text
    as it is generated (complete characters only, seq2bert/data/text_stream.py) — one prompt, one beam.
    The model of a directory is loaded once and kept for the next call (``_kept``)."""
    from seq2bert.data.text_stream import TextStream
    from seq2bert.decoding.config import GenerationConfig
    from seq2bert.decoding.generation import generate as decode
    from seq2bert.decoding.stopping import StopStrings

    single = isinstance(prompts, str)
    prompts = [prompts] if single else list(prompts)
    settings = dict(max_new_tokens=max_new_tokens, do_sample=do_sample, temperature=temperature, top_k=top_k,
                    top_p=top_p, num_beams=num_beams, repetition_penalty=repetition_penalty,
                    no_repeat_ngram_size=no_repeat_ngram_size, min_new_tokens=min_new_tokens,
                    length_penalty=length_penalty, seed=seed)  # fmt: skip
    GenerationConfig(eos_token_id=None, pad_token_id=0, **settings)  # invalid settings fail before any work
    if on_text is not None and (len(prompts) != 1 or num_beams != 1):
        raise ConfigError("on_text: streams one prompt decoded greedily or by sampling (num_beams=1)")
    net, tok, _ = _kept(model, "causal_lm")  # its family checked the tokenizer against the model
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
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        input_ids, mask = pad_sequences([rows[i] for i in idx], config.pad_token_id, left=True)
        found = decode(net, input_ids.to(_device(net)), mask.to(_device(net)), config, stopping=stopping,
                       streamer=streamer)  # fmt: skip
        for i, text in zip(idx, tok.decode_batch(found.token_ids()), strict=True):
            out[i] = text
    if stream is not None and (rest := stream.flush()):
        on_text(rest)
    return out[0] if single else out
