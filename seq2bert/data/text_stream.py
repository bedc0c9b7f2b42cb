"""Incremental detokenisation: the text of a stream of token ids, given piece by piece as the ids come.

Decoding each new id on its own is wrong in two ways. A byte-level BPE token may hold part of a character
(an emoji is four bytes, often two or more tokens): decoded alone it gives U+FFFD, the replacement
character. And a decoder may write a token differently depending on what follows it (GPT-1's ``</w>`` is a
space between words and nothing at the end of the text). So ``TextStream`` decodes a window of the ids —
the ids of the last piece it gave and the ids since — and gives the part of that text beyond the last
piece, once it does not end in U+FFFD: only complete characters are ever given, and the pieces joined are
the text of all the ids (``decode(ids)``), the end given by ``flush``. This is how vLLM and transformers'
``TextStreamer`` detokenise their output.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

REPLACEMENT = "\ufffd"  # what a decoder writes for an incomplete UTF-8 sequence


class TextStream:
    """``push(ids)`` → the new complete text (maybe ""); ``flush()`` → what is left at the end.

    ``tokenizer``: anything with ``decode(ids, skip_special_tokens=…)`` (seq2bert's Tokenizer)."""

    def __init__(self, tokenizer: Any, skip_special_tokens: bool = True):
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.ids: list[int] = []
        self.start = 0  # the window: ids[start:] is decoded; ids[start:given] made the last piece given
        self.given = 0

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens)

    def push(self, ids: Iterable[int]) -> str:
        """Take more ids; return the text they complete."""
        self.ids.extend(int(i) for i in ids)
        before = self._decode(self.ids[self.start : self.given])
        text = self._decode(self.ids[self.start :])
        if len(text) <= len(before) or text.endswith(REPLACEMENT) or not text.startswith(before):
            return ""  # nothing new yet, or an incomplete character at the end
        self.start, self.given = self.given, len(self.ids)
        return text[len(before) :]

    def flush(self) -> str:
        """The rest of the text (an incomplete character at the very end comes out as U+FFFD)."""
        before = self._decode(self.ids[self.start : self.given])
        text = self._decode(self.ids[self.start :])
        self.start = self.given = len(self.ids)
        return text[len(before) :]
