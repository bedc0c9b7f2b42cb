"""SentencePiece unigram vocabularies (Kudo 2018; Kudo & Richardson 2018), the kind ALBERT and XLNet read:
the pipeline transformers' AlbertTokenizer and XLNetTokenizer (fast) build around a vocabulary, and its
training with the ``tokenizers`` library's UnigramTrainer (SentencePiece's EM and pruning).

    normalise      `` → ",  '' → ",  NFKD, strip accents, (lower-case)
    pre-tokenise   split on whitespace, then ▁ before every word (Metaspace, prepend_scheme "always")
    model          Unigram: the segmentation of highest Σ log p(piece), <unk> for an unseen character

A family adds its specials (at ids 0 … n−1, in the order it gives them) and its template (models/albert,
models/xlnet tokenizer.py). Departure: a published spiece.model also carries SentencePiece's own normaliser
(nmt_nfkc, a precompiled character map; transformers keeps it as a ``Precompiled`` step); a vocabulary we
train has none, and its whitespace handling is the whitespace split above.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import tokenizers
from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, trainers

from seq2bert.data.text_files import training_texts
from seq2bert.errors import DataError

WORD_START = "▁"  # SentencePiece's mark of a word's first piece (U+2581)
PENALTY_STEP = 1e-4  # the trainer's min_score_penalty_delta


def unigram_pipeline(unigram: models.Unigram, lowercase: bool) -> tokenizers.Tokenizer:
    """``unigram`` with the normaliser, pre-tokeniser and decoder of the module's docstring (keep_accents
    False); the template is added once the specials have ids."""
    backend = tokenizers.Tokenizer(unigram)
    steps = [
        normalizers.Replace("``", '"'),
        normalizers.Replace("''", '"'),
        normalizers.NFKD(),  # é → e + ◌́, which the next step drops
        normalizers.StripAccents(),
    ]
    backend.normalizer = normalizers.Sequence(steps + ([normalizers.Lowercase()] if lowercase else []))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always"),
        ]
    )
    backend.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
    return backend


def train_unigram(
    files: list[Path], vocab_size: int, specials: list[str], unk: str, mask: str, lowercase: bool
) -> tokenizers.Tokenizer:
    """A unigram vocabulary of at most ``vocab_size`` pieces trained on ``files`` (UTF-8, plain or .gz, one
    text a line), ``specials`` at ids 0 … n−1 (``unk`` the unknown piece; ``mask`` strips the space before it,
    as transformers' mask tokens do), the same on every run (``canonical``)."""
    texts = training_texts(files)
    first = next(texts, None)
    if first is None:
        raise DataError("no text to train the tokenizer on (the input has no non-empty lines)")
    backend = unigram_pipeline(models.Unigram(), lowercase)
    added = [AddedToken(t, special=True, normalized=False, lstrip=t == mask) for t in specials]
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        special_tokens=added,
        unk_token=unk,
        max_piece_length=16,  # SentencePiece's default
        show_progress=False,
    )
    backend.train_from_iterator(itertools.chain([first], texts), trainer=trainer)
    backend = canonical(backend, len(specials))
    ids = [backend.token_to_id(t) for t in specials]
    assert ids == list(range(len(specials))), f"the specials are not at ids 0 … {len(specials) - 1}: {ids}"
    return backend


def canonical(backend: tokenizers.Tokenizer, n: int) -> tokenizers.Tokenizer:
    """The trained unigram vocabulary (``n`` specials first) in an order and with scores that do not depend on
    the process, so that the same text always gives the same tokenizer.json: the trainer gives each character
    it must keep but did not learn as a piece the lowest score plus k · 1e-4, k in the order of a hash set,
    which changes from process to process (its finalize step). Those characters get the same scores in
    code-point order; every score is rounded to 1e-8 (the trainer's EM sums run in a hash map's order too, so
    they differ in their last bits, ~1e-15); and the pieces after the specials are ordered by score, then
    piece."""
    data = json.loads(backend.to_str())
    vocab = data["model"]["vocab"]  # [[piece, score], …], the specials first
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
