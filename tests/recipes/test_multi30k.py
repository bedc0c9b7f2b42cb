"""The real-data path: Multi30k de→en through reader, BPE, engine, checkpoint and BLEU (needs ../shared/data)."""

import json

import pytest

from seq2bert.cli import main


@pytest.mark.slow
@pytest.mark.data
def test_multi30k_pipeline_runs_end_to_end(shared_data, tmp_path, capsys):
    out = tmp_path / "m30k"
    sets = [
        "model.embedding_dim=16",
        "model.hidden_size=16",
        "model.num_layers=1",
        "data.vocab_size=1000",
        "train.max_steps=3",
        "data.max_tokens=2000",
    ]
    args = ["train", "--data", str(shared_data / "multi30k"), "--src", "de", "--tgt", "en", "--out", str(out)]
    for item in sets:
        args += ["--set", item]
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 3 and 0.0 <= results["test_bleu"] <= 100.0
    run = json.loads((out / "best" / "run.json").read_text())
    assert run["data"]["test_src"].endswith("test_2016_flickr.de.gz")
    assert main(["translate", str(out), "Ein Hund läuft."]) == 0
