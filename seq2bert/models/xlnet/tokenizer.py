"""XLNet's tokenizer: a SentencePiece unigram vocabulary (Yang et al. 2019, Sect. 3.1: "we tokenize with
SentencePiece"), cased, words marked by a leading ``▁`` (data/unigram.py: the pipeline of transformers'
XLNetTokenizer), with XLNet's framing — the summary token LAST, where the model reads it:

    one text   A <sep> <cls>             pair   A <sep> B <sep> <cls>       (token types 0 … 0 1 … 1 2)

and the specials at the released vocabulary's ids: <unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> =
0 … 8 (<eod>, <eop>: the end of a document, of a paragraph, in the pretraining stream). XLNet pads on the
LEFT (transformers' ``padding_side = "left"``), so that <cls> is the last position of every row; the
tokenizer_config.json says so for transformers' reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import processors

from seq2bert.data.tokenization import Tokenizer
from seq2bert.data.tokenizer_files import save_with_config
from seq2bert.data.unigram import train_unigram
from seq2bert.models.xlnet.config import XLNetConfig

SPECIAL = {
    "unk": "<unk>",
    "bos": "<s>",
    "eos": "</s>",
    "cls": "<cls>",
    "sep": "<sep>",
    "pad": "<pad>",
    "mask": "<mask>",
}  # ids 0..6
EXTRA = ["<eod>", "<eop>"]  # ids 7, 8
CLS_TYPE = 2  # the token type of <cls>; padding has type 0, as transformers' XLNetTokenizer gives it


def set_xlnet_template(backend: tokenizers.Tokenizer) -> None:
    """A <sep> <cls> for one text, A <sep> B <sep> <cls> for two; type ids 0, then 1, then 2 for <cls>."""
    sep, cls = SPECIAL["sep"], SPECIAL["cls"]
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A:0 {sep}:0 {cls}:{CLS_TYPE}",
        pair=f"$A:0 {sep}:0 $B:1 {sep}:1 {cls}:{CLS_TYPE}",
        special_tokens=[(sep, backend.token_to_id(sep)), (cls, backend.token_to_id(cls))],
    )


def train_tokenizer(files: list[Path], vocab_size: int) -> Tokenizer:
    """A cased unigram vocabulary of at most ``vocab_size`` pieces, the specials included, trained on
    ``files`` (UTF-8, plain or .gz, one text a line)."""
    specials = [*SPECIAL.values(), *EXTRA]
    backend = train_unigram(files, vocab_size, specials, SPECIAL["unk"], SPECIAL["mask"], lowercase=False)
    set_xlnet_template(backend)
    return Tokenizer.padded_on(backend, "left")


def save_tokenizer(tokenizer: Any, directory: Path, config: XLNetConfig) -> None:
    """tokenizer.json and the tokenizer_config.json of transformers' XLNetTokenizer (left padding)."""
    save_with_config(
        tokenizer,
        directory,
        "XLNetTokenizer",
        SPECIAL,
        additional_special_tokens=EXTRA,
        do_lower_case=False,
        remove_space=True,
        keep_accents=False,
        padding_side="left",
    )
