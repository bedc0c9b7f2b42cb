"""Scheduled sampling in the translation recipe: off, a run is today's teacher forcing bit for bit; on, the option
is saved in the run config and a resumed run continues the schedule from its step; bad settings are one line
and exit 2, from `seq2bert train` and `seq2bert tour`."""

import shutil

import pytest
import torch
from safetensors.torch import load_file

from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.models.encoder_decoder import EncoderDecoder
from seq2bert.recipes import translation
from seq2bert.recipes.translation import TranslationConfig, read_run_config, train
from seq2bert.training import checkpoint as ckpt

TINY = ["data.task=copy", "data.num_train=120", "data.num_valid=10", "data.num_test=10", "data.max_len=6",
        "data.max_tokens=120", "model.embedding_dim=8", "model.hidden_size=16", "model.num_layers=2",
        "model.dropout=0.3", "train.max_steps=8", "train.save_every=4", "train.eval_every=8", "train.log_every=4",
        "train.bf16=false"]  # fmt: skip
SCHEDULED = ["train.scheduled_sampling.schedule=exponential", "train.scheduled_sampling.k=0.7"]


def weights(run_dir, step=8):
    return load_file(str(run_dir / f"checkpoint-{step}" / "model.safetensors"))


def assert_bitwise_equal(a, b):
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_off_is_teacher_forcing_bit_for_bit(tmp_path, monkeypatch):
    """The default run equals one trained with the recipe's loss before scheduled sampling existed."""
    cfg = C.apply_overrides(TranslationConfig(), TINY)
    assert not cfg.train.scheduled_sampling.enabled
    calls = []
    feed = EncoderDecoder.feed_own_predictions
    monkeypatch.setattr(EncoderDecoder, "feed_own_predictions", lambda *a: calls.append(a) or feed(*a))
    train(cfg, tmp_path / "now", progress_bar=False)
    assert calls == []  # the step-by-step path is never taken

    class Before(translation.Trainer):  # the loss function of the recipe before this option
        def __init__(self, *args, **kw):
            super().__init__(
                *args, **{**kw, "loss_fn": lambda m, batch: m(**batch, label_smoothing=0.0).loss}
            )

    monkeypatch.setattr(translation, "Trainer", Before)
    train(cfg, tmp_path / "before", progress_bar=False)
    assert_bitwise_equal(weights(tmp_path / "now"), weights(tmp_path / "before"))


def test_saved_in_the_run_config_and_resumed_from_its_step(tmp_path, monkeypatch, capsys):
    steps = []
    schedule = translation.epsilon_schedule

    def spy(cfg, total):
        eps = schedule(cfg, total)
        return lambda i: steps.append(i) or eps(i)

    monkeypatch.setattr(translation, "epsilon_schedule", spy)
    cfg = C.apply_overrides(TranslationConfig(), [*TINY, *SCHEDULED])
    run = tmp_path / "run"
    train(cfg, run, progress_bar=False)
    assert steps == list(range(8))  # one ε_i per mini-batch, i = the trainer's step
    saved = read_run_config(run / "checkpoint-4")
    assert saved.train.scheduled_sampling == cfg.train.scheduled_sampling
    assert (
        saved.train.scheduled_sampling.schedule == "exponential" and saved.train.scheduled_sampling.k == 0.7
    )
    uninterrupted = weights(run)

    # as if killed after checkpoint-4; resumed from the command line, with no --set: the run's own run.json
    shutil.rmtree(run / "checkpoint-8")
    shutil.rmtree(run / "best")
    (run / "results.json").unlink()
    assert ckpt.latest_checkpoint(run).name == "checkpoint-4"
    steps.clear()
    assert main(["train", "--out", str(run), "--resume"]) == 0
    capsys.readouterr()
    assert steps == [4, 5, 6, 7]
    assert_bitwise_equal(weights(run), uninterrupted)  # the same ε_i, coins and samples: the same weights


def test_scheduled_sampling_trains_a_recurrent_model(tmp_path):
    cfg = C.apply_overrides(TranslationConfig(), [*TINY, "model.model_type=luong", *SCHEDULED,
                                                  "train.scheduled_sampling.sampling=argmax"])  # fmt: skip
    row = train(cfg, tmp_path / "luong", progress_bar=False)
    assert row["steps"] == 8 and row["valid_perplexity"] > 1


@pytest.mark.parametrize(
    "settings, message",
    [
        (["train.scheduled_sampling.schedule=inverse_sigmoid", "train.scheduled_sampling.k=0.5"],
         "train.scheduled_sampling.k: the inverse_sigmoid schedule needs k >= 1, got 0.5"),
        (["train.scheduled_sampling.schedule=cosine"],
         "train.scheduled_sampling.schedule: expected one of 'none' | 'inverse_sigmoid' | 'exponential' | "
         "'linear', got 'cosine'"),
        (["model.model_type=transformer", "train.scheduled_sampling.schedule=inverse_sigmoid"],
         "train.scheduled_sampling: for the recurrent decoders (seq2seq, cho, bahdanau, luong), not transformer"),
        (["train.scheduled_sampling.k=200"], "train.scheduled_sampling.schedule: none (teacher forcing) takes no k"),
    ],
)  # fmt: skip
def test_bad_settings_are_one_line_and_exit_2(tmp_path, capsys, settings, message):
    args = [a for s in settings for a in ("--set", s)]
    assert main(["train", "--task", "copy", "--out", str(tmp_path / "x"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()


def test_the_tour_refuses_the_transformer_before_training_anything(tmp_path, capsys):
    out = tmp_path / "tour"
    args = ["tour", "--out", str(out), "--models", "bahdanau,transformer",
            "--set", "train.scheduled_sampling.schedule=inverse_sigmoid"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "seq2bert: error: transformer: train.scheduled_sampling: for the recurrent decoders"
    )
    assert err.count("\n") == 1 and not out.exists()
    assert main(["tour", "--out", str(out), "--models", "bahdanau,rnn"]) == 2
    assert (
        "--models: expected some of seq2seq, seq2seq-reversed, cho, bahdanau, bahdanau-hard, luong, transformer, got rnn"
        in (capsys.readouterr().err)
    )
