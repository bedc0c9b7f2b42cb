"""Every corrupt file a checkpoint can hold, on every command that reads it (issue 23, item 7): one line on
stderr, exit status 2, no traceback, never torch's "weights_only" advice, and the run directory unchanged.

Table-driven: CORRUPTIONS generate the damage (truncation at several offsets, a byte flip in the header,
wrong types, a JSON list, invalid UTF-8, a config that disagrees with the weights' shapes, a tensor archive
with the wrong keys), READERS name the commands; every pair is a case. Add a row to either to extend it."""

import hashlib
import json
import re
import shutil

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from tests.recipes.test_finetune import init_dir, write_sst2  # noqa: F401 (a fixture)


def truncate(at):
    def damage(path):
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * at)] if isinstance(at, float) else data[:at])

    return damage


def flip(offset):
    def damage(path):
        data = bytearray(path.read_bytes())
        data[offset] ^= 0xFF
        path.write_bytes(bytes(data))

    return damage


def text(content: bytes):
    return lambda path: path.write_bytes(content)


def edit_json(change):
    def damage(path):
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    return damage


def tensors(state):
    return lambda path: torch.save(state, path)


CORRUPTIONS = {
    "model.safetensors": {
        "empty": text(b""),
        "truncated-8": truncate(8),
        "truncated-half": truncate(0.5),
        "header-flip": flip(12),
        "not-safetensors": text(b"hello world, not weights"),
    },
    "trainer_state.pt": {
        "empty": text(b""),
        "truncated-half": truncate(0.5),
        "not-an-archive": text(b'{"step": 3}'),
        "wrong-keys": tensors({"x": torch.zeros(2)}),
        "a-list": tensors([1, 2, 3]),
    },
    "config.json": {
        "invalid-utf8": text(b'{"model_type": "bert", "hidden_size": 32, "x": "\xff\xfe"}'),
        "a-json-list": text(b"[1, 2, 3]"),
        "not-json": text(b"{hidden_size: 32"),
        "wrong-type": edit_json(lambda d: d.update(hidden_size="big")),
        "shape-mismatch": edit_json(lambda d: d.update(hidden_size=d["hidden_size"] * 2)),
        "unknown-model-type": edit_json(lambda d: d.update(model_type="bertish")),
    },
    "tokenizer.json": {
        "not-json": text(b"{oops"),
        "truncated-half": truncate(0.5),
    },
}


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory, init_dir):  # noqa: F811
    """A tiny fine-tuned BERT run: best/, checkpoint-*/ with trainer state, and its SST-2-shaped data."""
    root = tmp_path_factory.mktemp("corrupt")
    write_sst2(root / "sst2", np.random.default_rng(0))
    assert main(["finetune", "--task", "sst2", "--init", str(init_dir), "--data", str(root / "sst2"), "--out",
                 str(root / "run"), "--set", "train.max_epochs=1", "--set", "data.batch_size=32"]) == 0  # fmt: skip
    return root / "run", root / "sst2"


@pytest.fixture(scope="module")
def translation_run(tmp_path_factory):
    """A tiny Seq2Seq run on the synthetic copy task (native checkpoints: config.json, tokenizer.json, run.json)."""
    root = tmp_path_factory.mktemp("corrupt-mt")
    args = ["train", "--task", "copy", "--out", str(root / "run"), "--set", "data.num_train=200", "--set",
            "data.num_valid=20", "--set", "data.num_test=20", "--set", "model.hidden_size=16", "--set",
            "model.embedding_dim=8", "--set", "train.max_epochs=1", "--set", "train.bf16=false"]  # fmt: skip
    assert main(args) == 0
    return root / "run", None


READERS = {  # name → (the directory the file is damaged in, the command), given (run, data)
    "classify": (lambda run: run / "best", lambda run, data: ["classify", str(run / "best"), "a great film"]),
    "evaluate": (
        lambda run: run / "best",
        lambda run, data: ["evaluate", str(run / "best"), "--task", "sst2", "--data", str(data)],
    ),  # fmt: skip
    "resume": (
        lambda run: sorted(run.glob("checkpoint-*"))[-1],
        lambda run, data: ["finetune", "--out", str(run), "--resume", "--set", "train.max_epochs=2"],
    ),  # fmt: skip
    "embed": (lambda run: run / "best", lambda run, data: ["embed", str(run / "best"), "a film", "a story"]),
    "translate": (lambda run: run / "best", lambda run, data: ["translate", str(run), "a b c"]),
    "evaluate-mt": (lambda run: run / "best", lambda run, data: ["evaluate", str(run)]),
    "resume-mt": (
        lambda run: sorted(run.glob("checkpoint-*"))[-1],
        lambda run, data: ["train", "--out", str(run), "--resume", "--set", "train.max_epochs=2"],
    ),  # fmt: skip
}
TRANSLATION = ("translate", "evaluate-mt", "resume-mt")
# what each command reads: a resume the weights and trainer state (its config comes from run.json), the others
# the model directory's weights, config and tokenizer
# (trainer_state.json is for people: nothing reads it)
READS = {
    "resume": ("model.safetensors", "trainer_state.pt"),
    "resume-mt": ("model.safetensors", "trainer_state.pt"),
}
CASES = [(reader, name, kind) for reader in READERS for name, kinds in CORRUPTIONS.items() for kind in kinds
         if name in READS.get(reader, ("model.safetensors", "config.json", "tokenizer.json"))]  # fmt: skip


PROGRESS = re.compile(
    r"\d+%\|"
)  # a progress bar's line (the data encoded before a resume reads its checkpoint)


def digests(run):
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file() and p.name != ".lock"}  # fmt: skip


@pytest.mark.parametrize("reader, name, kind", CASES, ids=[f"{r}-{n}-{k}" for r, n, k in CASES])
def test_a_corrupt_checkpoint_file_is_one_clear_line(request, tmp_path, capsys, reader, name, kind):
    source, data = request.getfixturevalue("translation_run" if reader in TRANSLATION else "classifier_run")
    run = tmp_path / "run"
    shutil.copytree(source, run)
    where, command = READERS[reader]
    target = where(run) / name
    assert target.is_file(), target
    CORRUPTIONS[name][kind](target)
    before = digests(run)
    capsys.readouterr()
    assert main(command(run, data)) == 2
    err = [
        line for line in capsys.readouterr().err.splitlines() if line.strip() and not PROGRESS.search(line)
    ]
    assert len(err) == 1 and err[0].startswith("seq2bert: error: "), err
    err = err[0]
    assert "Traceback" not in err and "weights_only" not in err
    assert digests(run) == before  # nothing written, nothing lost
