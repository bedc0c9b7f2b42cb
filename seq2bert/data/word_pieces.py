"""Where a word starts in a subword vocabulary: the pieces that continue the word before them, which whole-word,
span, n-gram and knowledge masking (data/masking.py ``words``) and the phrases of data/phrases.py group into
words. A property of the vocabulary, decided by how it marks words:

    WordPiece (BERT)                   "##x" continues; the rest start a word          (Wu et al. 2016)
    SentencePiece "▁" (ALBERT, "bpe")  "▁x" starts a word; so does a piece of one punctuation character, a
                                       piece with a character outside a–z and punctuation (a digit, another
                                       script), and a special; the rest continue — the released
                                       create_pretraining_data.py of ALBERT, ``_is_start_piece_sp``
    byte-level BPE "Ġ" (RoBERTa, GPT-2) "Ġx" starts a word (the space before it, Ġ the space byte); so does a
                                       special and a piece of punctuation only; the rest continue — fairseq's
                                       ``get_whole_word_mask`` (a piece begins a word when it decodes with a
                                       leading space), with ALBERT's punctuation rule added so that "York" in
                                       "New York." ends a word as it does mid-sentence (an entity matches)
    anything else (GPT-1's "</w>", a word vocabulary): every piece a word.

A piece is a continuation only after another piece of the same segment: the first piece after a special token
([CLS], [SEP], </s>, …) starts a word whatever it is (``words`` reads it so), which covers a byte-level text's
first word (no space before it, so no "Ġ") and a segment whose head truncation cut off. A byte-level corpus
keeps the space before each sentence (data/pretraining.py ``prepare_corpus(spaces=True)``), so a sentence's
first word inside a segment carries its "Ġ", as in fine-tuning text.
"""

from __future__ import annotations

import string

import tokenizers
from tokenizers import decoders, models

from seq2bert.data import gpt_bpe

WORDPIECE, SENTENCEPIECE, BYTE_LEVEL = "##", "▁", "Ġ"
PUNCTUATION = frozenset(string.punctuation)
LETTERS = frozenset(string.ascii_lowercase)


def word_marker(backend: tokenizers.Tokenizer) -> str:
    """How ``backend``'s vocabulary marks words: "##" (a WordPiece continuation prefix), "▁" (SentencePiece's
    word start), "Ġ" (byte-level BPE: the space before a word), or "" (not known: every piece a word)."""
    if isinstance(backend.model, models.WordPiece):
        return backend.model.continuing_subword_prefix
    if gpt_bpe.kind_of(backend) == gpt_bpe.BYTE_LEVEL:
        return BYTE_LEVEL
    if isinstance(backend.decoder, decoders.Metaspace):
        return SENTENCEPIECE
    return ""


def reads_spaces(backend: tokenizers.Tokenizer) -> bool:
    """Whether the tokenizer turns the space before a word into its first piece (byte-level BPE: "The" at a
    text's start, "ĠThe" after a space), so a sentence's tokens depend on the space kept before it."""
    return word_marker(backend) == BYTE_LEVEL


def continues(piece: str, marker: str) -> bool:
    """Whether ``piece`` (not a special) continues the word before it, in a vocabulary marked by ``marker``."""
    # ALBERT's: "<…>", digits and other scripts start a word, as one punctuation character does
    if marker == SENTENCEPIECE:
        return (
            not piece.startswith((SENTENCEPIECE, "<"))
            and not (len(piece) == 1 and piece in PUNCTUATION)
            and all(c.lower() in LETTERS or c in PUNCTUATION for c in piece)
        )
    if marker == BYTE_LEVEL:
        return not piece.startswith(BYTE_LEVEL) and not all(c in PUNCTUATION for c in piece)
    return bool(marker) and piece.startswith(marker)  # WordPiece's "##"


def continuation_ids(backend: tokenizers.Tokenizer) -> tuple[int, ...]:
    """The ids of the pieces of ``backend``'s vocabulary that continue the word before them (module
    docstring), specials never; sorted."""
    marker = word_marker(backend)
    if not marker:
        return ()
    specials = {t.content for t in backend.get_added_tokens_decoder().values() if t.special}
    vocab = backend.get_vocab()
    return tuple(sorted(i for t, i in vocab.items() if t not in specials and continues(t, marker)))
