"""ALBERT's tokenizer: a SentencePiece unigram vocabulary (Lan et al. 2019, Sect. 4.1: "we tokenize using
SentencePiece (Kudo & Richardson, 2018) as in XLNet … a vocabulary size of 30,000"), lower-cased, words
marked by a leading ``▁`` (data/unigram.py: the pipeline of transformers' AlbertTokenizer), with BERT's
framing:

    one text   [CLS] A [SEP]             pair   [CLS] A [SEP] B [SEP]       (token types 0 … 0 1 … 1)

and the specials at ALBERT's ids: <pad> <unk> [CLS] [SEP] [MASK] = 0 1 2 3 4. ``train_tokenizer`` learns a
vocabulary (a pretraining run calls it when it is given no tokenizer). A published directory's
tokenizer.json loads through data/tokenization.py as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seq2bert.data.tokenization import Tokenizer, set_bert_template
from seq2bert.data.tokenizer_files import save_with_config
from seq2bert.data.unigram import WORD_START, train_unigram
from seq2bert.models.albert.config import AlbertConfig

__all__ = ["SPECIAL", "WORD_START", "save_tokenizer", "train_tokenizer"]

SPECIAL = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}  # ids 0..4


def train_tokenizer(files: list[Path], vocab_size: int) -> Tokenizer:
    """A lower-cased unigram vocabulary of at most ``vocab_size`` pieces, the specials included, trained on
    ``files`` (UTF-8, plain or .gz, one text a line)."""
    backend = train_unigram(
        files, vocab_size, list(SPECIAL.values()), SPECIAL["unk"], SPECIAL["mask"], lowercase=True
    )
    set_bert_template(backend)
    return Tokenizer(backend)


def save_tokenizer(tokenizer: Any, directory: Path, config: AlbertConfig) -> None:
    """tokenizer.json and the tokenizer_config.json of transformers' AlbertTokenizer."""
    save_with_config(
        tokenizer,
        directory,
        "AlbertTokenizer",
        SPECIAL,
        bos_token=SPECIAL["cls"],
        eos_token=SPECIAL["sep"],
        do_lower_case=True,
        keep_accents=False,
        model_max_length=config.max_position_embeddings,
    )
