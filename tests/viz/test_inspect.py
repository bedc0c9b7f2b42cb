"""Inspection: attention maps of BERT and of translation models (rows are distributions, padding and future
positions get 0), heatmaps that are real pictures, an offline HTML head view that carries the tokens and the
matrices, the positional-encoding image and the similarity matrix, and their commands."""

import json
import re

import numpy as np
import pytest
import torch
from PIL import Image

from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertModel
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.nn.embeddings import sinusoidal_table
from seq2bert.recipes.translation import train
from seq2bert.viz.inspect import (
    attention_maps,
    plot_heads,
    plot_positional_encoding,
    plot_similarity,
    write_head_view,
)
from tests.recipes.test_attention_recipes import tiny_config


def picture(path):
    image = np.asarray(Image.open(path).convert("RGB"), dtype=float)
    return image.shape[:2], image.std()


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    text = root / "t.txt"
    text.write_text("the river bank was green and the bank gave a loan\n" * 5)
    tok = Tokenizer.train([text], kind="wordpiece", vocab_size=60, lowercase=True, min_frequency=1)
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=32, max_position_embeddings=32))  # fmt: skip
    save_bert(model, root / "m", tok)
    return root / "m"


@pytest.fixture(scope="module")
def transformer_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tr") / "run"
    train(tiny_config("transformer", "model.encoder_attention_heads=2", "model.decoder_attention_heads=2"), out,
          progress_bar=False)  # fmt: skip
    return out


def test_bert_attention_rows_are_distributions(bert_dir, tmp_path):
    maps = attention_maps(bert_dir, "the bank gave a loan", pair="the river bank")
    assert list(maps.layers) == ["encoder"] and len(maps.layers["encoder"]) == 2
    rows, cols = maps.tokens["encoder"]
    assert rows[0] == "[CLS]" and rows.count("[SEP]") == 2 and "bank" in rows
    for w in maps.layers["encoder"]:
        assert w.shape == (4, len(rows), len(cols))
        torch.testing.assert_close(w.sum(-1), torch.ones(4, len(rows)))
    shape, spread = picture(plot_heads(maps.layers["encoder"][1], rows, cols, tmp_path / "all.png"))
    assert spread > 10 and shape[1] > shape[0]  # four heads side by side
    one, _ = picture(plot_heads(maps.layers["encoder"][1], rows, cols, tmp_path / "one.png", head=2))
    assert one[1] < shape[1]


def test_translation_attention_covers_encoder_decoder_and_cross(transformer_run, tmp_path):
    maps = attention_maps(transformer_run, "s1 s2 s3 s4")
    assert set(maps.layers) == {"encoder", "decoder", "cross"}
    src, _ = maps.tokens["encoder"]
    tgt, keys = maps.tokens["cross"]
    assert keys == src and len(src) == 4
    decoder = maps.layers["decoder"][0]
    assert decoder.shape == (2, len(tgt), len(tgt))
    assert torch.all(decoder.triu(diagonal=1) == 0)  # causal: no weight on later target positions
    for kind in ("encoder", "decoder", "cross"):
        torch.testing.assert_close(maps.layers[kind][0].sum(-1), torch.ones(maps.layers[kind][0].shape[:2]))


def test_head_view_is_self_contained_and_carries_tokens_and_matrices(bert_dir, tmp_path):
    maps = attention_maps(bert_dir, "the river bank")
    page = write_head_view(maps, tmp_path / "view.html").read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    data = json.loads(
        re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1)
    )
    assert data["tokens"]["encoder"][0] == maps.tokens["encoder"][0]
    expected = maps.layers["encoder"][1].numpy()
    # rounded to 3 decimals (a compact page): within half of their last place
    np.testing.assert_allclose(np.array(data["layers"]["encoder"][1]), expected, atol=5e-4 + 1e-7)


def test_positional_encoding_and_similarity_pictures(tmp_path):
    png = plot_positional_encoding(64, 50, tmp_path / "pe.png")
    shape, spread = picture(png)
    assert shape == (500, 800) and spread > 20
    table = sinusoidal_table(50, 64)
    assert float(table[0, 0]) == 0.0 and float(table[0, 1]) == 1.0  # sin(0), cos(0)
    sims = torch.tensor([[1.0, 0.8, 0.3], [0.8, 1.0, 0.2], [0.3, 0.2, 1.0]])
    shape, spread = picture(plot_similarity(["a bank", "the bank", "river bank"], sims, tmp_path / "s.png"))
    assert spread > 10
    with pytest.raises(ValueError):
        plot_similarity(["a"], sims, tmp_path / "x.png")


def test_commands(bert_dir, transformer_run, tmp_path, capsys):
    assert main(["attention", str(bert_dir), "the bank", "--layer", "0", "--head", "1",
                 "--out", str(tmp_path / "a.png"), "--html", str(tmp_path / "a.html")]) == 0  # fmt: skip
    assert (tmp_path / "a.png").is_file() and (tmp_path / "a.html").is_file()
    assert (
        main(
            ["attention", str(transformer_run), "s1 s2", "--kind", "cross", "--out", str(tmp_path / "c.png")]
        )
        == 0
    )
    assert main(["attention", str(bert_dir), "the bank", "--layer", "7"]) == 2
    assert "layers 0 … 1" in capsys.readouterr().err
    assert main(["positions", "--d-model", "32", "--out", str(tmp_path / "p.png")]) == 0
    assert (
        main(["translate", str(transformer_run), "s1 s2 s3", "--show-alignment", str(tmp_path / "al.png")])
        == 0
    )
    assert picture(tmp_path / "al.png")[1] > 10
    assert (
        main(
            [
                "embed",
                str(bert_dir),
                "the bank",
                "the river bank",
                "a loan",
                "--word",
                "bank",
                "--plot",
                str(tmp_path / "sim.png"),
            ]
        )
        == 2
    )  # "bank" is not in "a loan"
    assert main(["embed", str(bert_dir), "the bank", "the river bank", "--word", "bank",
                 "--plot", str(tmp_path / "sim.png")]) == 0  # fmt: skip
    assert picture(tmp_path / "sim.png")[1] > 10
