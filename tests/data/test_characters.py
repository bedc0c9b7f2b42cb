"""ELMo's character ids (data/characters.py) and the biLM's streams (data/lm.py): words spelled as bilm-tf
spells them, sentences between <S> and </S>, the backward LM's stream the forward one reversed, targets
outside the softmax [UNK] while the input keeps its spelling."""

import numpy as np
import torch

from seq2bert.data.characters import (
    BOS_CHAR,
    BOW_CHAR,
    EOS_CHAR,
    EOW_CHAR,
    PAD_CHAR,
    batch_char_ids,
    char_table,
    word_char_ids,
    words_of,
)  # fmt: skip
from seq2bert.data.lm import BiStreamBatches, ReversedStream, TokenStream
from seq2bert.data.pretraining import Corpus, prepare_corpus
from seq2bert.data.tokenization import Tokenizer


def test_words_are_their_utf8_bytes_between_markers():
    ids = word_char_ids("café")
    assert ids.shape == (50,)
    assert ids[:7].tolist() == [BOW_CHAR, 100, 98, 103, 196, 170, EOW_CHAR]  # c a f, é as two bytes, + 1
    assert (ids[7:] == PAD_CHAR).all()
    long = word_char_ids("x" * 80)
    assert long[0] == BOW_CHAR and long[49] == EOW_CHAR and (long[1:49] == ord("x") + 1).all()  # 48 bytes
    chars, mask = batch_char_ids([["a", "b"], ["c"]])
    assert chars.shape == (2, 2, 50) and mask.tolist() == [[1, 1], [1, 0]]
    assert (chars[1, 1] == 0).all()  # a padding token: every id 0


def test_the_vocabulary_spelled_and_words_as_the_tokenizer_splits_them():
    tok = Tokenizer.train(
        ["The cat sat. the dog"], kind="word", vocab_size=30, min_frequency=1, lowercase=True
    )
    table = char_table(tok)
    assert (table[tok.token_to_id("[PAD]")] == 0).all()
    assert table[tok.token_to_id("[BOS]")][:3].tolist() == [BOW_CHAR, BOS_CHAR, EOW_CHAR]
    assert table[tok.token_to_id("[EOS]")][:3].tolist() == [BOW_CHAR, EOS_CHAR, EOW_CHAR]
    assert np.array_equal(table[tok.token_to_id("cat")], word_char_ids("cat"))
    assert np.array_equal(table[tok.token_to_id("[UNK]")], word_char_ids("[UNK]"))
    assert words_of(tok, "The Zebra  sat.") == ["the", "zebra", "sat."]  # zebra: not in the vocabulary


def test_the_bilm_streams(tmp_path):
    (tmp_path / "a.txt").write_text("The cat sat. A dog ran.\n")
    (tmp_path / "b.txt").write_text("The bird flew away.\n")
    files = sorted(tmp_path.glob("*.txt"))
    tok = Tokenizer.train(files, kind="word", vocab_size=100, min_frequency=1)
    prepare_corpus(files, tok, tmp_path / "c", documents="file", progress=False)
    corpus = Corpus(tmp_path / "c")
    bos, eos = tok.token_to_id("[BOS]"), tok.token_to_id("[EOS]")
    stream = TokenStream(corpus, np.arange(2), tok.sep_token_id, sentence_markers=(bos, eos))
    text = [tok.id_to_token(i) for i in stream.read(0, len(stream))]
    assert text == ["[BOS]", "The", "cat", "sat.", "[EOS]", "[BOS]", "A", "dog", "ran.", "[EOS]",
                    "[BOS]", "The", "bird", "flew", "away.", "[EOS]"]  # fmt: skip
    assert stream.read(3, 7).tolist() == stream.read(0, len(stream))[3:7].tolist()
    backward = ReversedStream(stream)
    assert [tok.id_to_token(i) for i in backward.read(0, 6)] == [
        "[EOS]",
        "away.",
        "flew",
        "bird",
        "The",
        "[BOS]",
    ]
    softmax = 9  # the first 9 ids: the specials and the two most frequent words
    batches = BiStreamBatches(stream, 2, 3, char_table=char_table(tok), vocab_size=softmax,
                              unk_token_id=tok.unk_token_id)  # fmt: skip
    b = batches.collate([0])
    assert b["char_ids"].shape == b["backward_char_ids"].shape == (2, 3, 50)
    assert b["labels"].max() < softmax and (b["labels"] == tok.unk_token_id).any()
    row = [tok.id_to_token(i) for i in stream.read(0, 4)]
    assert torch.equal(b["char_ids"][0], torch.from_numpy(np.stack([word_char_ids(w) if w != "[BOS]" else
                       char_table(tok)[bos] for w in row[:3]]).astype(np.int64)))  # fmt: skip
    assert batches.tokens() == 2 * ((len(stream) - 1) // 2)
