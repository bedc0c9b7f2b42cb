"""A training run's documented error paths (issue 41, items 4–6): one line, the right exit status (2 for a
mistake in the input, 1 for the machine failing), no traceback, and nothing left behind by a refused start.

A full disk while a checkpoint's trainer state is written; a seed NumPy cannot take; a model larger than the
machine's memory (refused before any directory is made or memory allocated); a log.jsonl that is not UTF-8
(`plot`, `--resume`); an --out that is a file, the data folder, or inside the checkpoint a run starts from;
a key given twice in a YAML config; and messages that name the user's file, never a hidden temporary one."""

import errno
import hashlib
import os
import shutil

import pytest
import torch

from seq2bert import config as config_io
from seq2bert.cli import main
from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.recipes.pretrain import PretrainConfig
from seq2bert.recipes.translation import TranslationConfig
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.run import check_model_fits, parameter_bytes
from tests.reliability.conftest import WORDS, one_line, snapshot

COPY = ["--task", "copy", "--set", "data.num_train=100", "--set", "data.num_valid=10", "--set", "data.num_test=10",
        "--set", "model.hidden_size=16", "--set", "model.embedding_dim=8", "--set", "train.max_epochs=2",
        "--set", "train.eval_every=3", "--set", "train.keep_last=100", "--set", "train.bf16=false",
        "--set", "data.max_tokens=200"]  # fmt: skip


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def text_file(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    return path


def last_line(capsys) -> str:
    """The last line of a run's stderr (its progress bar before it), no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


# --- a full disk while the trainer state is written
class FullDisk:
    """A file on a disk with ``room`` bytes left: a write past it fails as the kernel's does (ENOSPC, no name)."""

    def __init__(self, f, room: int):
        self.f, self.room = f, room

    def write(self, data) -> int:
        n = memoryview(data).nbytes
        if n > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= n
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run = tmp_path_factory.mktemp("whole") / "run"
    assert main(["train", *COPY, "--out", str(run)]) == 0
    return run


def test_a_full_disk_while_writing_the_trainer_state_is_one_line_and_the_run_resumes(uninterrupted, tmp_path,
                                                                                    capsys, monkeypatch):  # fmt: skip
    run, opened = tmp_path / "run", []

    def on_a_full_disk(path, mode="r", *args, **kwargs):
        f = open(path, mode, *args, **kwargs)
        if os.path.basename(path) != "trainer_state.pt":
            return f
        opened.append(path)
        return FullDisk(f, room=1000) if len(opened) == 2 else f  # the second checkpoint's state: 1 kB fits

    monkeypatch.setattr(ckpt, "open", on_a_full_disk, raising=False)
    assert main(["train", *COPY, "--out", str(run)]) == 1
    line = last_line(capsys)
    first, failed = ckpt.list_checkpoints(uninterrupted)[:2]  # the second checkpoint met the full disk
    assert line == f"seq2bert: failed: {os.strerror(errno.ENOSPC)}: {run / failed.name / 'trainer_state.pt'}"
    assert not [p.name for p in run.rglob(".*") if p.name != ".lock"]  # nothing half-written
    assert [p.name for p in ckpt.list_checkpoints(run)] == [first.name]  # the previous checkpoint, intact:
    assert digest(run / first.name / "model.safetensors") == digest(first / "model.safetensors")  # bitwise
    assert ckpt.load_trainer_state(run / first.name)["progress"]["step"] == int(first.name.split("-")[1])
    monkeypatch.undo()
    assert main(["train", "--out", str(run), "--resume"]) == 0
    assert digest(run / "best" / "model.safetensors") == digest(uninterrupted / "best" / "model.safetensors")


# --- seeds
RECIPES = ["train", "train-lm", "pretrain", "finetune", "distill"]


@pytest.mark.parametrize("seed", [-1, 99999999999999])
@pytest.mark.parametrize("command", RECIPES)
def test_a_seed_numpy_cannot_take_is_refused_before_a_directory_is_made(command, seed, tmp_path, capsys):
    out = tmp_path / "run"
    assert main([command, "--set", f"train.seed={seed}", "--out", str(out)]) == 2
    line = one_line(capsys)
    assert (
        line
        == f"seq2bert: error: train.seed: expected an integer from 0 to {2**32 - 1} (2**32 - 1), got {seed}"
    )
    assert not out.exists()


def test_the_seeds_at_the_ends_of_numpys_range_are_taken():
    from seq2bert.training.config import TrainConfig

    for seed in (0, 2**32 - 1):
        assert TrainConfig(seed=seed).seed == seed
    with pytest.raises(ConfigError, match="samples.seed: expected an integer from 0"):
        config_io.build(PretrainConfig, overrides=["samples.seed=4294967296"])


# --- sizes against the machine's memory
TINY = {
    "bert": ("pretrain", dict(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                              intermediate_size=32, max_position_embeddings=32)),
    "seq2seq": ("train", dict(src_vocab_size=20, tgt_vocab_size=20, hidden_size=8, embedding_dim=8)),
    "rnn-lm": ("train-lm", dict(vocab_size=30, hidden_size=8, embedding_dim=8)),
}  # fmt: skip


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_the_estimate_counts_the_parameters_the_model_has(model_type):
    """Built on the meta device, the model has the real one's parameters and bytes, without their memory."""
    family = registry.get(model_type)
    config = config_io.from_dict(family.config_class, TINY[model_type][1])
    real = registry.build_model(config)
    weights = sum(t.numel() * t.element_size() for t in [*real.parameters(), *real.buffers()])
    assert parameter_bytes(lambda: registry.build_model(config)) == (
        sum(p.numel() for p in real.parameters()),
        weights,
    )
    check_model_fits(lambda: registry.build_model(config), config, "adamw", memory=4 * weights)  # just fits
    with pytest.raises(ConfigError) as e:
        check_model_fits(lambda: registry.build_model(config), config, "adamw", memory=4 * weights - 1)
    assert str(e.value).startswith("model.") and "this machine has" in str(e.value)
    check_model_fits(lambda: registry.build_model(config), config, "sgd", memory=2 * weights)  # no moments


HUGE = "1000000000"  # below 2**31, far past this machine's memory


@pytest.fixture
def corpus(tmp_path):
    return text_file(tmp_path / "text" / "a.txt")


@pytest.mark.parametrize(
    "command, sets, key",
    [("train", ["model.hidden_size"], "model.hidden_size"), ("train", ["model.embedding_dim"], "model.embedding_dim"),
     ("train-lm", ["model.hidden_size", "model.embedding_dim"], "model.embedding_dim"),
     ("pretrain", ["model.hidden_size"], "model.hidden_size"),
     ("pretrain", ["model.intermediate_size"], "model.intermediate_size")],
)  # fmt: skip
def test_a_model_larger_than_memory_is_refused_naming_the_key_before_anything_is_made(command, sets, key, corpus,
                                                                                       tmp_path, capsys):  # fmt: skip
    out = tmp_path / "run"
    data = {"train": ["--task", "copy"], "train-lm": [str(corpus)], "pretrain": [str(corpus)]}[command]
    assert main([command, *data, *[f"--set={k}={HUGE}" for k in sets], "--out", str(out)]) == 2
    line = one_line(capsys)
    assert line.startswith(f"seq2bert: error: {key}={HUGE}: a model ") and "this machine has" in line
    assert not out.exists()  # no .lock, no tokenizer/


def test_a_student_larger_than_memory_is_refused_naming_the_key(bert_runs, tmp_path, capsys):
    out = tmp_path / "student"
    teacher = bert_runs["sequence"]
    before = snapshot(teacher)
    (tmp_path / "sst2").mkdir()
    argv = ["distill", "--teacher", str(teacher), "--task", "sst2", "--data", str(tmp_path / "sst2"),
            "--set", f"student.hidden_size={HUGE}", "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    assert one_line(capsys).startswith(f"seq2bert: error: student.hidden_size={HUGE}: a model ")
    assert not out.exists() and snapshot(teacher) == before


def test_a_count_past_any_model_is_refused_before_the_model_is_built(tmp_path, capsys):
    """10**10 layers: refused by its size alone, where building even the shapes of the model would not end."""
    out = tmp_path / "run"
    assert main(["train", "--task", "copy", "--set", "model.num_layers=10000000000", "--out", str(out)]) == 2
    assert one_line(capsys) == (
        "seq2bert: error: model.num_layers=10000000000: past any model's sizes and counts (below 2**31)"
    )
    assert not out.exists()


def test_a_refused_start_inside_the_run_leaves_no_directory(tmp_path, capsys):
    """A refusal once the run holds its directory (no text files in the folder given) takes its .lock back."""
    (tmp_path / "empty").mkdir()
    out = tmp_path / "new" / "run"
    assert main(["pretrain", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert "no text files" in one_line(capsys)
    assert not (tmp_path / "new").exists()
    out.mkdir(parents=True)  # a folder that was there stays, empty as it was
    assert main(["pretrain", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert out.is_dir() and not list(out.iterdir())


# --- log.jsonl that is not UTF-8
@pytest.fixture
def run_with_a_bad_log(translation_runs, tmp_path):
    run = shutil.copytree(translation_runs["bahdanau"], tmp_path / "run")
    lines = (run / "log.jsonl").read_bytes().splitlines(keepends=True)
    (run / "log.jsonl").write_bytes(
        lines[0] + b'{"split": "train", "note": "\xff\xfe"}\n' + b"".join(lines[1:])
    )
    return run


def test_plot_of_a_log_that_is_not_utf8_names_the_file_and_line(run_with_a_bad_log, capsys):
    assert main(["plot", str(run_with_a_bad_log)]) == 2
    assert one_line(capsys) == f"seq2bert: error: {run_with_a_bad_log / 'log.jsonl'}:2: invalid UTF-8 " + (
        "(expected a run's log.jsonl, JSON lines)"
    )


def test_resume_with_a_log_that_is_not_utf8_is_refused_and_leaves_the_run_as_it_was(
    run_with_a_bad_log, capsys
):
    before = snapshot(run_with_a_bad_log)
    assert main(["train", "--out", str(run_with_a_bad_log), "--resume", "--set", "train.max_steps=2"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"seq2bert: error: {run_with_a_bad_log / 'log.jsonl'}:2: invalid UTF-8")
    assert snapshot(run_with_a_bad_log) == before


# --- --out: a file, the data, inside the checkpoint a run starts from
def test_an_out_that_is_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    assert main(["train", *COPY, "--out", str(out)]) == 2
    assert one_line(
        capsys
    ) == f"seq2bert: error: --out {out}: a file; expected a folder for the run (a new one, " + (
        "or a run to resume)"
    )
    assert out.read_text() == "mine\n"


def parallel_folder(path):
    path.mkdir()
    for lang in ("de", "en"):
        (path / f"train.{lang}").write_text("".join(f"{w} {w}\n" for w in WORDS))
    return path


def test_an_out_that_is_the_data_folder_is_refused(tmp_path, capsys):
    data = parallel_folder(tmp_path / "m30k")
    before = snapshot(data)
    assert main(["train", "--data", str(data), "--out", str(data)]) == 2
    assert one_line(capsys).startswith(f"seq2bert: error: --out {data}: holds the input {data / 'train.de'}")
    assert snapshot(data) == before and not (data / ".lock").exists()


def test_pretrain_refuses_an_out_among_its_text(corpus, capsys):
    assert main(["pretrain", str(corpus.parent), "--out", str(corpus.parent / "run")]) == 2
    assert "is the input" in one_line(capsys) and not (corpus.parent / "run").exists()


@pytest.mark.parametrize("where", ["init", "inside init", "holding init"])
def test_finetune_refuses_an_out_that_is_or_holds_its_init(where, bert_runs, tmp_path, capsys):
    init = shutil.copytree(bert_runs["pretrained"], tmp_path / "bert")
    out = {"init": init, "inside init": init / "best" / "sst2", "holding init": tmp_path}[where]
    before = snapshot(init)
    assert main(["finetune", "--init", str(init / "best"), "--task", "sst2", "--data", str(tmp_path / "sst2"),
                 "--out", str(out)]) == 2  # fmt: skip
    assert f"--out {out}: " in (line := one_line(capsys)) and "the input" in line
    assert snapshot(init) == before and not (init / "best" / "sst2").exists()


def test_distill_refuses_an_out_inside_its_teacher(bert_runs, tmp_path, capsys):
    teacher = shutil.copytree(bert_runs["sequence"], tmp_path / "teacher")
    before = snapshot(teacher)
    out = teacher / "best" / "student"
    argv = [
        "distill",
        "--teacher",
        str(teacher),
        "--task",
        "sst2",
        "--data",
        str(tmp_path),
        "--out",
        str(out),
    ]
    assert main(argv) == 2
    assert f"--out {out}: is the input" in one_line(capsys)
    assert snapshot(teacher) == before and not out.exists()


# --- a key given twice in a YAML config
def test_a_duplicate_yaml_key_is_refused_naming_the_file_key_and_line(tmp_path, capsys):
    config = tmp_path / "my.yaml"
    config.write_text("train:\n  lr: 0.001\n  max_epochs: 1\n  lr: 0.1\n")
    out = tmp_path / "run"
    assert main(["train", "--task", "copy", "--config", str(config), "--out", str(out)]) == 2
    assert (
        one_line(capsys)
        == f"seq2bert: error: {config}:4: duplicate key 'lr' (first given on line 2; each key once)"
    )
    assert not out.exists()
    config.write_text("train:\n  lr: 0.001\nmodel:\n  hidden_size: 8\ntrain:\n  max_epochs: 1\n")
    assert main(["config", "train", "--config", str(config)]) == 2
    assert one_line(capsys).endswith(
        f"{config}:5: duplicate key 'train' (first given on line 1; each key once)"
    )


def test_the_same_key_in_two_sections_and_yaml_merges_are_taken(tmp_path):
    config = tmp_path / "ok.yaml"
    config.write_text("base: &b {lr: 0.5}\n")
    assert config_io.read_mapping(config) == {"base": {"lr": 0.5}}
    config.write_text("train: {lr: 0.5, seed: 3}\ndata: {task: copy}\nmodel: {hidden_size: 8}\n")
    cfg = config_io.build(TranslationConfig, file=config)
    assert (cfg.train.lr, cfg.train.seed, cfg.model.hidden_size) == (0.5, 3, 8)


def test_a_duplicate_json_key_is_refused(tmp_path):
    config = tmp_path / "my.json"
    config.write_text('{"train": {"lr": 0.001, "lr": 0.1}}\n')
    with pytest.raises(ConfigError, match=r"my.json: invalid JSON \(duplicate key 'lr'"):
        config_io.read_mapping(config)


# --- messages name the user's file, never a hidden temporary one
def test_writing_a_config_over_a_folder_names_the_folder(tmp_path, capsys):
    good = tmp_path / "good"
    good.mkdir()
    assert main(["config", "train", "--write", str(good)]) == 2
    assert one_line(capsys) == f"seq2bert: error: {good}: a folder, expected a file"
    assert [p.name for p in tmp_path.iterdir()] == ["good"]  # no temporary file left


def test_a_failed_directory_write_names_the_target_not_its_temporary_folder(tmp_path):
    target = tmp_path / "best"

    def write(tmp):
        (tmp / "weights").write_bytes(b"1")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp / "weights"))

    with pytest.raises(OSError) as e:
        ckpt.write_dir_atomically(target, write)
    assert (e.value.errno, e.value.filename) == (errno.ENOSPC, str(target / "weights"))
    assert list(tmp_path.iterdir()) == []


def test_plot_to_a_folder_names_the_folder(translation_runs, tmp_path, capsys):
    out = tmp_path / "curves.png"
    out.mkdir()
    assert main(["plot", str(translation_runs["bahdanau"]), "--out", str(out)]) == 2
    assert one_line(capsys) == f"seq2bert: error: {out}: a folder, expected a file"
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]


def test_a_trainer_state_write_names_the_file_that_failed(tmp_path, monkeypatch):
    """torch's own writer reports a failed write as a RuntimeError ("unexpected pos …"); through a Python file,
    it is the system's OSError naming trainer_state.pt."""
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    monkeypatch.setattr(ckpt, "open", lambda p, m="r": FullDisk(open(p, m), room=100), raising=False)
    with pytest.raises(OSError) as e:
        ckpt.save_trainer_state(tmp_path, progress={}, optimizer=optimizer, scheduler=scheduler)
    assert (e.value.errno, e.value.filename) == (errno.ENOSPC, str(tmp_path / "trainer_state.pt"))
