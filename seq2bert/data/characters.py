"""Words as the character ids a character CNN reads (nn/char_cnn.py), as ELMo spells them (bilm-tf's
UnicodeCharsVocabulary and Batcher; Peters et al. 2018).

A word is its UTF-8 bytes between a begin-of-word and an end-of-word marker, padded with a padding
character to ``max_characters`` (50), the bytes cut to ``max_characters − 2`` first::

    "cat"  →  [BOW, c, a, t, EOW, PAD, PAD, …]          (50 ids)
    <S>    →  [BOW, BOS, EOW, PAD, …]                    the sentence boundaries: one special character each
    </S>   →  [BOW, EOS, EOW, PAD, …]

Ids are shifted by one, as bilm-tf's Batcher feeds them to a trained model: byte b is b + 1 (1 … 256), the
five special characters 257 … 261, and 0 is left for padding *tokens* (every id 0: a position with no word),
which the CNN turns into zeros. 262 ids in all; the embedding row of id 0 is zero.

Which strings are words is the tokenizer's business: ``words_of`` applies its normaliser and pre-tokenizer
(a word vocabulary: split on whitespace, lowercased if it was trained so), without looking words up, so a
word the vocabulary lacks keeps its spelling. ``char_table`` spells every vocabulary entry, for a token
stream stored as ids: [BOS] and [EOS] are <S> and </S>, [PAD] the padding token, any other entry (the word
itself, or a special token such as [UNK]) its own spelling.
"""

from __future__ import annotations

import numpy as np
import torch

MAX_CHARACTERS = 50
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 257, 258, 259, 260, 261  # bilm-tf's 256 … 260, + 1
NUM_CHARACTERS = 262  # 0 (padding tokens), 256 bytes, 5 special characters


def word_char_ids(word: str, max_characters: int = MAX_CHARACTERS) -> np.ndarray:
    """The ``max_characters`` ids of one word: (W,) int64."""
    data = word.encode("utf-8", "ignore")[: max_characters - 2]
    ids = np.full(max_characters, PAD_CHAR, dtype=np.int64)
    ids[0] = BOW_CHAR
    ids[1 : 1 + len(data)] = np.frombuffer(data, dtype=np.uint8).astype(np.int64) + 1
    ids[1 + len(data)] = EOW_CHAR
    return ids


def boundary_char_ids(char: int, max_characters: int = MAX_CHARACTERS) -> np.ndarray:
    """<S> (``BOS_CHAR``) or </S> (``EOS_CHAR``) as a word: [BOW, char, EOW, PAD, …]."""
    ids = np.full(max_characters, PAD_CHAR, dtype=np.int64)
    ids[:3] = (BOW_CHAR, char, EOW_CHAR)
    return ids


def char_table(tokenizer, max_characters: int = MAX_CHARACTERS) -> np.ndarray:
    """The character ids of every vocabulary entry: (V, W) int16, row = token id."""
    table = np.zeros((tokenizer.vocab_size, max_characters), dtype=np.int16)
    special = {"[PAD]": None, "[BOS]": BOS_CHAR, "[EOS]": EOS_CHAR}
    for i in range(tokenizer.vocab_size):
        token = tokenizer.id_to_token(i)
        if token in special:
            if special[token] is not None:
                table[i] = boundary_char_ids(special[token], max_characters)
        else:
            table[i] = word_char_ids(token, max_characters)
    return table


def words_of(tokenizer, text: str) -> list[str]:
    """The words of ``text`` as ``tokenizer`` splits and normalises them (not looked up: no [UNK])."""
    backend = tokenizer.backend
    if backend.normalizer is not None:
        text = backend.normalizer.normalize_str(text)
    if backend.pre_tokenizer is None:
        return text.split()
    return [word for word, _ in backend.pre_tokenizer.pre_tokenize_str(text)]


def batch_char_ids(
    sentences: list[list[str]], max_characters: int = MAX_CHARACTERS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sentences of words → character ids (B, T, W), right-padded with padding tokens, and the mask (B, T)."""
    T = max((len(s) for s in sentences), default=0)
    ids = np.zeros((len(sentences), T, max_characters), dtype=np.int64)
    mask = np.zeros((len(sentences), T), dtype=np.int64)
    for b, sentence in enumerate(sentences):
        for t, word in enumerate(sentence):
            ids[b, t] = word_char_ids(word, max_characters)
        mask[b, : len(sentence)] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)
