"""benchmarks/students.py runs end to end on a tiny teacher and student: every way of running each (fp32,
bf16 where native, int8, ONNX Runtime) gets a row, the teacher's fp32 is 1.00×, ONNX Runtime's labels are
fp32's."""

import os
import subprocess
import sys

import pytest
import torch

from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import BertForSequenceClassification
from tests.conftest import REPO

WORDS = "the a film story great superb awful dull was is very quite".split()


@pytest.mark.slow
def test_the_students_benchmark_runs(tmp_path):
    pytest.importorskip("onnxruntime")
    f = tmp_path / "w.txt"
    f.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    tok = Tokenizer.train([f], kind="wordpiece", vocab_size=200, lowercase=True)
    torch.manual_seed(0)
    for name, layers in (("teacher", 4), ("student", 2)):
        cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=64, id2label={0: "n", 1: "p"})  # fmt: skip
        save_bert(BertForSequenceClassification(cfg), tmp_path / name, tok)
    tsv = tmp_path / "s.tsv"
    tsv.write_text(
        "sentence\tlabel\n" + "".join(f"{' '.join(WORDS[i % 12 :] * 2)}\t{i % 2}\n" for i in range(50))
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "students.py"), str(tmp_path / "teacher"), str(tmp_path / "student"),
         "--sentences", str(tsv), "--limit", "40", "--batch", "8", "--repeats", "2"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith(f"| {tmp_path}")]
    runs = [r[2] for r in rows]
    assert runs.count("fp32") == 2 and runs.count("int8") == 2 and runs.count("onnxruntime") == 2
    assert rows[0][4] == "1.00×"
    assert all(r[5].strip(" |") == "100.00" for r in rows if r[2] == "onnxruntime")
