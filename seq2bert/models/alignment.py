"""What a translation looked at: the attention weights of an encoder-decoder over its source while it
produced its own translation (Bahdanau et al. 2015, Figure 3), per layer and head for the Transformer.

The weights come from a teacher-forced pass over the model's translation, which gives the weights the search
saw (every model's attention at step t depends only on the source and the tokens before t)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from seq2bert.decoding.generation import GREEDY, Decoding
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.models.family import max_input_length

log = logging.getLogger(__name__)


def encoder_decoder(directory) -> None:
    """A CheckpointError unless ``directory`` holds an encoder-decoder (what translates)."""
    family = registry.family_at(directory)
    if family.kind != "encoder-decoder":
        raise CheckpointError(f"{directory}: a {family.model_type} model, not an encoder-decoder")


def loaded(checkpoint_or_model, tokenizer=None):
    """(model in eval mode, tokenizer) of an encoder-decoder checkpoint (path), or of a model object and the
    tokenizer given with it."""
    if isinstance(checkpoint_or_model, (str, Path)):
        encoder_decoder(checkpoint_or_model)
        model, tokenizer = registry.load(checkpoint_or_model)
    else:
        model = checkpoint_or_model.eval()
    if tokenizer is None:
        raise ValueError("pass tokenizer= with a model object")
    return model, tokenizer


# the most source tokens a translation reads when the model has no position table to say (a recurrent model
# reads any length, but its search grows with the source: max_len_a · |x| + max_len_b steps over |x| tokens)
MAX_SOURCE_LENGTH = 512


def source_limit(config, asked: int | None = None) -> int:
    """The most source tokens a translation by a model of ``config`` reads: ``asked``, by default the model's
    positions (a Transformer's table, learned or sinusoidal) else MAX_SOURCE_LENGTH — never past a table."""
    table = max_input_length(config)
    if asked is not None and asked < 1:
        raise ConfigError(f"max_source_length: expected at least 1 token, got {asked}")
    limit = asked or table or MAX_SOURCE_LENGTH
    return min(limit, table) if table else limit


def within_positions(decoding: Decoding, config) -> Decoding:
    """``decoding`` with no translation longer than the decoder's position table (a Transformer's; an LSTM
    has none and keeps ⌊max_len_a · |x| + max_len_b⌋)."""
    return replace(decoding, max_positions=max_input_length(config))


def source_ids(
    tokenizer, texts: list[str], limit: int | None = None, setting: str = "max_source_length"
) -> list[list[int]]:
    """The source token ids of ``texts``, as the checkpoint's tokenizer encodes a source; ``limit``: each cut
    to its first ``limit`` tokens (a Marian source keeps its </s>), with a warning naming ``setting``."""
    if hasattr(tokenizer, "source_ids"):  # a checkpoint's own source convention (Marian: pieces + </s>)
        rows = tokenizer.source_ids(texts)
    else:
        rows = [ids or [tokenizer.unk_token_id] for ids in tokenizer.ids_batch(texts)]
    for i, ids in enumerate(rows):
        if limit is not None and len(ids) > limit:
            log.warning("a source of %d tokens truncated to its first %d (%s)", len(ids), limit, setting)
            rows[i] = ids[: limit - 1] + ids[-1:] if hasattr(tokenizer, "source_ids") else ids[:limit]
    return rows


@dataclass
class Alignment:
    """What the decoder looked at: ``weights[t, s]`` is the attention of target token t on source token s."""

    source_tokens: list[str]
    target_tokens: list[str]  # the translation's tokens, then [EOS]
    weights: torch.Tensor  # (T, S)
    translation: str
    # every layer and head where the model has them: "encoder" (h, S, S), "decoder" (h, T, T) and "cross"
    # (h, T, S) per layer (the Transformer); a recurrent model has one "cross" layer of one head: weights
    layers: dict[str, list[torch.Tensor]] = field(default_factory=dict)


@torch.no_grad()
def align(
    checkpoint_or_model,
    text: str,
    *,
    tokenizer=None,
    decoding: Decoding = GREEDY,
    max_source_length: int | None = None,
    setting: str = "max_source_length",
) -> Alignment:
    """Translate ``text`` and return the attention weights of the translation (for plotting, Bahdanau Fig. 3).

    The weights come from a teacher-forced pass over the model's own translation, which gives the same
    weights as the search did. Models without attention raise ValueError. A source longer than
    ``max_source_length`` tokens (``source_limit``: the model's positions, else 512) is truncated, with a
    warning naming ``setting`` (the caller's name for the limit).
    """
    model, tokenizer = loaded(checkpoint_or_model, tokenizer)
    device = next(model.parameters()).device
    decoding = within_positions(decoding, model.config)
    src = source_ids(tokenizer, [text], source_limit(model.config, max_source_length), setting)[0]
    input_ids = torch.tensor([src], device=device)
    mask = torch.ones_like(input_ids)
    bos = torch.tensor([[tokenizer.bos_token_id]], device=device)
    if model(input_ids, mask, bos, output_attentions=True).attentions is None:
        raise ValueError(
            f"{type(model).__name__} has no attention to show (model_type {model.config.model_type})"
        )
    hyp = decoding.ids(model, tokenizer, input_ids, mask)[0]
    # the search stopped at [EOS] unless it reached the maximum length
    ended = len(hyp) < decoding.generation_config(tokenizer).max_lengths([len(src)])[0]
    tokens = [*hyp, tokenizer.eos_token_id] if ended else hyp
    decoder_input_ids = torch.tensor([[tokenizer.bos_token_id, *tokens[:-1]]], device=device)
    out = model(input_ids, mask, decoder_input_ids, output_attentions=True)
    weights = out.attentions[0].float().cpu()
    layers = {"cross": [weights[None]]}
    if getattr(out, "encoder_attentions", None):
        layers = {
            kind: [w[0].float().cpu() for w in getattr(out, f"{kind}_attentions")]
            for kind in ("encoder", "decoder", "cross")
        }
    return Alignment(
        source_tokens=[tokenizer.id_to_token(i) for i in src],
        target_tokens=[tokenizer.id_to_token(i) for i in hyp] + (["[EOS]"] if ended else []),
        weights=weights,
        translation=tokenizer.decode(hyp),
        layers=layers,
    )
