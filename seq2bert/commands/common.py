"""What the subcommands share: the run-configuration loader (one for every translation command), the
arguments of data folders, configs and decoding."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from seq2bert.errors import UserError

BF16 = {
    "auto": "auto",
    "true": True,
    "false": False,
}  # --bf16 auto|true|false → train.bf16 / a pipeline's bf16


def add_bf16_arg(p: argparse.ArgumentParser) -> None:
    """A pipeline command's --bf16 (its value: BF16[args.bf16])."""
    p.add_argument(
        "--bf16",
        choices=tuple(BF16),
        default="auto",
        help="compute in bf16 (default: auto, where the CPU computes it natively; false: fp32)",
    )


INT8_DECODING_HELP = (
    "decode with int8 weights: every Linear layer and the output layer int8 with a scale per row (their "
    "inputs int8 too, a scale per token, where the CPU has VNNI/AMX), the activations between them in bf16 "
    "where the CPU computes it natively, else fp32"
)


def add_int8_decoding_arg(p: argparse.ArgumentParser, help: str = INT8_DECODING_HELP) -> None:
    """A decoding command's --int8: the model's int8 twin (models/weight_only.py)."""
    p.add_argument("--int8", action="store_true", help=help)


def add_int4_decoding_arg(p: argparse.ArgumentParser) -> None:
    """A one-input decoding command's --int4: the model's int4 twin (models/weight_only.py)."""
    p.add_argument(
        "--int4",
        action="store_true",
        help="decode with 4-bit weights in groups of 32 (int8 where a layer's inputs make no whole groups): "
        "faster than --int8 for one input at a time, slower for batches",
    )


def add_draft_arg(p: argparse.ArgumentParser, what: str) -> None:
    """A decoding command's --draft: speculative decoding's draft model (decoding/speculative.py)."""
    p.add_argument(
        "--draft",
        metavar="DIR",
        help=f"speculative decoding: {what} of the same vocabulary (a distilled student) proposes tokens the "
        "model checks — the same output as without it (greedy: token for token; sampling: in distribution), "
        "in fewer passes of the model; --num-draft-tokens per pass",
    )


COMPILE_HELP = (
    "decode with the model's decoding stack under torch.compile: it compiles first (seconds for a small "
    "model, minutes for GPT-2 small), then each step runs faster — it pays on many inputs"
)


def add_compile_arg(p: argparse.ArgumentParser, help: str = COMPILE_HELP) -> None:
    """A decoding command's --compile (pipelines/loading.py ``compiled``)."""
    p.add_argument("--compile", action="store_true", help=help)


# the one name of every command's model argument (a Hub name: models/hub.py)
MODEL_HELP = "a checkpoint, run or Hugging Face directory, or a Hub model name (org/name[@revision])"


def add_model_arg(p: argparse.ArgumentParser, what: str, *, dest: str = "model") -> None:
    """The positional MODEL argument every command that reads a model takes: one metavar, one help (the
    command's own ``what`` after it)."""
    p.add_argument(dest, metavar="MODEL", help=f"{MODEL_HELP}: {what}")


def add_data_dir_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data", metavar="DIR", help="folder of parallel text: {train,val,test...}.{SRC,TGT}[.gz]"
    )
    # the one pair of language flags (transformers' run_translation spelling kept as aliases)
    p.add_argument(
        "--src", "--source-lang", default="de", help="source language suffix with --data (default: de)"
    )
    p.add_argument(
        "--tgt", "--target-lang", default="en", help="target language suffix with --data (default: en)"
    )
    p.add_argument("--valid-split", default="val", help="validation split name with --data (default: val)")
    p.add_argument("--test-split", default="test_2016_flickr", help="test split name with --data")


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", metavar="FILE", help="a YAML or JSON run configuration (see `seq2bert config`)"
    )
    add_set_arg(p, "train.lr=3e-4")
    p.add_argument("--task", help="built-in synthetic task: copy, reverse, sort or lang (sets data.task)")
    add_data_dir_args(p)


