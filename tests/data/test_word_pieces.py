"""Where words start in each kind of vocabulary (seq2bert/data/word_pieces.py): WordPiece's "##", ALBERT's
rule for SentencePiece's "▁" (its released create_pretraining_data.py), the space of a byte-level BPE, specials
never continuing a word."""

import pytest

from seq2bert.data.tokenization import Tokenizer
from seq2bert.data.word_pieces import BYTE_LEVEL, SENTENCEPIECE, continuation_ids, continues, word_marker


@pytest.mark.parametrize(
    "marker, starts, continuations",
    [
        ("##", ["un", ".", "▁a", "Ġa"], ["##able", "##."]),
        # ALBERT: "▁" starts a word, as do one punctuation character, digits, other scripts and "<…>"
        (SENTENCEPIECE, ["▁un", "▁", ".", "1990", "a1", "é", "<unk>"], ["able", "'s", "..", "x"]),
        # the space before a word ("Ġ") starts it, as does punctuation alone; a text's first word has no "Ġ"
        (BYTE_LEVEL, ["Ġun", "Ġ", ".", '."', "),"], ["able", "'s", "The", "90", "Ċ"]),
        ("", ["un", "##able", "able"], []),  # unknown: every piece its own word
    ],
)
def test_which_pieces_continue_a_word(marker, starts, continuations):
    assert [p for p in starts if continues(p, marker)] == []
    assert [p for p in continuations if not continues(p, marker)] == []


def test_the_marker_comes_from_the_pipeline_and_specials_never_continue():
    texts = ["the cat sat on the mat unbelievably"] * 20
    wordpiece = Tokenizer.train(texts, kind="wordpiece", vocab_size=60)
    byte_level = Tokenizer.train(texts, kind="bytelevel-bpe", vocab_size=280)
    sentencepiece = Tokenizer.train(texts, kind="bpe", vocab_size=60)
    word = Tokenizer.train(texts, kind="word", vocab_size=60)
    markers = [word_marker(t.backend) for t in (wordpiece, byte_level, sentencepiece, word)]
    assert markers == ["##", BYTE_LEVEL, SENTENCEPIECE, ""]
    assert continuation_ids(word.backend) == ()
    for tok in (wordpiece, byte_level, sentencepiece):
        ids = continuation_ids(tok.backend)
        assert ids and ids == tuple(sorted(ids))
        specials = [
            t for t in ("[PAD]", "[CLS]", "[MASK]", "<|endoftext|>") if tok.token_to_id(t) is not None
        ]
        assert specials and not {tok.token_to_id(t) for t in specials} & set(ids)
