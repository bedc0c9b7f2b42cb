"""Incremental detokenisation (data/text_stream.py): fed one id at a time, the pieces are complete characters
only and join into the text of all the ids, for GPT-2's byte-level BPE (characters split across tokens) and
GPT-1's BPE (``</w>`` a space only once another word follows)."""

import random

import pytest

from seq2bert.data.text_stream import REPLACEMENT, TextStream
from seq2bert.data.tokenization import Tokenizer

TEXT = "Naïve café — 日本語のテキスト 🙂👍🏽 tabs\tand\nnewlines, façade!  Ünïcödé"


@pytest.fixture(scope="module", params=["bytelevel-bpe", "gpt1-bpe"])
def tok(request):
    return Tokenizer.train([TEXT, "plain words and more words"] * 5, kind=request.param, vocab_size=300,
                           min_frequency=1)  # fmt: skip


def streamed(tok, ids, step=1):
    stream = TextStream(tok)
    out = [stream.push(ids[i : i + step]) for i in range(0, len(ids), step)]
    return out, stream.flush()


@pytest.mark.parametrize("step", [1, 2, 5])
def test_the_pieces_join_into_the_text(tok, step):
    ids = tok.encode(TEXT).ids
    pieces, rest = streamed(tok, ids, step)
    assert "".join(pieces) + rest == tok.decode(ids)
    assert not any(REPLACEMENT in p for p in pieces)  # a character split across tokens waits for its end


def test_byte_level_tokens_that_split_a_character_give_nothing_until_it_is_whole():
    tok = Tokenizer.train(["a b c"] * 3, kind="bytelevel-bpe", vocab_size=260, min_frequency=1)
    ids = tok.encode("a🙂b").ids  # 🙂: four byte tokens (no merge learnt for it)
    assert len(ids) == 6
    pieces, rest = streamed(tok, ids)
    assert pieces == ["a", "", "", "", "🙂", "b"] and rest == ""


def test_random_ids_and_the_end_of_the_stream(tok):
    """Any ids at all — invalid UTF-8 included — still give the whole text, the end from flush."""
    rng = random.Random(0)
    for _ in range(20):
        ids = [rng.randrange(tok.vocab_size) for _ in range(rng.randrange(1, 30))]
        pieces, rest = streamed(tok, ids)
        assert "".join(pieces) + rest == tok.decode(ids)


def test_special_tokens_add_no_text():
    tok = Tokenizer.train(["a b c"] * 3, kind="bytelevel-bpe", vocab_size=260, min_frequency=1)
    ids = [*tok.encode("ab").ids, tok.eos_token_id]
    pieces, rest = streamed(tok, ids)
    assert "".join(pieces) + rest == "ab" and pieces[-1] == ""