def add_set_arg(p: argparse.ArgumentParser, example: str) -> None:
    """--set KEY=VALUE, repeatable (``example``: one such override, for the help)."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override one config key, dotted, e.g. --set {example} (repeatable)",
    )


def add_run_args(p: argparse.ArgumentParser, example: str) -> None:
    """A training command's --config, --set (``example``: one key=value), --out and --resume."""
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON configuration")
    add_set_arg(p, example)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")


def load_config(cls: type, args: argparse.Namespace, overrides: list[str] = (), defaults=None):
    """The one way every command reads its run configuration, validated once before any work starts:

    ``defaults`` (a ``cls`` the command chose; else ``cls()``) — or, with --resume, the run's own run.json:
    resume what was started, whatever flags are given again — ← the --config file ← the command's own
    ``overrides`` ← --set overrides."""
    from seq2bert import config as config_io
    from seq2bert.errors import ConfigError
    from seq2bert.io import read_json
    from seq2bert.training.checkpoint import latest_checkpoint

    base = None
    last = latest_checkpoint(Path(args.out)) if getattr(args, "resume", False) else None
    if last is not None and (last / "run.json").is_file():
        try:
            base = config_io.from_dict(cls, read_json(last / "run.json"))
        except ConfigError as e:
            raise ConfigError(f"{last / 'run.json'}: {e}") from None
    cfg = config_io.build(
        cls,
        base=base if base is not None else defaults,
        file=args.config,
        overrides=[*overrides, *args.overrides],
    )
    if base is not None and cfg != base:
        changed = changed_keys(config_io.to_dict(base), config_io.to_dict(cfg))
        logging.getLogger("seq2bert").warning("--resume with a changed configuration: %s", ", ".join(changed))
    return cfg


def load_run_config(args: argparse.Namespace):
    """A translation run's configuration: load_config with --task / --data as data.* overrides."""
    from seq2bert.recipes.translation import TranslationConfig, check_run_config

    overrides = []
    if args.task:
        overrides.append(f"data.task={args.task}")
    if args.data:
        overrides += data_dir_overrides(
            Path(args.data), args.src, args.tgt, args.valid_split, args.test_split
        )
    cfg = load_config(TranslationConfig, args, overrides)
    check_run_config(cfg)
    return cfg


def changed_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for key in a:
        if isinstance(a[key], dict):
            out += changed_keys(
                a[key], b.get(key) if isinstance(b.get(key), dict) else {}, prefix + key + "."
            )
        elif a[key] != b.get(key):
            out.append(f"{prefix}{key} {a[key]!r} → {b.get(key)!r}")
    return out


def data_dir_overrides(directory: Path, src: str, tgt: str, valid: str, test: str) -> list[str]:
    from seq2bert.data.parallel import parallel_files
    from seq2bert.data.paths import require_folder

    require_folder(
        directory, "--data", "a folder of parallel text files: train.SRC and train.TGT, plain or .gz"
    )
    out = ["data.task=files"]
    for key, split, required in (("train", "train", True), ("valid", valid, False), ("test", test, False)):
        try:
            s, t = parallel_files(directory.resolve(), split, src, tgt)
        except UserError:
            if required:
                raise
            continue
        out += [f"data.{key}_src={s}", f"data.{key}_tgt={t}"]
    return out


# the translation commands' decoding flags: every setting but the one limit for every input and the n-best
# list (one translation is printed per source)
TRANSLATION_EXCLUDES = ("max_new_tokens", "num_return_sequences")
TRANSLATION_DEFAULTS = {"max_len_a": 1.5, "max_len_b": 10}  # the recipes' Decoding


