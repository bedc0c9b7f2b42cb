import json
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from seq2bert import config as C
from seq2bert.errors import ConfigError
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.registry import TRANSLATION_FAMILIES
from seq2bert.models.seq2seq.config import ChoConfig, Seq2SeqConfig
from seq2bert.recipes.translation import TranslationConfig, check_run_config

MODELS = {f.model_type: (f.config_class, f.architectures[f.base_architecture]) for f in TRANSLATION_FAMILIES}


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


# --- the tagged model section: model.model_type picks the model's config class


def test_default_model_section_is_seq2seq():
    cfg = C.build(TranslationConfig)
    assert type(cfg.model) is Seq2SeqConfig and cfg.model.model_type == "seq2seq"
    assert cfg.model == Seq2SeqConfig()


def test_model_type_override_gives_that_models_config_with_its_own_defaults():
    cfg = C.build(TranslationConfig, overrides=["model.model_type=bahdanau", "model.attention_size=64"])
    assert type(cfg.model) is BahdanauConfig
    assert cfg.model.attention_size == 64
    assert cfg.model.num_layers == 1  # BahdanauConfig's default, not Seq2SeqConfig's 4
    assert cfg.model == BahdanauConfig(attention_size=64)
    # the order of the overrides does not matter
    again = C.build(TranslationConfig, overrides=["model.attention_size=64", "model.model_type=bahdanau"])
    assert again == cfg


def test_switching_model_type_drops_the_previous_models_keys():
    for layers in (2, 3):
        base = C.build(TranslationConfig, overrides=[f"model.num_layers={layers}"])
        assert type(base.model) is Seq2SeqConfig and base.model.num_layers == layers
        cfg = C.build(TranslationConfig, base=base, overrides=["model.model_type=luong"])  # no error
        assert cfg.model == LuongConfig()  # reverse_source False, init_range 0.1, num_layers 2
        assert cfg.data == base.data and cfg.train == base.train  # other sections are kept
    kept = C.apply_overrides(base, ["model.hidden_size=64"])  # the same model: its keys stay
    assert type(kept.model) is Seq2SeqConfig and (kept.model.num_layers, kept.model.hidden_size) == (3, 64)
    same = C.apply_overrides(base, ["model.model_type=seq2seq"])  # naming the same model is not a switch
    assert same.model.num_layers == 3


def test_unknown_model_type_names_the_key_and_the_valid_types():
    with pytest.raises(ConfigError, match=r"model\.model_type: expected one of .*got 'convs2s'") as e:
        C.build(TranslationConfig, overrides=["model.model_type=convs2s"])
    for name in MODELS:
        assert repr(name) in str(e.value)
    with pytest.raises(ConfigError, match=r"model\.model_type"):
        C.from_dict(TranslationConfig, {"model": {"model_type": "gpt"}})


def test_a_key_of_another_model_is_an_error_for_this_one():
    with pytest.raises(ConfigError, match=r"unknown key model\.attention_size"):
        C.build(TranslationConfig, overrides=["model.attention_size=64"])  # seq2seq has no attention
    with pytest.raises(ConfigError, match=r"unknown key model\.reverse_source"):
        C.build(TranslationConfig, overrides=["model.model_type=cho", "model.reverse_source=true"])
    with pytest.raises(ConfigError, match=r"unknown key model\.windw: did you mean model\.window"):
        C.build(TranslationConfig, overrides=["model.model_type=luong", "model.windw=3"])
    with pytest.raises(ConfigError, match=r"model\.score: expected one of"):
        C.build(TranslationConfig, overrides=["model.model_type=luong", "model.score=cosine"])


def test_every_model_type_round_trips_through_to_dict_and_files(tmp_path):
    for model_type, (cfg_cls, _) in MODELS.items():
        size = "d_model" if model_type == "transformer" else "hidden_size"
        cfg = C.build(TranslationConfig, overrides=[f"model.model_type={model_type}", f"model.{size}=48"])
        data = C.to_dict(cfg)
        assert data["model"]["model_type"] == model_type
        again = C.from_dict(TranslationConfig, data)
        assert again == cfg and type(again.model) is cfg_cls and getattr(again.model, size) == 48
        for name in ("run.yaml", "run.json"):
            C.save(cfg, tmp_path / name)
            assert C.load(TranslationConfig, tmp_path / name) == cfg


def test_yaml_model_section_loads_as_the_named_model(tmp_path):
    (tmp_path / "cho.yaml").write_text("model:\n  model_type: cho\n  hidden_size: 32\n")
    for cfg in (
        C.load(TranslationConfig, tmp_path / "cho.yaml"),
        C.build(TranslationConfig, file=tmp_path / "cho.yaml"),
    ):
        assert type(cfg.model) is ChoConfig and cfg.model == ChoConfig(hidden_size=32)
    (tmp_path / "bad.yaml").write_text("model:\n  model_type: cho\n  num_heads: 4\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: unknown key model\.num_heads"):
        C.load(TranslationConfig, tmp_path / "bad.yaml")


def test_a_model_mapping_without_model_type_keeps_the_current_model():
    base = C.build(TranslationConfig, overrides=["model.model_type=bahdanau"])
    cfg = C.apply_overrides(base, ["model={hidden_size: 64}"])
    assert isinstance(cfg.model, BahdanauConfig) and cfg.model.hidden_size == 64


@dataclass
class WithFreeKeys:
    model_config: dict[str, Any] = field(default_factory=dict)  # any key: a model's own fields
    sizes: dict[str, int] = field(default_factory=dict)


def test_a_str_keyed_mapping_takes_any_one_dotted_key_with_its_value_type_checked():
    cfg = C.build(WithFreeKeys, overrides=["model_config.hidden_size=128", "model_config.pooling=last",
                                           "sizes.a=3"])  # fmt: skip
    assert cfg.model_config == {"hidden_size": 128, "pooling": "last"} and cfg.sizes == {"a": 3}
    again = C.build(WithFreeKeys, base=cfg, overrides=["model_config.num_layers=2"])
    assert again.model_config == {"hidden_size": 128, "pooling": "last", "num_layers": 2}
    with pytest.raises(ConfigError, match="sizes.a: expected an integer"):
        C.build(WithFreeKeys, overrides=["sizes.a=big"])
    with pytest.raises(ConfigError, match="model_config is a dict"):
        C.build(WithFreeKeys, overrides=["model_config.a.b=1"])
