"""Stopping a row on something other than [EOS] or its maximum length, and watching the tokens as they come.

Both are arguments of ``generate`` (generation.py), beside the ``GenerationConfig`` rather than in it: what
they need — a tokenizer to read the text, a terminal to print it on — is not a setting of the search.

    stopping(sequences) → (N,) bool     a stopping criterion: sequences (N, T) are rows' tokens so far — the
                                        decoder prompt (left padding included) and the new tokens, the one
                                        just chosen last; True ends the row there, with that token, as [EOS]
                                        would (transformers' StoppingCriteria; beam search asks it of every
                                        candidate and finishes a hypothesis that meets it, as transformers does)
    streamer(tokens)                    called by greedy decoding and sampling after every step with the
                                        token (N,) each row took ([PAD] for a row that had already ended)

``StopStrings`` is the criterion of transformers' ``stop_strings`` (StopStringCriteria): a row stops as soon
as a new token completes one of the strings in its text — the string occurs in the decoded text of the row
and ends within the text of the token just chosen (it may begin in earlier tokens, the prompt's included,
and the token may run past its end: for "stop", "…st" + "opped" stops). A string already in the text
before the token does not stop the row again. The stop string and the token that completed it stay in the
output, as in transformers. transformers matches the strings against the vocabulary's token strings; this
matches them against the tokenizer's decoded text, which is the same for the byte-level and GPT-1 BPEs on
ordinary text and is what a reader of the output sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from os.path import commonprefix
from typing import Any

import torch

from seq2bert.errors import ConfigError

StoppingCriterion = Callable[[torch.Tensor], torch.Tensor]
Streamer = Callable[[torch.Tensor], Any]


class StopStrings:
    """A stopping criterion: the row's text has just come to contain one of ``strings`` (module docstring).

    ``tokenizer``: anything with ``decode_batch(rows, skip_special_tokens=…)`` (seq2bert's Tokenizer).
    Special tokens are skipped when decoding, so left padding never takes part in a match."""

    def __init__(self, tokenizer: Any, strings: Sequence[str]):
        if isinstance(strings, str):
            strings = [strings]
        strings = list(strings)
        if not strings or not all(isinstance(s, str) and s for s in strings):
            raise ConfigError(f"stop_strings: expected one or more non-empty strings, got {strings!r}")
        if tokenizer is None:
            raise ConfigError("stop_strings: needs the model's tokenizer to read the text (tokenizer=…)")
        self.tokenizer = tokenizer
        self.strings = strings
        # A string of L characters is at most 4L UTF-8 bytes, and every token stands for at least one byte
        # (one character for GPT-1): the last 4L + 1 tokens hold any match that ends in the last one.
        self.window = 4 * max(len(s) for s in strings) + 1

    def __call__(self, sequences: torch.Tensor) -> torch.Tensor:
        """sequences (N, T) → (N,) bool: True where the last token completed a stop string."""
        rows = sequences[:, -self.window :].tolist()
        decode = self.tokenizer.decode_batch
        before = decode([row[:-1] for row in rows], skip_special_tokens=True)
        after = decode(rows, skip_special_tokens=True)
        hits = [self._completed(old, new) for old, new in zip(before, after, strict=True)]
        return torch.tensor(hits, dtype=torch.bool, device=sequences.device)

    def _completed(self, before: str, after: str) -> bool:
        """Whether a stop string occurs in ``after`` ending past the text ``before`` already had (the common
        prefix: a byte-level token that completes a character changes the text's last character)."""
        settled = len(commonprefix([before, after]))
        return any(s in after[max(0, settled - len(s) + 1) :] for s in self.strings)
