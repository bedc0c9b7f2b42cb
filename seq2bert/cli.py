"""The ``seq2bert`` command: thin subcommands, each calling one public function.

Mistakes in the input (a bad config key, a malformed data file, a missing checkpoint) print one line
``seq2bert: error: …`` and exit with status 2, without a traceback; a run that fails through no mistake of
its input (a non-finite loss, a full or read-only disk, memory that cannot be allocated) prints one line
``seq2bert: failed: …`` and exits with status 1, what it wrote before kept.

Plugins: ``SEQ2BERT_PLUGINS=module[,module…]`` names modules imported before the arguments are read (from
the Python path). A module that registers a family (``seq2bert.models.registry.register``) makes it a
choice of every recipe's model section, from a YAML file or ``--set model.model_type=…``, and lets the
commands load its checkpoints (docs/architecture.md, "Adding a family").
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys

from seq2bert.commands import COMMANDS
from seq2bert.errors import RunFailure, UserError


def build_parser() -> argparse.ArgumentParser:
    """The parser; each module of seq2bert/commands adds its own subcommands (COMMANDS, in help order)."""
    parser = argparse.ArgumentParser(
        prog="seq2bert",
        description="The lineage of neural sequence models, from Seq2Seq to BERT: train, evaluate, translate.",
        epilog="Start with `seq2bert tour`; every subcommand has its own --help.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


PLUGINS = "SEQ2BERT_PLUGINS"


def import_plugins() -> list[str]:
    """Import the modules $SEQ2BERT_PLUGINS names (comma-separated); a one-line error for one that fails."""
    names = [n.strip() for n in os.environ.get(PLUGINS, "").split(",") if n.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise UserError(f"${PLUGINS}: cannot import {name!r} ({e})") from None
    return names


def not_utf8(argv: list[str]) -> str | None:
    """The first argument that was not valid UTF-8 (Python keeps its bytes as surrogate escapes), shown."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return repr(arg.encode("utf-8", "surrogateescape"))[2:-1]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if (bad := not_utf8(argv)) is not None:
        print(f"seq2bert: error: argument '{bad}' is not valid UTF-8 (expected UTF-8 text)", file=sys.stderr)
        return 2
    try:
        import_plugins()
    except UserError as e:
        print(f"seq2bert: error: {e}", file=sys.stderr)
        return 2
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and isinstance(getattr(args, "text", None), list) and not any(x.startswith("-") for x in extra):
        args.text = [*args.text, *extra]  # `translate RUN --beam 5 "text"`: texts after the options
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return args.func(args)
    except UserError as e:
        print(f"seq2bert: error: {e}", file=sys.stderr)
        return 2
    except RunFailure as e:
        print(f"seq2bert: failed: {e}", file=sys.stderr)
        return 1
    except (IsADirectoryError, NotADirectoryError) as e:  # a folder given for a file, or a file for a folder
        what = "a folder, expected a file" if isinstance(e, IsADirectoryError) else "not a folder"
        print(f"seq2bert: error: {e.filename}: {what}", file=sys.stderr)
        return 2
    except OSError as e:  # a full or read-only disk, a missing permission: what failed, and where
        where = f": {e.filename}" if e.filename else ""
        print(f"seq2bert: failed: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    except (MemoryError, RuntimeError) as e:  # torch's allocators raise RuntimeErrors
        message = str(e)
        if not isinstance(e, MemoryError) and "allocate" not in message and "out of memory" not in message:
            raise
        asked = re.search(r"allocate (?:memory: you tried to allocate )?(\d+) bytes", message)
        size = f" ({int(asked.group(1)) / 2**30:,.1f} GiB asked)" if asked else ""
        print(
            f"seq2bert: failed: out of memory{size}; a smaller model, batch or sequence length fits",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("seq2bert: interrupted (resume with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
