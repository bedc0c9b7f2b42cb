"""One decoding path: ``generate(model, input_ids, attention_mask, config)``.

Any model that implements the incremental-decoder protocol (protocol.py: ``start``, ``step``, ``reorder``,
optionally ``repeat``) is decoded by the strategy the config asks for (strategies.py: greedy, sampling, beam
search, …) with the same rules (rules.py) and the same limits
(config.py). The result holds both views callers want:

- ``sequences``: the tensor transformers' ``generate`` returns, each row [decoder prompt] y_1 … y_n then
  [PAD] (an encoder-decoder's prompt is [decoder start]; a decoder-only model's is its prompt);
- ``hypotheses``: the n-best list of each input with scores and log-probabilities, and ``token_ids()``,
  the best hypothesis of each input as a clean token list (no [EOS], no padding).

Every caller goes through here: the models' ``generate`` (seq2bert/models/encoder_decoder.py) and the
translation recipes (``Decoding``, at the end of this file: the settings their results were decoded with).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.config import settings as config_settings
from seq2bert.decoding.protocol import IncrementalDecoder
from seq2bert.decoding.rules import Hypothesis
from seq2bert.decoding.stopping import StoppingCriterion, Streamer
from seq2bert.decoding.strategies import select
from seq2bert.errors import ConfigError


@dataclass
class GenerationOutput:
    """What ``generate`` found.

    ``sequences`` (B · R, P + L), R = num_return_sequences, L the longest hypothesis: row b · R + i is the
    i-th best hypothesis of input b after the decoder prompt (P tokens), then ``pad_token_id`` (an input with
    fewer than R hypotheses gets rows of padding after its prompt).
    ``hypotheses``: per input, up to R hypotheses, best first."""

    sequences: torch.Tensor
    hypotheses: list[list[Hypothesis]]
    config: GenerationConfig

    def token_ids(self) -> list[list[int]]:
        """The best hypothesis of each input, cut at its first [EOS] and without padding."""
        c = self.config
        return [
            strip_special(
                hyps[0].tokens if hyps else [], eos_token_id=c.eos_token_id, pad_token_id=c.pad_token_id
            )
            for hyps in self.hypotheses
        ]


@torch.no_grad()
def generate(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
    *,
    stopping: StoppingCriterion | None = None,
    streamer: Streamer | None = None,
    draft: IncrementalDecoder | None = None,
) -> GenerationOutput:
    """Decode a batch: input_ids, attention_mask (B, S) (None: the tokens ≠ ``pad_token_id`` are real) →
    ``GenerationOutput``. Right-padded sources for an encoder-decoder, left-padded prompts for a
    decoder-only model (protocol.py). ``stopping`` ends a row (e.g. ``StopStrings``); ``streamer`` is
    called with each step's tokens (B,) — greedy decoding and sampling only (stopping.py). ``draft``: a
    smaller model of the same vocabulary proposing tokens that ``model`` checks (speculative decoding,
    speculative.py): greedy decoding's tokens, sampling's distribution, fewer passes of ``model``."""
    name, strategy = select(config, drafted=draft is not None)
    if streamer is not None and not strategy.streams:
        raise ConfigError(
            f"streamer: {name} search (num_beams={config.num_beams}) knows its tokens only at the end; "
            "stream with num_beams=1"
        )
    extra = {"draft": draft} if draft is not None else {}
    hypotheses = strategy.search(
        model, input_ids, attention_mask, config, stopping=stopping, streamer=streamer, **extra
    )
    if config.decoder_start_token_id is not None:
        prompt = torch.full((input_ids.size(0), 1), config.decoder_start_token_id, device=input_ids.device)
    else:
        prompt = input_ids
    sequences = pad_hypotheses(hypotheses, prompt, config.num_return_sequences, config.pad_token_id)
    return GenerationOutput(sequences, hypotheses, config)


def pad_hypotheses(
    hypotheses: list[list[Hypothesis]], prompt: torch.Tensor, n: int, pad_token_id: int
) -> torch.Tensor:
    """The n best hypotheses of each input as one tensor, each after its input's prompt (B, P):
    → (B · n, P + L), L the longest hypothesis, padded with ``pad_token_id``."""
    rows = [hyps[i].tokens if i < len(hyps) else [] for hyps in hypotheses for i in range(n)]
    L = max((len(row) for row in rows), default=0)
    padded = [row + [pad_token_id] * (L - len(row)) for row in rows]
    new = torch.tensor(padded, dtype=torch.long, device=prompt.device).view(len(rows), L)  # (B · n, L)
    return torch.cat([prompt.repeat_interleave(n, dim=0), new], dim=1)  # (B · n, P + L)


def strip_special(ids: list[int], *, eos_token_id: int | None, pad_token_id: int) -> list[int]:
    """Cut a decoded row at its first [EOS] and drop padding."""
    cut = []
    for i in ids:
        if i == eos_token_id:
            break
        if i != pad_token_id:
            cut.append(i)
    return cut


# --- the translation recipes' settings: ``tok`` gives the special ids (bos starts the decoder)
@dataclass(frozen=True)
class Decoding:
    """How translations are searched: greedy (``num_beams`` = 1) or beam search, at most ⌊max_len_a · |x| +
    max_len_b⌋ tokens per sentence; GNMT's length penalty ("wu" form) and no forced token, the settings the
    recipes' results were decoded with (``generation_config`` is the full GenerationConfig). ``settings``:
    any other setting of GenerationConfig, as (name, value) pairs — ``Decoding.of(**settings)`` sorts them."""

    num_beams: int = 1
    length_penalty: float = 1.0
    max_len_a: float = 1.5
    max_len_b: int = 10
    max_positions: int | None = None  # the decoder's position table, which no translation outgrows
    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, **settings: Any) -> Decoding:
        """A Decoding from GenerationConfig's settings (by name: an unknown one is a ConfigError); a setting
        left out, or None for one of the four above, keeps the recipes' default."""
        given = config_settings(settings, where="decoding")
        own = {f.name for f in fields(cls)} - {"settings", "max_positions"}
        mine = {k: v for k, v in given.items() if k in own and v is not None}
        other = tuple(sorted((k, v) for k, v in given.items() if k not in own))
        decoding = cls(**mine, settings=other)
        decoding.generation_config(None)  # invalid settings fail here, before any model is loaded
        return decoding

    def generation_config(self, tok) -> GenerationConfig:
        """``tok``: the tokenizer giving the special ids (None: placeholders, to validate the settings)."""
        ids = (
            dict(eos_token_id=1, pad_token_id=0, decoder_start_token_id=2)
            if tok is None
            else dict(
                eos_token_id=tok.eos_token_id,
                pad_token_id=tok.pad_token_id,
                decoder_start_token_id=tok.bos_token_id,
            )
        )
        other = dict(self.settings)
        per_input = other.get("max_new_tokens") is None  # else one limit for every input replaces a and b
        return GenerationConfig(
            num_beams=self.num_beams,
            length_penalty=self.length_penalty,
            length_penalty_form="wu",
            max_len_a=self.max_len_a if per_input else None,
            max_len_b=self.max_len_b if per_input else None,
            max_positions=self.max_positions,
            **ids,
            **other,
        )

    def ids(self, model, tok, input_ids: torch.Tensor, mask: torch.Tensor, draft=None) -> list[list[int]]:
        """The best translation of each source, without [BOS] / [EOS] / padding (``draft``: speculative
        decoding's draft model)."""
        return generate(model, input_ids, mask, self.generation_config(tok), draft=draft).token_ids()


GREEDY = Decoding()
BEAM5 = Decoding(num_beams=5)
