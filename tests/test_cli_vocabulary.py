"""One vocabulary on the command line (issue 39, item 7): --num-beams (and --beam) wherever a beam size is
taken, one pair of language flags, one name for the model argument, and `seq2bert config RECIPE` printing the
full default configuration of every recipe."""

import importlib

import pytest
import yaml

from seq2bert import config as config_io
from seq2bert.cli import build_parser, main
from seq2bert.commands.common import MODEL_HELP
from seq2bert.commands.tools import RECIPE_CONFIGS
from tests.test_cli import one_line_error, run_cli


def subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return parser, action.choices


BEAM_COMMANDS = {  # command → its other required arguments
    "translate": ["run/"],
    "evaluate": ["run/"],
    "align": ["run/", "a b c"],
    "generate": ["gpt2/"],
    "sample": ["lm/"],
    "predict": ["run/", "rows.csv", "--out", "out.jsonl"],
}


@pytest.mark.parametrize("command", list(BEAM_COMMANDS))
@pytest.mark.parametrize("flag", ["--num-beams", "--beam"])
def test_every_beam_size_is_num_beams_with_beam_as_alias(command, flag):
    parser, _ = subparsers()
    args = parser.parse_args([command, *BEAM_COMMANDS[command], flag, "3"])
    assert args.num_beams == 3


def test_every_command_that_takes_a_beam_size_is_listed_above():
    _, commands = subparsers()
    with_beams = {name for name, p in commands.items() if "--num-beams" in p._option_string_actions}
    assert with_beams == set(BEAM_COMMANDS)


def test_one_pair_of_language_flags():
    """--src/--tgt everywhere a language is named (transformers' --source-lang/--target-lang read the same)."""
    parser, commands = subparsers()
    for name, p in commands.items():
        flags = {f for f in p._option_string_actions if "lang" in f or f in ("--src", "--tgt")}
        assert flags in (set(), {"--src", "--tgt", "--source-lang", "--target-lang"}), name
    a = parser.parse_args(["train", "--source-lang", "fr", "--target-lang", "de", "--out", "x"])
    b = parser.parse_args(["train", "--src", "fr", "--tgt", "de", "--out", "x"])
    assert (a.src, a.tgt) == (b.src, b.tgt) == ("fr", "de")


def test_the_model_argument_has_one_name():
    _, commands = subparsers()
    seen = 0
    for name, p in commands.items():
        for a in p._actions:
            if not a.option_strings and a.dest in ("model", "checkpoint"):
                assert a.metavar == "MODEL" and a.help.startswith(MODEL_HELP + ": "), name
                seen += 1
    assert seen >= 14  # translate, evaluate, align, generate, sample, classify, embed, …


@pytest.mark.parametrize("recipe", list(RECIPE_CONFIGS))
def test_config_prints_the_full_default_config_of_every_recipe(recipe, capsys):
    module, name = RECIPE_CONFIGS[recipe]
    cls = getattr(importlib.import_module(module), name)
    assert main(["config", recipe]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == config_io.to_dict(cls())
    assert config_io.from_dict(cls, printed) == cls()  # and it reads back as the defaults


def test_config_takes_overrides_and_writes_the_file(tmp_path, capsys):
    out = tmp_path / "pretrain.yaml"
    assert main(["config", "pretrain", "--set", "train.lr=0.00123", "--write", str(out)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["train"]["lr"] == 0.00123
    assert yaml.safe_load(out.read_text())["train"]["lr"] == 0.00123
    assert main(["config"]) == 0 and "model_type" in capsys.readouterr().out  # default: train


def test_config_errors_are_one_line():
    assert "not distill's" in one_line_error(run_cli("config", "distill", "--task", "copy"))
    assert "invalid choice" in run_cli("config", "nope").stderr
    assert "unknown key train.lrr" in one_line_error(run_cli("config", "finetune", "--set", "train.lrr=1"))
