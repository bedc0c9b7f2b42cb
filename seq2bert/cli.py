"""The ``seq2bert`` command: thin subcommands, each calling one public function.

Mistakes in the input (a bad config key, a malformed data file, a missing checkpoint) print one line
``seq2bert: error: …`` and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

from seq2bert.commands import COMMANDS
from seq2bert.errors import UserError


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


def main(argv: list[str] | None = None) -> int:
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
    except KeyboardInterrupt:
        print("seq2bert: interrupted (resume with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
