"""ALBERT's tokenizer (models/albert/tokenizer.py): a SentencePiece unigram vocabulary trained on a text the
test writes, with ALBERT's specials at ids 0..4, encodes texts and pairs as transformers' AlbertTokenizer
does — reading our tokenizer.json as it is, and rebuilding its own pipeline around our vocabulary — and a
tokenizer.json written by transformers loads with <pad> and <unk> in their roles."""

import random

import pytest

from seq2bert.data.qa import make_features
from seq2bert.data.squad import Answer, QAExample
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import DataError
from seq2bert.models.albert.config import AlbertConfig
from seq2bert.models.albert.tokenizer import SPECIAL, WORD_START, save_tokenizer, train_tokenizer

transformers = pytest.importorskip("transformers")

WORDS = "the cat sat on a mat and dog ran far away from café naïve über résumé quickly Paris".split()
TEXTS = [
    "The  Café\tsat ``like this'' NAÏVE",  # odd whitespace, accents, upper case, LaTeX quotes
    "  Über  résumé\n dog. ",
    "a [MASK] cat ran",
    "zebra 42, 1990, x",  # characters never seen: <unk>
    "",
]
PAIRS = [(TEXTS[0], TEXTS[1]), ("Who ran far away?", "The DOG ran far away from Paris."), (TEXTS[3], "a")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("albert")
    rng = random.Random(0)
    lines = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))).capitalize() + "." for _ in range(300)
    ]
    (root / "text.txt").write_text("\n".join(lines) + "\n")
    tok = train_tokenizer([root / "text.txt"], 120)
    save_tokenizer(tok, root / "tok", AlbertConfig(vocab_size=tok.vocab_size, max_position_embeddings=64))
    return tok, root / "tok"


def test_the_specials_have_albert_ids_and_pieces_start_words_with_the_metaspace(trained):
    tok, _ = trained
    assert [tok.token_to_id(t) for t in SPECIAL.values()] == [0, 1, 2, 3, 4]
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id) == (
        0, 1, 2, 3, 4,
    )  # fmt: skip
    assert type(tok.backend.model).__name__ == "Unigram" and tok.vocab_size <= 120
    assert tok.tokenize("The Café") == [f"{WORD_START}the", f"{WORD_START}cafe"]  # lower-cased, accent gone
    assert tok.decode(tok.encode("The  Café sat").ids) == "the cafe sat"
    enc = tok.encode("a cat", "the dog")
    assert enc.ids[0] == 2 and enc.ids.count(3) == 2 and enc.type_ids == [0, 0, 0, 0, 1, 1, 1]
    padded = tok.encode_batch(["a", "the cat sat"], padding="longest")
    assert padded["input_ids"][0][-1] == 0 and padded["attention_mask"][0][-1] == 0


@pytest.mark.parametrize("reader", ["tokenizer_file", "from_pretrained"])
def test_transformers_albert_tokenizer_encodes_texts_and_pairs_as_we_do(trained, reader):
    """``tokenizer_file``: our tokenizer.json as it is; ``from_pretrained``: transformers' AlbertTokenizer
    builds its own normaliser, pre-tokeniser and decoder around our vocabulary (and tokenizer_config.json)."""
    tok, directory = trained
    if reader == "tokenizer_file":
        theirs = transformers.AlbertTokenizerFast(tokenizer_file=str(directory / "tokenizer.json"))
    else:
        theirs = transformers.AutoTokenizer.from_pretrained(directory)
        assert type(theirs).__name__.startswith("AlbertTokenizer") and theirs.model_max_length == 64
    assert (theirs.pad_token_id, theirs.unk_token_id, theirs.cls_token_id, theirs.sep_token_id) == (
        0,
        1,
        2,
        3,
    )
    assert theirs.mask_token_id == 4
    for text in TEXTS:
        assert theirs(text)["input_ids"] == tok.encode(text).ids, text
    for a, b in PAIRS:
        expected = theirs(a, b, return_token_type_ids=True)
        enc = tok.encode(a, b)
        assert (expected["input_ids"], expected["token_type_ids"]) == (enc.ids, enc.type_ids), (a, b)
    ids = tok.encode(TEXTS[0]).ids
    assert theirs.decode(ids, skip_special_tokens=True) == tok.decode(ids)


def test_a_qa_window_is_albert_s_pair(trained):
    tok, directory = trained
    theirs = transformers.AutoTokenizer.from_pretrained(directory)
    context, question = "The dog ran far away from Paris.", "Who ran?"
    ex = QAExample("q", "t", context, question, [Answer("The dog", 0)])
    (f,) = make_features([ex], tok, max_seq_length=64, doc_stride=16)
    expected = theirs(question, context, return_token_type_ids=True)
    assert (f.input_ids, f.token_type_ids) == (expected["input_ids"], expected["token_type_ids"])
    span = f.offsets[f.start_position][0], f.offsets[f.end_position][1]
    assert context[span[0] : span[1]] == "The dog"


def test_a_tokenizer_json_written_by_transformers_gives_pad_and_unk_their_roles(trained, tmp_path):
    _, directory = trained
    theirs = transformers.AutoTokenizer.from_pretrained(directory)
    theirs.save_pretrained(tmp_path / "saved")
    tok = Tokenizer.from_file(tmp_path / "saved")
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id) == (
        0, 1, 2, 3, 4,
    )  # fmt: skip
    assert tok.encode("The dog ran.").ids == theirs("The dog ran.")["input_ids"]
    padded = tok.encode_batch(["a", "the cat sat"], padding="longest")
    assert padded["input_ids"][0][-1] == theirs.pad_token_id


def test_training_on_no_text_is_a_data_error(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DataError, match="no text"):
        train_tokenizer([tmp_path / "empty.txt"], 100)
