"""ALBERT's tokenizer: a SentencePiece unigram vocabulary (Lan et al. 2019, Sect. 4.1: "we tokenize using
SentencePiece (Kudo & Richardson, 2018) as in XLNet … a vocabulary size of 30,000"; the unigram language
model of Kudo 2018), lower-cased, words marked by a leading ``▁``, with BERT's framing:

    one text   [CLS] A [SEP]             pair   [CLS] A [SEP] B [SEP]       (token types 0 … 0 1 … 1)

and the specials at ALBERT's ids: <pad> <unk> [CLS] [SEP] [MASK] = 0 1 2 3 4. The pipeline is the one
transformers' AlbertTokenizer (fast) builds around a vocabulary:

    normalise      `` → ",  '' → ",  NFKD, strip accents, lower-case
    pre-tokenise   split on whitespace, then ▁ before every word (Metaspace, prepend_scheme "always")
    model          Unigram: the segmentation of highest Σ log p(piece), <unk> (id 1) for an unseen character
    post-process   the template above

Departure: a published spiece.model also carries SentencePiece's own normaliser (nmt_nfkc, a precompiled
character map; transformers keeps it as a ``Precompiled`` step); a vocabulary we train has none, and its
whitespace handling is the whitespace split above. ``train_tokenizer`` learns a vocabulary with the
``tokenizers`` library's UnigramTrainer (SentencePiece's EM and pruning); a pretraining run calls it when it
is given no tokenizer. A published directory's tokenizer.json loads through data/tokenization.py as it is.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, trainers

from seq2bert.data.text_files import training_texts
from seq2bert.data.tokenization import Tokenizer, set_bert_template
from seq2bert.data.tokenizer_files import save_with_config
from seq2bert.errors import DataError
from seq2bert.models.albert.config import AlbertConfig

SPECIAL = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}  # ids 0..4
WORD_START = "▁"  # SentencePiece's mark of a word's first piece (U+2581)


def albert_pipeline(unigram: models.Unigram) -> tokenizers.Tokenizer:
    """``unigram`` with the normaliser, pre-tokeniser and decoder of transformers' AlbertTokenizer
    (do_lower_case=True, keep_accents=False); the template is added once the specials have ids."""
    backend = tokenizers.Tokenizer(unigram)
    backend.normalizer = normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),  # é → e + ◌́, which the next step drops
            normalizers.StripAccents(),
            normalizers.Lowercase(),
        ]
    )
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always"),
        ]
    )
    backend.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
    return backend


def train_tokenizer(files: list[Path], vocab_size: int) -> Tokenizer:
    """A lower-cased unigram vocabulary of at most ``vocab_size`` pieces, the specials included, trained on
    ``files`` (UTF-8, plain or .gz, one text a line)."""
    texts = training_texts(files)
    first = next(texts, None)
    if first is None:
        raise DataError("no text to train the tokenizer on (the input has no non-empty lines)")
    backend = albert_pipeline(models.Unigram())
    specials = [
        AddedToken(t, special=True, normalized=False, lstrip=t == SPECIAL["mask"]) for t in SPECIAL.values()
    ]
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        unk_token=SPECIAL["unk"],
        max_piece_length=16,  # SentencePiece's default
        show_progress=False,
    )
    backend.train_from_iterator(itertools.chain([first], texts), trainer=trainer)
    backend = canonical(backend)
    ids = [backend.token_to_id(t) for t in SPECIAL.values()]
    assert ids == list(range(len(SPECIAL))), f"ALBERT's specials not at ids 0..4: {ids}"
    set_bert_template(backend)
    return Tokenizer(backend)


PENALTY_STEP = 1e-4  # the trainer's min_score_penalty_delta


def canonical(backend: tokenizers.Tokenizer) -> tokenizers.Tokenizer:
    """The trained unigram vocabulary in an order and with scores that do not depend on the process, so that
    the same text always gives the same tokenizer.json: the trainer gives each character it must keep but did
    not learn as a piece the lowest score plus k · 1e-4, k in the order of a hash set, which changes from
    process to process (its finalize step). Those characters get the same scores in code-point order; every
    score is rounded to 1e-8 (the trainer's EM sums run in a hash map's order too, so they differ in their last
    bits, ~1e-15); and the pieces after the specials are ordered by score, then piece."""
    data = json.loads(backend.to_str())
    vocab = data["model"]["vocab"]  # [[piece, score], …], the specials first
    n = len(SPECIAL)
    pieces = vocab[n:]
    low = min(score for _, score in pieces)
    added = [
        i
        for i, (piece, score) in enumerate(pieces)
        if len(piece) == 1 and abs((score - low) / PENALTY_STEP - round((score - low) / PENALTY_STEP)) < 1e-6
    ]
    scores = sorted(pieces[i][1] for i in added)
    for i, score in zip(sorted(added, key=lambda i: pieces[i][0]), scores, strict=True):
        pieces[i] = [pieces[i][0], score]
    pieces = [[piece, round(score, 8)] for piece, score in pieces]
    data["model"]["vocab"] = vocab[:n] + sorted(pieces, key=lambda p: (-p[1], p[0]))
    return tokenizers.Tokenizer.from_str(json.dumps(data))


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
