"""The incremental-decoder protocol: the three methods every search of seq2bert/decoding calls, and nothing else.

A search never sees an encoder, a cache or a hidden state, only an opaque ``state`` the model hands back:

    state = model.start(input_ids, attention_mask)     read the context: an encoder-decoder encodes the
                                                      source; a decoder-only language model consumes its prompt
    logits, state = model.step(tokens, state)          feed one token per row: tokens (N,) → logits (N, V)
                                                      (a ``StepOutput``, which unpacks so, may also carry the
                                                      decoder's last hidden state (N, d) of those tokens)
    state = model.reorder(state, index)                keep rows ``index`` (N,) of the batch (beam search:
                                                      the state follows the beam each new beam extends)

A state handed to ``step`` or ``reorder`` is not used again: a model may change it in place (the key/value
caches grow in place and are reordered in place, seq2bert/nn/multihead.py).

and, optionally,

    state = model.reserve(state, n)                    room for n more tokens in the caches, made at once
                                                      (a static cache: no step grows one)
    state = model.repeat(state, k)                     each row becomes k consecutive rows
    model.context_hidden_states(state)                 the last hidden states (N, S, d) of the tokens ``start``
                                                      read (a decoder-only model's prompt but its last column;
                                                      None: none, an encoder-decoder's), right after ``start``

which beam search uses, when the model has it, to turn the B inputs into B·K beams; every later ``index``
then keeps each row among its input's K rows, so what depends on the context alone (the Transformer's
encoder output and cross-attention keys/values) can be kept once per input and never reordered. Without
``repeat`` the search calls ``reorder`` with each row repeated K times.

The first token fed to ``step`` (``begin`` below):
- an encoder-decoder (``GenerationConfig.decoder_start_token_id`` set): ``start`` gets the source and every
  row is fed the decoder start token;
- a decoder-only model (``decoder_start_token_id`` None): the prompts are left-padded, as transformers
  wants them; ``start`` gets every prompt but its last column and every row is fed that last column, so
  the first logits are those that follow the whole prompt.

A strategy that compares hidden states (contrastive search, contrastive.py) reads ``StepOutput.hidden_state``
and ``context_hidden_states``; the others read the logits alone, so a toy model may return a plain
``(logits, state)`` pair.

The seq2bert encoder-decoders implement the protocol once, in seq2bert/models/encoder_decoder.py; the tests
drive the searches with toy models that implement nothing else (tests/decoding/test_generation.py has a
bigram language model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from seq2bert.decoding.config import GenerationConfig


@runtime_checkable
class IncrementalDecoder(Protocol):
    """What a model offers the searches (see the module docstring); ``repeat(state, k)`` is optional."""

    def start(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> Any:
        """input_ids, attention_mask (B, S) → the state before the first token is fed."""

    def step(self, tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """tokens (N,) → next-token logits (N, V) and the state after them (a pair, or a ``StepOutput``)."""

    def reorder(self, state: Any, index: torch.Tensor) -> Any:
        """Rows ``index`` (N,) of the state."""


class StepOutput(tuple):
    """What ``step`` returns: it unpacks as the pair ``logits, state`` (the protocol's first form, which every
    caller reads), and also carries ``hidden_state`` (N, d), the decoder's last-layer output for the tokens
    fed (None: the model gives none)."""

    def __new__(cls, logits: torch.Tensor, state: Any, hidden_state: torch.Tensor | None = None):
        out = super().__new__(cls, (logits, state))
        out.hidden_state = hidden_state
        return out

    @property
    def logits(self) -> torch.Tensor:
        return self[0]

    @property
    def state(self) -> Any:
        return self[1]


def hidden_state(out: tuple) -> torch.Tensor | None:
    """The hidden state of a step's output (None for a plain ``(logits, state)`` pair)."""
    return getattr(out, "hidden_state", None)


@dataclass
class SearchStart:
    """A search's starting point: the model's state, the first tokens to feed (B,), the decoder's prompt
    (B, P) — [decoder start] for an encoder-decoder, the prompt for a decoder-only model — with its mask
    (B, P) bool, False on left padding, and the maximum number of new tokens of each input."""

    state: Any
    tokens: torch.Tensor
    prompt: torch.Tensor
    prompt_mask: torch.Tensor
    max_lengths: list[int]


def begin(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
) -> SearchStart:
    """Start decoding a batch: input_ids, attention_mask (B, S) → ``SearchStart``.

    Without a mask, the real tokens are those ≠ ``pad_token_id``; |x| = the number of real tokens of each
    input gives its maximum length (``GenerationConfig.max_lengths``)."""
    mask = attention_mask if attention_mask is not None else input_ids.ne(config.pad_token_id)  # (B, S)
    max_lengths = config.max_lengths(mask.sum(dim=1).tolist())
    if config.decoder_start_token_id is not None:  # an encoder-decoder
        state = reserve(model, model.start(input_ids, attention_mask), max_lengths)
        tokens = torch.full((input_ids.size(0),), config.decoder_start_token_id, device=input_ids.device)
        prompt = tokens[:, None]  # (B, 1)
        return SearchStart(state, tokens, prompt, torch.ones_like(prompt, dtype=torch.bool), max_lengths)
    if input_ids.size(1) == 0:
        raise ValueError("a decoder-only model needs a prompt of at least one token")
    context_mask = None if attention_mask is None else attention_mask[:, :-1]
    state = reserve(
        model, model.start(input_ids[:, :-1], context_mask), max_lengths
    )  # the prompt but its last column
    return SearchStart(state, input_ids[:, -1], input_ids, mask.bool(), max_lengths)


def reserve(model: IncrementalDecoder, state: Any, max_lengths: list[int]) -> Any:
    """The state with room for the longest decode (each input's maximum new tokens, and the first token fed)
    where the model can make it at once (``reserve``)."""
    if hasattr(model, "reserve"):
        return model.reserve(state, max(max_lengths, default=0) + 1)
    return state


def repeat(model: IncrementalDecoder, state: Any, k: int, batch_size: int, device: torch.device) -> Any:
    """The state of k consecutive rows per input: ``model.repeat`` when the model shares its context among
    them, else ``model.reorder`` with each row taken k times."""
    if hasattr(model, "repeat"):
        return model.repeat(state, k)
    return model.reorder(state, torch.arange(batch_size, device=device).repeat_interleave(k))
