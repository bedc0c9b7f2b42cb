"""The metric that keeps a translation run's best checkpoint: ``train.metric=auto`` is exact match on a
synthetic task and BLEU on parallel text, where exact match stays at 0 and would keep the first checkpoint."""

import json

from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.recipes.translation import TranslationConfig, main_metric

PAIRS = [
    ("ein hund läuft", "a dog runs"),
    ("eine frau läuft", "a woman runs"),
    ("ein mann spielt", "a man plays"),
    ("ein kind spielt", "a child plays"),
]


def test_auto_is_exact_match_on_a_synthetic_task_and_bleu_on_text():
    assert main_metric(TranslationConfig()) == "exact_match"  # the default task: lang
    files = C.build(
        TranslationConfig, overrides=["data.task=files", "data.train_src=a.de", "data.train_tgt=a.en"]
    )
    assert files.train.metric == "auto" and main_metric(files) == "bleu"
    chosen = C.apply_overrides(files, ["train.metric=perplexity"])
    assert main_metric(chosen) == "perplexity"


def test_a_run_on_parallel_text_keeps_its_best_bleu(tmp_path):
    data = tmp_path / "text"
    data.mkdir()
    for split in ("train", "val"):
        for k, lang in enumerate(("de", "en")):
            (data / f"{split}.{lang}").write_text("".join(p[k] + "\n" for p in PAIRS * 4), encoding="utf-8")
    sets = [
        "model.embedding_dim=16",
        "model.hidden_size=16",
        "model.num_layers=1",
        "train.lr=0.01",
        "train.max_steps=12",
        "train.eval_every=3",
        "data.max_tokens=64",
        "data.min_frequency=1",
    ]
    args = ["train", "--data", str(data), "--out", str(tmp_path / "run")]
    assert main([*args, *(a for s in sets for a in ("--set", s))]) == 0
    evals = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    bleu = {e["step"]: e["bleu"] for e in evals if e.get("split") == "valid"}
    state = json.loads((tmp_path / "run" / "best" / "trainer_state.json").read_text())
    assert (
        len(bleu) >= 3
        and state["best"] == max(bleu.values())
        and state["best_step"] == max(bleu, key=bleu.get)
    )
