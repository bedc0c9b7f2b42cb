import json
from dataclasses import dataclass, field
from typing import Literal

import pytest

from seq2bert import config as C
from seq2bert.errors import ConfigError
from seq2bert.recipes.translation import TranslationConfig, check_run_config


@dataclass
class Inner:
    heads: int = 4
    hidden: int = 16
    kind: Literal["a", "b"] = "a"
    rate: float = 0.5
    name: str | None = None

    def validate(self):
        if self.hidden % self.heads:
            raise ConfigError(f"heads: {self.heads} does not divide hidden ({self.hidden})")


@dataclass
class Outer:
    inner: Inner = field(default_factory=Inner)
    lr: float = 1e-3
    flag: bool = False
    sizes: list[int] = field(default_factory=lambda: [1, 2])


def test_round_trip_json_and_yaml(tmp_path):
    cfg = Outer(inner=Inner(heads=2, kind="b", name="x"), lr=3e-4, flag=True, sizes=[3])
    for name in ("c.json", "c.yaml"):
        C.save(cfg, tmp_path / name)
        assert C.load(Outer, tmp_path / name) == cfg
    assert json.loads((tmp_path / "c.json").read_text())["inner"]["heads"] == 2


def test_unknown_key_names_the_closest_valid_keys():
    with pytest.raises(ConfigError, match=r"unknown key inner\.head: did you mean inner\.heads"):
        C.from_dict(Outer, {"inner": {"head": 2}})
    with pytest.raises(ConfigError, match=r"unknown key train\.lrr: did you mean train\.lr\?"):
        C.apply_overrides(TranslationConfig(), ["train.lrr=1"])


def test_types_are_checked_with_the_dotted_key():
    with pytest.raises(ConfigError, match=r"inner\.heads: expected an integer, got 'four'"):
        C.from_dict(Outer, {"inner": {"heads": "four"}})
    with pytest.raises(ConfigError, match=r"flag: expected true or false"):
        C.apply_overrides(Outer(), ["flag=3"])
    with pytest.raises(ConfigError, match=r"inner\.kind: expected one of 'a' \| 'b'"):
        C.apply_overrides(Outer(), ["inner.kind=c"])


def test_overrides_are_parsed_and_converted():
    cfg = C.apply_overrides(
        Outer(), ["lr=3e-4", "inner.rate=1", "flag=true", "sizes=[4, 5]", "inner.name=null"]
    )
    assert cfg.lr == pytest.approx(3e-4) and isinstance(cfg.inner.rate, float)
    assert cfg.flag is True and cfg.sizes == [4, 5] and cfg.inner.name is None
    assert Outer().lr == 1e-3  # the original is untouched


def test_override_syntax_errors():
    with pytest.raises(ConfigError, match="expected key=value"):
        C.apply_overrides(Outer(), ["lr"])
    with pytest.raises(ConfigError, match="not a section"):
        C.apply_overrides(Outer(), ["lr.x=1"])


def test_validation_runs_at_load_time_with_the_key():
    with pytest.raises(ConfigError, match=r"inner\.heads: 3 does not divide hidden"):
        C.from_dict(Outer, {"inner": {"heads": 3}})
    with pytest.raises(ConfigError, match=r"train\.lr: must be > 0"):
        C.apply_overrides(TranslationConfig(), ["train.lr=-1"])
    with pytest.raises(ConfigError, match=r"model\.dropout: must be in \[0, 1\)"):
        C.apply_overrides(TranslationConfig(), ["model.dropout=1.5"])


def test_missing_data_file_is_an_error_before_any_work(tmp_path):
    cfg = C.apply_overrides(
        TranslationConfig(), ["data.task=files", f"data.train_src={tmp_path / 'nope.de'}"]
    )
    with pytest.raises(ConfigError, match=r"data\.train_src: no such file: .*nope\.de"):
        check_run_config(
            cfg
        )  # the first thing train() does; a finished run's run.json loads without its data
    with pytest.raises(ConfigError, match=r"train\.metric: expected one of loss, perplexity"):
        check_run_config(C.apply_overrides(TranslationConfig(), ["train.metric=exact_mach"]))


def test_file_keys_and_overrides_are_validated_together(tmp_path):
    (tmp_path / "c.yaml").write_text("data:\n  task: files\ntrain:\n  lr: 0.5\n")
    cfg = C.build(
        TranslationConfig, file=tmp_path / "c.yaml", overrides=[f"data.train_src={tmp_path / 'c.yaml'}"]
    )
    assert cfg.data.task == "files" and cfg.train.lr == 0.5
    assert (
        cfg.train.metric == TranslationConfig().train.metric
    )  # keys a file leaves out keep the run's defaults


def test_malformed_files_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  lr: [1,\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:\d+: invalid YAML"):
        C.load(Outer, bad)
    bad = tmp_path / "bad.json"
    bad.write_text('{"lr": 1,\n "flag": }')
    with pytest.raises(ConfigError, match=r"bad\.json:2: invalid JSON"):
        C.load(Outer, bad)
    with pytest.raises(ConfigError, match=r"no such config file"):
        C.load(Outer, tmp_path / "none.yaml")
    (tmp_path / "k.yaml").write_text("inner:\n  hiden: 3\n")
    with pytest.raises(ConfigError, match=r"k\.yaml: unknown key inner\.hiden: did you mean inner\.hidden"):
        C.load(Outer, tmp_path / "k.yaml")


def test_run_config_round_trips_through_yaml(tmp_path):
    cfg = C.apply_overrides(TranslationConfig(), ["train.betas=[0.9, 0.98]", "model.num_layers=2"])
    C.save(cfg, tmp_path / "run.yaml")
    again = C.load(TranslationConfig, tmp_path / "run.yaml")
    assert again == cfg and again.train.betas == (0.9, 0.98)
