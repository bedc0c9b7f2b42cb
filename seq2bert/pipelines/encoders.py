"""Encoder pipelines: sentence embeddings (the pooled contextual vectors, as sentence-transformers pools
them), a word's contextual vectors, and fill-mask."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

from seq2bert.data.word_corpus import words_of
from seq2bert.errors import CheckpointError, UserError
from seq2bert.models import registry
from seq2bert.models.family import max_input_length
from seq2bert.pipelines.loading import (
    ENCODER,
    _base,
    _load,
    default_max_length,
    inference_precision,
    model_pair,
    one_text,
    pad_id,
    positions,
    said_truncated,
    sorted_batches,
    text_list,
)


def _encode(encoder, tok, texts: list[str], max_length: int) -> tuple[dict, list[list[str]] | None]:
    """The encoder's inputs for ``texts``: the tokenizer's ids (padded, truncated to ``max_length``), or what
    its family makes of texts (ELMo: each word's characters), with the tokens they stand for."""
    family = registry.family_of(encoder)
    if family.text_inputs is not None:
        return family.text_inputs(encoder, tok, list(texts))
    batch = tok.encode_batch(
        list(texts), max_length=max_length, truncation="longest_first", padding="longest", return_tensors="pt"
    )
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


def encoder_of(net, model, pipeline: str):
    """The encoder whose token vectors ``pipeline`` reads: the base model of ``net``; an encoder-decoder (a
    translation run) is a one-line UserError — its vectors are the encoder's, but of source sentences in its
    own vocabulary, and no pooling was trained for them."""
    family = registry.family_of(net)
    if family.kind == "encoder-decoder":
        where = model if isinstance(model, (str, Path)) else "the model"
        raise UserError(
            f"{pipeline}: {where} is a translation model ({family.model_type}, an encoder-decoder); "
            "expected an encoder (BERT, a sentence-transformers model, ELMo, …)"
        )
    return _base(net)


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


def _in_order(encoder, tok, texts: list[str], batch_size: int):
    """(indices, inputs) of the texts' batches in their order, as the family makes its inputs of texts."""
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        yield range(start, start + len(chunk)), _encode(encoder, tok, chunk, 0)[0]


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
    bf16: bool | str = "auto",
) -> torch.Tensor:
    """Sentence embeddings (n, hidden): each text's token vectors pooled as the directory's
    sentence-transformers modules say — by default averaged over its tokens ([CLS] and [SEP] included,
    padding excluded) — and L2-normalised when ``normalize``, whose default (None) is what the directory's
    modules.json says (a Normalize module: normalised, as sentence-transformers' ``encode`` gives). Texts
    longer than ``max_length`` tokens are truncated, with a warning (default: the directory's
    sentence-transformers setting, else the model's positions; never past them). ``layer``: which layer's vectors (``_layer``: the final one for
    BERT, the average of the layers for ELMo, unless an index or "mean" is given).

    Speed: the texts are read in batches of similar length, longest first (as sentence-transformers' ``encode``
    does), and in bf16 where the device computes bf16 natively (``bf16="auto"``; ``bf16=False``: fp32;
    loading.inference_precision: a directory's model as a bf16-weights copy, a model passed in under
    autocast)."""
    texts = text_list(texts, "embed: texts")
    static = static_vectors(model)
    if static is not None and (int8 or layer is not None):
        raise UserError("static word vectors have no layers (--layer) and nothing to quantize (--int8)")
    if static is not None:  # one vector per word: the text's the mean of its words'
        vectors = torch.stack(
            [static_lookup(static, words_of(t, False), skip_unknown=True).mean(0) for t in texts]
        )
        return F.normalize(vectors, dim=-1) if normalize else vectors
    net, tok, directory = _load(model, ENCODER, int8)
    encoder = encoder_of(net, model, "embed")
    pooling, normalized = sentence_modules(directory)
    normalize = normalized if normalize is None else normalize
    table = max_input_length(
        encoder.config, 512
    )  # clamped to it: max_length=10**6 reads the model's positions
    max_length = positions(encoder.config, max_length or default_max_length(directory, table))
    device = next(encoder.parameters()).device
    if registry.family_of(encoder).text_inputs is None:  # token ids: batches of similar length
        batches = sorted_batches(tok, texts, batch_size, max_length, pad_id(tok, encoder.config))
    else:  # a model that reads each word's characters (ELMo): the texts in their order
        batches = _in_order(encoder, tok, texts, batch_size)
    order, out = [], []
    with inference_precision(net, bf16, kept=directory is not None) as run:
        for indices, batch in batches:
            batch = {k: v.to(device) for k, v in batch.items()}
            hidden = _layer(_base(run), batch, layer)
            order += indices
            out.append(POOLING[pooling](hidden.float(), batch["attention_mask"]))
    if not out:
        return torch.zeros(0, encoder.config.hidden_size)
    pooled = torch.cat(out)  # (n, H) in the batches' order → the texts' order
    vectors = torch.empty_like(pooled).index_copy_(0, torch.tensor(order, device=device), pooled)
    return F.normalize(vectors, dim=-1) if normalize else vectors


