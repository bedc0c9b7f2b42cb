"""A whole MarianMT directory — config.json, model.safetensors, SentencePiece source.spm / target.spm and
vocab.json, written by transformers — read into our Transformer, used through the Python API and the CLI,
and written back so that transformers reads it again."""

import json

import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.data.marian import MarianTokenizer
from seq2bert.errors import CheckpointError
from seq2bert.models.transformer.marian import load_marian, save_marian
from seq2bert.models.transformer.model import Transformer

transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

WORDS = "the a dog cat runs sleeps over under green red house tree small big man woman sees eats".split()
TEXTS = [
    "the dog runs over the green house",
    "a small cat sleeps",
    "the big man sees a red tree",
    "zebra!",
    "",
]


def train_spm(path, seed):
    g = torch.Generator().manual_seed(seed)
    lines = [
        " ".join(WORDS[i] for i in torch.randint(len(WORDS), (8,), generator=g).tolist()) for _ in range(300)
    ]
    corpus = path.parent / f"corpus{seed}.txt"
    corpus.write_text("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(path), vocab_size=40, model_type="unigram", minloglevel=2
    )
    return path.with_suffix(".model")


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory):
    return write_marian_dir(tmp_path_factory.mktemp("marian"), "opus-mt-tiny")


def write_marian_dir(root, name):
    """``root/name``: a tiny random MarianMT directory as transformers writes it (its SentencePiece models
    trained in ``root``)."""
    src, tgt = train_spm(root / "src", 0), train_spm(root / "tgt", 1)
    pieces = []
    for model in (src, tgt):
        sp = spm.SentencePieceProcessor(model_file=str(model))
        pieces += [
            sp.id_to_piece(i)
            for i in range(sp.get_piece_size())
            if not sp.is_control(i) and not sp.is_unknown(i)
        ]
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    vocab["<pad>"] = len(vocab)
    (root / "vocab.json").write_text(json.dumps(vocab))
    tok = transformers.MarianTokenizer(
        source_spm=str(src),
        target_spm=str(tgt),
        vocab=str(root / "vocab.json"),
        source_lang="en",
        target_lang="de",
    )
    out = root / name
    tok.save_pretrained(out)
    cfg = transformers.MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=48,
        decoder_ffn_dim=48,
        max_position_embeddings=128,
        pad_token_id=len(vocab) - 1,
        decoder_start_token_id=len(vocab) - 1,
        eos_token_id=0,
        forced_eos_token_id=0,
        scale_embedding=True,
        activation_function="swish",
        init_std=0.3,
    )
    torch.manual_seed(0)
    model = transformers.MarianMTModel(cfg).eval()
    model.save_pretrained(out)
    return out


def test_tokenizer_equals_transformers(marian_dir):
    ours = MarianTokenizer(marian_dir)
    theirs = transformers.MarianTokenizer.from_pretrained(marian_dir)
    assert ours.source_ids(TEXTS) == theirs(TEXTS).input_ids
    ids = theirs(TEXTS).input_ids + [[5, 9, 0, 7], [ours.unk_token_id, 3, ours.pad_token_id]]
    for row in ids:
        assert ours.decode(row) == theirs.decode(row, skip_special_tokens=True)
        assert ours.decode(row, skip_special_tokens=False) == theirs.decode(row)
    assert (ours.pad_token_id, ours.eos_token_id) == (theirs.pad_token_id, theirs.eos_token_id)


def test_load_translate_save_and_load_again(marian_dir, tmp_path, capsys):
    hf = transformers.MarianMTModel.from_pretrained(marian_dir).eval()
    model, tok = load_marian(marian_dir)
    assert isinstance(model, Transformer) and isinstance(seq2bert.from_pretrained(marian_dir), Transformer)
    batch = transformers.MarianTokenizer.from_pretrained(marian_dir)(
        TEXTS[:3], padding=True, return_tensors="pt"
    )
    start = torch.full((3, 1), hf.config.decoder_start_token_id)
    dec = torch.cat([start, batch.input_ids[:, :4]], 1)
    with torch.no_grad():
        expected = hf(**batch, decoder_input_ids=dec).logits
    torch.testing.assert_close(
        model(batch.input_ids, batch.attention_mask, dec).logits, expected, rtol=0, atol=1e-5
    )
    ids = model.generate(batch.input_ids, batch.attention_mask, num_beams=5, max_new_tokens=10)
    assert ids.tolist() == hf.generate(**batch, num_beams=5, max_new_tokens=10).tolist()

    texts = seq2bert.translate(TEXTS[:3], model=marian_dir, num_beams=5)
    assert len(texts) == 3 and all(isinstance(t, str) for t in texts)
    assert main(["translate", str(marian_dir), TEXTS[0]]) == 0
    assert capsys.readouterr().out.strip() == seq2bert.translate(TEXTS[:1], model=marian_dir)[0]

    out = tmp_path / "saved"
    save_marian(model, tok, out)
    again = transformers.MarianMTModel.from_pretrained(out).eval()
    with torch.no_grad():
        torch.testing.assert_close(again(**batch, decoder_input_ids=dec).logits, expected, rtol=0, atol=1e-6)
    assert transformers.MarianTokenizer.from_pretrained(out)(TEXTS).input_ids == tok.source_ids(TEXTS)
    assert not list(tmp_path.glob(".saved.tmp-*"))  # written atomically


def test_broken_directories_give_one_line_errors(marian_dir, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(marian_dir, broken)
    (broken / "source.spm").unlink()
    with pytest.raises(CheckpointError, match="source.spm"):
        load_marian(broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        load_marian(broken)
    assert main(["translate", str(broken), "hello"]) == 2