def add_generation_args(
    p: argparse.ArgumentParser,
    *,
    defaults: dict | None = None,
    exclude: tuple[str, ...] = (),
    helps: dict[str, str] | None = None,
) -> None:
    """One flag per setting of GenerationConfig (seq2bert/decoding/config.py: its help, bounds and aliases,
    e.g. --num-beams and --beam), with the command's ``defaults``; ``exclude``: settings the command does
    not take; ``helps``: the command's own wording of a setting. The values: ``generation_settings(args)``."""
    from seq2bert.decoding.config import bounds, options

    group = p.add_argument_group("decoding (seq2bert/decoding/config.py)")
    defaults, helps = defaults or {}, helps or {}
    for s in options():
        if s.name in exclude:
            continue
        flags = ["--" + s.name.replace("_", "-"), *s.option.aliases]
        default = defaults.get(s.name, s.default)
        text = helps.get(s.name, s.option.help)
        if s.type is bool:
            action = argparse.BooleanOptionalAction if default else "store_true"
            group.add_argument(*flags, dest=s.name, action=action, default=default, help=text)
            continue
        plain = s.name in helps or {s.option.ge, s.option.gt, s.option.le} == {None}
        limits = "" if plain else f"; {bounds(s.option)}"
        shown = (
            f" (default {default}{limits})" if default is not None else f" ({limits[2:]})" if limits else ""
        )
        group.add_argument(
            *flags, dest=s.name, type=s.type, default=default, metavar=s.option.metavar, help=text + shown
        )


def generation_settings(args: argparse.Namespace) -> dict:
    """The decoding settings the command's flags (``add_generation_args``) set, each checked against its
    bounds: a ConfigError naming the setting, and its flags when it has several (--num-beams, --beam)."""
    from seq2bert.decoding.config import check_setting, options
    from seq2bert.errors import ConfigError

    out = {}
    for s in options():
        if hasattr(args, s.name):
            out[s.name] = value = getattr(args, s.name)
            try:
                check_setting(s, value)
            except ConfigError as e:
                if not s.option.aliases:
                    raise
                flags = ", ".join(["--" + s.name.replace("_", "-"), *s.option.aliases])
                raise ConfigError(f"{s.name} ({flags}){str(e).removeprefix(s.name)}") from None
    return out


def decoding_of(args: argparse.Namespace):
    """A translation command's decoding (the recipes' ``Decoding`` with the flags' settings)."""
    from seq2bert.decoding.generation import Decoding

    return Decoding.of(**generation_settings(args))


def add_decoding_args(p: argparse.ArgumentParser) -> None:
    """A translation command's decoding flags: --num-beams (--beam), --length-penalty (GNMT's form), …"""
    add_generation_args(
        p,
        defaults=TRANSLATION_DEFAULTS,
        exclude=TRANSLATION_EXCLUDES,
        helps={"length_penalty": "beam search length penalty alpha of Wu et al. (2016), 0: none"},
    )


def add_source_length_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-source-length",
        type=int,
        metavar="N",
        help="truncate longer sources to their first N "
        "tokens, with a warning (default: the model's positions, else 512)",
    )


def stdin_text() -> str:
    """All of standard input, decoded as UTF-8: text that is not is a one-line UserError naming its line."""
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    try:
        return data if isinstance(data, str) else data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise UserError(f"<stdin>:{line}: invalid UTF-8 (expected UTF-8 text)") from None


def stdin_lines(keep_blank: bool = True) -> list[str]:
    """The lines of standard input, decoded as UTF-8: a line that is not is a one-line UserError naming it."""
    out = []
    for number, raw in enumerate(getattr(sys.stdin, "buffer", sys.stdin), 1):  # bytes, or text already
        try:
            line = (raw if isinstance(raw, str) else raw.decode("utf-8")).rstrip("\r\n")
        except UnicodeDecodeError:
            raise UserError(f"<stdin>:{number}: invalid UTF-8 (expected UTF-8 text)") from None
        if keep_blank or line.strip():
            out.append(line)
    return out
