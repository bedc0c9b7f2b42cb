"""XLNet's tokenizer (models/xlnet/tokenizer.py): a cased SentencePiece unigram vocabulary trained on a text
the test writes, with XLNet's specials at ids 0..8 and its template (A <sep> B <sep> <cls>, <cls> of type 2),
padded on the left (type 0, as transformers pads a batch) — as transformers' XLNetTokenizer reads our directory; the side survives a
save and a pickle."""

import pickle
import random

import pytest

from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.xlnet.config import XLNetConfig
from seq2bert.models.xlnet.tokenizer import EXTRA, SPECIAL, save_tokenizer, train_tokenizer

transformers = pytest.importorskip("transformers")

WORDS = "the cat sat on a mat and Dog ran far away from café naïve Paris quickly".split()
TEXTS = ["The  Café\tsat ``like this'' NAÏVE", "  Dog ran. ", "zebra 42, x", ""]
PAIRS = [(TEXTS[0], TEXTS[1]), ("Who ran far away?", "The Dog ran far away from Paris.")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("xlnet")
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "." for _ in range(300)]
    (root / "text.txt").write_text("\n".join(lines) + "\n")
    tok = train_tokenizer([root / "text.txt"], 120)
    save_tokenizer(tok, root / "tok", XLNetConfig(vocab_size=tok.vocab_size))
    return tok, root / "tok"


def test_the_specials_have_xlnets_ids_and_the_summary_token_comes_last(trained):
    tok, _ = trained
    assert [tok.token_to_id(t) for t in [*SPECIAL.values(), *EXTRA]] == list(range(9))
    assert (tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id) == (
        0,
        3,
        4,
        5,
        6,
    )
    enc = tok.encode("a cat", "the Dog")
    assert enc.ids[-1] == 3 and enc.ids.count(4) == 2
    assert enc.type_ids[-1] == 2 and set(enc.type_ids[:-1]) == {0, 1}
    assert "▁Dog" in tok.tokenize("Dog") or tok.tokenize("Dog")[0].startswith("▁D")  # cased
    padded = tok.encode_batch(["a", "the cat sat"], padding="longest")
    assert padded["input_ids"][0][0] == 5 and padded["attention_mask"][0][0] == 0  # on the left
    assert padded["token_type_ids"][0][0] == 0 and padded["input_ids"][0][-1] == 3


def test_transformers_xlnet_tokenizer_reads_our_directory_as_we_encode(trained):
    tok, directory = trained
    theirs = transformers.AutoTokenizer.from_pretrained(directory)
    assert type(theirs).__name__.startswith("XLNetTokenizer") and theirs.padding_side == "left"
    assert (theirs.cls_token_id, theirs.sep_token_id, theirs.pad_token_id, theirs.mask_token_id) == (
        3,
        4,
        5,
        6,
    )
    for text in TEXTS:
        assert theirs(text)["input_ids"] == tok.encode(text).ids, text
    for a, b in PAIRS:
        expected = theirs(a, b, return_token_type_ids=True)
        enc = tok.encode(a, b)
        assert (expected["input_ids"], expected["token_type_ids"]) == (enc.ids, enc.type_ids), (a, b)
    batch = [TEXTS[1], TEXTS[0]]
    expected = theirs(batch, padding="longest", return_token_type_ids=True)
    ours = tok.encode_batch(batch, padding="longest")
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert expected[key] == ours[key], key


def test_the_padding_side_survives_saving_loading_and_pickling(trained):
    tok, directory = trained
    for copy in (Tokenizer.load(directory), pickle.loads(pickle.dumps(tok))):
        assert copy.padding_side == "left"
        assert copy.encode_batch(["a", "the cat"], padding="longest")["attention_mask"][0][0] == 0
    plain = Tokenizer.from_file(directory / "tokenizer.json")
    assert plain.backend.padding is None  # set per call, not stored in the backend