def static_vectors(model):
    """The static word vectors at ``model`` — a train-vectors run, a word2vec / GloVe / fastText checkpoint, a
    file of published vectors — as (WordVectors, their model or None); None for any other model."""
    if not isinstance(model, (str, Path)):
        return None
    from seq2bert.models.static_vectors import VECTORS_FILE, word_vectors_at

    p = Path(model)
    if p.is_file() or (p / VECTORS_FILE).is_file():
        return word_vectors_at(p)
    if (p / "config.json").is_file() and registry.family_at(p).word_vectors:
        return word_vectors_at(p)
    return None


def static_lookup(static, words: list[str], skip_unknown: bool = False) -> torch.Tensor:
    """(n, d) the vectors of ``words``, each as it is or else lower-cased; fastText composes the ones it
    never saw; a word the vectors lack is left out (``skip_unknown``) or an error naming it."""
    wv, model = static
    rows = []
    for w in words:
        found = wv.index.get(w, wv.index.get(w.lower()))
        if found is not None:
            rows.append(wv.vectors[found])
            continue
        made = model.vectors_for([w.lower()])[0][0] if model is not None else None
        if (made is None or not float(made.norm())) and skip_unknown:
            continue
        if made is None or not float(made.norm()):
            raise UserError(f"{w!r} is not in the vectors' vocabulary ({len(wv.words):,} words)")
        rows.append(made.float())
    if not rows:
        raise UserError(
            f"no word of {' '.join(words)[:60]!r} has a vector (static vectors average a text's words)"
        )
    return torch.stack(rows)


@torch.no_grad()
def word_vectors(texts: list[str], word: str, model, *, layer: int | str | None = None) -> torch.Tensor:
    """The contextual vector (averaged over its WordPieces) of the first occurrence of ``word`` in each
    text: (n, hidden), at ``layer`` (as ``embed``'s). The same word in different contexts gets different
    vectors — the point of contextual embeddings ("bank" of a river and of money)."""
    texts, word = text_list(texts, "word_vectors: texts"), one_text(word, "word_vectors: word")
    static = static_vectors(model)
    if static is not None and layer is not None:
        raise UserError("static word vectors have no layers (--layer)")
    if static is not None:  # word2vec, GloVe, fastText: one vector for every sense, whatever the text
        for text in texts:
            if word.lower() not in (w.lower() for w in words_of(text, False)):
                raise UserError(f"word_vectors: {word!r} is not in {text!r}")
        return static_lookup(static, [word]).expand(len(texts), -1).clone()
    net, tok, _ = _load(model, ENCODER)
    encoder = encoder_of(net, model, "word_vectors")
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
    return torch.stack(out) if out else torch.zeros(0, encoder.config.hidden_size)


def fill_head(model) -> str:
    """The head that fills a mask: the masked LM; of XLNet, its permutation LM ("pretraining")."""
    if isinstance(model, (str, Path)):
        directory = registry.checkpoint_dir(registry.local_path(model))
        if not (Path(directory) / "config.json").is_file():
            return "masked_lm"  # _load says what is missing
        family = registry.family_at(directory)
    else:
        family = registry.family_of(model_pair(model)[0])
    return "pretraining" if family.pretraining_objective == "permutation_lm" else "masked_lm"


def permuted_logits(net, batch: dict, positions: list[int]) -> torch.Tensor:
    """XLNet's prediction of the tokens at ``positions`` from every other token (Yang et al. 2019): each a
    target of the query stream, whose content no position reads (perm_mask); (len(positions), V)."""
    T = batch["input_ids"].size(1)
    perm_mask = torch.zeros(1, T, T, device=batch["input_ids"].device)
    perm_mask[:, :, positions] = 1.0  # (1, T, T): no query reads a masked token
    target_mapping = torch.zeros(1, len(positions), T, device=perm_mask.device)
    target_mapping[0, torch.arange(len(positions)), positions] = 1.0  # (1, P, T)
    return net(
        batch["input_ids"],
        batch["attention_mask"],
        token_type_ids=batch["token_type_ids"],
        perm_mask=perm_mask,
        target_mapping=target_mapping,
        use_mems=False,
    ).logits[0]


@torch.no_grad()
def fill_mask(text: str, model, *, top_k: int = 5, int8: bool = False) -> list[dict] | list[list[dict]]:
    """The ``top_k`` most probable tokens for the [MASK] (the tokenizer's mask: RoBERTa's ``<mask>``) in
    ``text``: [{"token", "token_id", "score", "sequence"}, …] best first (one such list per [MASK] when there
    are several). Of an ELECTRA run's checkpoint, the generator (generator/) fills the mask; XLNet predicts
    each mask from every other token with its query stream (``permuted_logits``). A text longer than the
    model's positions is truncated to them, with a warning."""
    text = one_text(text, "fill_mask: text")
    head = fill_head(model)
    net, tok, _ = _load(model, head, int8)
    if getattr(net.config, "is_decoder", False):  # BERT's LTR: its LM head was trained on the next token
        raise UserError(
            f"fill_mask: {model if isinstance(model, (str, Path)) else 'the model'} is a left-to-right "
            "language model (is_decoder): it predicts the next token, not a masked one; use generate"
        )
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
    batch = {k: enc[k].to(device) for k in ("input_ids", "attention_mask", "token_type_ids")}
    if head == "pretraining":
        logits = dict(zip(positions, permuted_logits(net, batch, positions), strict=True))
    else:
        logits = net(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).logits[0]
    results = []
    for p in positions:
        probs = logits[p].float().softmax(-1)
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
