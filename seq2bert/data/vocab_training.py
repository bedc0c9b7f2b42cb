"""Training the vocabularies of tokenization.py's own kinds (BPE, WordPiece, word level) with the tokenizers
library's trainers: an untrained pipeline of each kind, and the training itself — SPECIAL_TOKENS first, the
BERT template, and a vocabulary that is the same on every run (``train_with_specials``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import tokenizers
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers

from seq2bert.data.special_tokens import SPECIAL_TOKENS, set_bert_template


def new_pipeline(kind: str, lowercase: bool) -> tokenizers.Tokenizer:
    """An untrained pipeline of the given kind (the post-processor is added once the vocabulary exists)."""
    if kind == "wordpiece":
        backend = tokenizers.Tokenizer(
            models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100)
        )
        backend.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
        )
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece(prefix="##")
    elif kind == "bpe":
        backend = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
        steps = [normalizers.NFC()] + ([normalizers.Lowercase()] if lowercase else [])
        backend.normalizer = normalizers.Sequence(steps)
        backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
        backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    else:
        backend = tokenizers.Tokenizer(models.WordLevel(unk_token="[UNK]"))
        if lowercase:
            backend.normalizer = normalizers.Lowercase()
        backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        # Join tokens with single spaces: prefix each with " ", concatenate, drop the first space.
        backend.decoder = decoders.Sequence(
            [decoders.Replace(Regex("^"), " "), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
    return backend


def train_with_specials(
    texts: Callable[[], Iterator[str]], kind: str, vocab_size: int, min_frequency: int, lowercase: bool
) -> tokenizers.Tokenizer:
    """A "bpe", "wordpiece" or "word" vocabulary: SPECIAL_TOKENS first, the BERT template. ``texts()``: the
    training texts, as often as asked.

    WordPiece is trained twice, so that the same text always gives the same vocabulary: the library's trainer
    numbers the word-continuing pieces ("##e") in the order of a hash map, which changes from process to
    process, and breaks ties between merges of equal count by those numbers (huggingface/tokenizers#1794).
    A first pass without merges finds every "##" piece; the second is given them, sorted, with the special
    tokens, so their numbers are fixed before any merge; they are then made ordinary vocabulary entries
    again (not special: they decode, and a text's "##e" is not read as one)."""
    backend = new_pipeline(kind, lowercase)
    common = dict(min_frequency=min_frequency, show_progress=False)
    if kind == "wordpiece":
        probe = new_pipeline(kind, lowercase)
        probe.train_from_iterator(
            texts(),
            trainer=trainers.WordPieceTrainer(
                vocab_size=1, special_tokens=SPECIAL_TOKENS, continuing_subword_prefix="##", **common
            ),
        )
        pieces = sorted(t for t in probe.get_vocab() if t.startswith("##"))
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            special_tokens=SPECIAL_TOKENS + pieces,
            continuing_subword_prefix="##",
            **common,
        )
    elif kind == "bpe":
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, **common)
    else:
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, **common)

    backend.train_from_iterator(texts(), trainer=trainer)
    if kind == "wordpiece":
        backend = unmark_added(backend, set(pieces))
    ids = [backend.token_to_id(t) for t in SPECIAL_TOKENS]
    assert ids == list(range(len(SPECIAL_TOKENS))), f"special tokens not at ids 0..6: {ids}"
    set_bert_template(backend)
    return backend


def unmark_added(backend: tokenizers.Tokenizer, tokens: set[str]) -> tokenizers.Tokenizer:
    """``backend`` with ``tokens`` no longer added (special) tokens, only entries of its model's vocabulary."""
    data = json.loads(backend.to_str())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] not in tokens]
    return tokenizers.Tokenizer.from_str(json.dumps(data))
