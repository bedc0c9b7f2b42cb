"""train.bf16: true / false / auto, and where bf16 counts as native."""

import logging

import pytest
import torch

import seq2bert.precision as precision


@pytest.mark.parametrize("flags, native", [({"avx2", "fma"}, False), ({"avx512f", "avx512_bf16"}, True)])
def test_native_bf16_on_cpu_reads_the_cpu_flags(flags, native, monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    assert precision.native_bf16("cpu") is native
    assert precision.use_bf16("auto", torch.device("cpu")) is native


def test_flags_of_this_cpu_are_read():
    flags = precision.cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo here")
    assert "fpu" in flags or "fp" in flags or "sse2" in flags


def test_explicit_settings_are_honoured_and_slow_bf16_warns(monkeypatch, caplog):
    monkeypatch.setattr(precision, "native_bf16", lambda device: False)
    assert precision.use_bf16(False, "cpu") is False
    with caplog.at_level(logging.WARNING, logger="seq2bert.precision"):
        assert precision.use_bf16(True, "cpu") is True
    assert "train.bf16=auto" in caplog.text
    caplog.clear()
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    with caplog.at_level(logging.WARNING, logger="seq2bert.precision"):
        assert precision.use_bf16(True, "cpu") is True
        assert precision.use_bf16("auto", "cpu") is True
    assert caplog.text == ""


def test_trainer_resolves_auto(tmp_path, monkeypatch):
    from seq2bert.training.config import TrainConfig
    from seq2bert.training.trainer import Trainer

    class Plan:
        def batches(self, epoch):
            return [[0]]

    for native in (False, True):
        monkeypatch.setattr(precision, "native_bf16", lambda device, native=native: native)
        trainer = Trainer(
            torch.nn.Linear(2, 2), TrainConfig(bf16="auto"), plan=Plan(), collate=dict, out_dir=tmp_path
        )
        assert trainer.bf16 is native
        with trainer.autocast():
            assert torch.is_autocast_enabled("cpu") is native
