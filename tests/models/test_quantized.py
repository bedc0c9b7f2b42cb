"""Dynamic int8 quantisation (models/quantized.py): every Linear becomes an int8 one whose weight is the
per-channel symmetric rounding of the float one, outputs stay close to fp32, and an int8 directory loads back
into the very model that was saved — for a BERT task model and for a Transformer translation run — through
`seq2bert quantize`, the pipelines' int8 flag and every command that reads a directory."""

import json

import pytest
import torch
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as QuantizedLinear

from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models import quantized, registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import BertForSequenceClassification
from seq2bert.pipelines import classify, translate
from seq2bert.recipes.translation import TranslationConfig, load_pairs, train

WORDS = "the a film story great superb awful dull was is very quite".split()


@pytest.fixture(scope="module")
def sst2_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("q")
    f = root / "w.txt"
    f.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    tok = Tokenizer.train([f], kind="wordpiece", vocab_size=200, lowercase=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64, id2label={0: "negative", 1: "positive"})  # fmt: skip
    save_bert(BertForSequenceClassification(cfg), root / "fp32", tok)
    return root / "fp32"


def test_every_linear_is_int8_and_its_weight_the_per_channel_rounding(sst2_dir):
    model, _ = registry.load(sst2_dir)
    weight = model.bert.layers[0].self_attn.qkv.weight.detach().clone()
    q = quantized.quantize(model)
    assert quantized.is_quantized(q)
    assert not any(type(m) is nn.Linear for m in q.modules())
    w, _ = q.bert.layers[0].self_attn.qkv._weight_bias()
    scale = weight.abs().amax(1) / 127.5  # symmetric: the range [−max, max] over 255 steps, per row
    torch.testing.assert_close(w.q_per_channel_scales().float(), scale, rtol=1e-3, atol=1e-7)
    torch.testing.assert_close(w.dequantize(), weight, atol=float(scale.max()) / 2 + 1e-7, rtol=0)


def test_outputs_stay_close_and_an_int8_directory_loads_back_the_same_model(sst2_dir, tmp_path, capsys):
    fp32, tok = registry.load(sst2_dir)
    ids = torch.tensor([tok.encode(t).ids for t in ["the film was great", "a very dull story"]])
    reference = fp32(input_ids=ids).logits
    assert main(["quantize", str(sst2_dir), "--out", str(tmp_path / "int8")]) == 0
    assert "int8 Linears" in capsys.readouterr().out
    assert not (tmp_path / "int8" / "model.safetensors").exists()
    assert json.loads((tmp_path / "int8" / "quantization.json").read_text())["method"] == "dynamic_int8"
    loaded, _ = registry.load(tmp_path / "int8")
    assert isinstance(loaded.bert.layers[1].feed_forward.w_1 if hasattr(loaded.bert.layers[1].feed_forward, "w_1")
                      else loaded.classifier, QuantizedLinear)  # fmt: skip
    again = quantized.quantize(registry.load(sst2_dir)[0])
    torch.testing.assert_close(loaded(input_ids=ids).logits, again(input_ids=ids).logits, rtol=0, atol=0)
    torch.testing.assert_close(loaded(input_ids=ids).logits, reference, atol=0.05, rtol=0.05)
    # the pipeline's flag quantises a float directory; an int8 directory is int8 already
    assert classify("the film was great", sst2_dir, int8=True) == classify(
        "the film was great", tmp_path / "int8"
    )
    assert main(["classify", str(tmp_path / "int8"), "a very dull story"]) == 0
    assert main(["classify", str(sst2_dir), "--int8", "a very dull story"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == out[1]
    assert main(["quantize", str(tmp_path / "int8"), "--out", str(tmp_path / "x")]) == 2
    assert "int8 already" in capsys.readouterr().err


def test_a_corrupt_int8_directory_is_one_clear_line(sst2_dir, tmp_path, capsys):
    assert main(["quantize", str(sst2_dir), "--out", str(tmp_path / "int8")]) == 0
    (tmp_path / "int8" / "model.int8.safetensors").write_bytes(b"\0" * 10)
    capsys.readouterr()
    assert main(["classify", str(tmp_path / "int8"), "a film"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model.int8.safetensors" in err


@pytest.mark.slow
def test_a_transformer_translation_run_decodes_in_int8(tmp_path):
    overrides = ["data.task=copy", "data.num_train=2000", "data.num_valid=100", "data.num_test=100", "data.min_len=3",
                 "data.max_len=6", "data.num_symbols=10", "data.max_tokens=300", "model.model_type=transformer", "model.d_model=64",
                 "model.encoder_ffn_dim=128", "model.decoder_ffn_dim=128", "model.encoder_layers=2",
                 "model.decoder_layers=2", "model.dropout=0.0", "train.lr=2e-3", "train.schedule=inverse_sqrt",
                 "train.warmup_steps=100", "train.max_epochs=8", "train.bf16=false"]  # fmt: skip
    cfg = C.build(TranslationConfig, overrides=overrides)
    train(cfg, tmp_path / "run", progress_bar=False)
    texts = [source for source, _ in load_pairs(cfg.data)["test"][:30]]
    fp32 = translate(tmp_path / "run", texts)
    assert sum(h == t for h, t in zip(fp32, texts, strict=True)) >= 25  # it learned to copy
    int8 = translate(tmp_path / "run", texts, int8=True)  # int8 weights (models/weight_only.py)
    assert sum(a == b for a, b in zip(int8, fp32, strict=True)) >= 27  # int8 may change a near tie or two
    model, tok = registry.load(tmp_path / "run")
    dynamic = translate((quantized.quantize(model), tok), texts)  # torch's dynamic quantisation
    assert sum(a == b for a, b in zip(dynamic, fp32, strict=True)) >= 27
    assert main(["quantize", str(tmp_path / "run"), "--out", str(tmp_path / "int8")]) == 0
    assert translate(tmp_path / "int8", texts) == dynamic  # the directory holds the very int8 model
