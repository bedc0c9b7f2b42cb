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


def add_data_dir_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data", metavar="DIR", help="folder of parallel text: {train,val,test...}.{SRC,TGT}[.gz]"
    )
    p.add_argument("--src", default="de", help="source language suffix with --data (default: de)")
    p.add_argument("--tgt", default="en", help="target language suffix with --data (default: en)")
    p.add_argument("--valid-split", default="val", help="validation split name with --data (default: val)")
    p.add_argument("--test-split", default="test_2016_flickr", help="test split name with --data")


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", metavar="FILE", help="a YAML or JSON run configuration (see `seq2bert config`)"
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key, dotted, e.g. --set train.lr=3e-4 (repeatable)",
    )
    p.add_argument("--task", help="built-in synthetic task: copy, reverse, sort or lang (sets data.task)")
    add_data_dir_args(p)


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

    if not directory.is_dir():
        raise UserError(f"--data {directory}: no such folder")
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


def decoding_of(args: argparse.Namespace):
    from seq2bert.decoding.generation import Decoding

    if args.beam < 1:
        raise UserError(f"--beam: expected a beam size of at least 1, got {args.beam}")
    return Decoding(num_beams=args.beam, length_penalty=args.length_penalty)


def add_decoding_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=int, default=1, metavar="K", help="beam size (default 1: greedy decoding)")
    p.add_argument(
        "--length-penalty",
        type=float,
        default=1.0,
        metavar="ALPHA",
        help="beam search length penalty α of Wu et al. (2016) (default 1.0; 0 = none)",
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
