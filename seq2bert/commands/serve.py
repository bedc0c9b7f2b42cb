"""``seq2bert serve``: the pipelines of loaded checkpoints over HTTP, with a page to try them."""

from __future__ import annotations

import argparse

from seq2bert.commands.common import add_compile_arg
from seq2bert.errors import UserError


def cmd_serve(args: argparse.Namespace) -> int:
    from seq2bert.serve import run
    from seq2bert.serve.app import Settings

    settings = Settings(
        max_batch_size=args.max_batch_size,
        max_wait_ms=args.max_wait_ms,
        max_queue=args.max_queue,
        timeout=args.timeout,
        max_body_bytes=args.max_body_bytes,
        max_text_chars=args.max_text_chars,
        max_items=args.max_items,
        max_answer_bytes=args.max_answer_bytes,
        read_timeout=args.read_timeout,
        max_connections=args.max_connections,
        show_paths=args.show_paths,
        int8=args.int8,
        compile=args.compile,
        drafts=tuple(args.draft),
    )
    counts = (
        "max_batch_size",
        "max_queue",
        "max_body_bytes",
        "max_text_chars",
        "max_items",
        "max_answer_bytes",
    )
    for name in (*counts, "max_connections"):
        if getattr(settings, name) < 1:
            raise UserError(f"--{name.replace('_', '-')}: at least 1, got {getattr(settings, name)}")
    if settings.max_wait_ms < 0:
        raise UserError(f"--max-wait-ms: at least 0, got {settings.max_wait_ms:g}")
    for name in ("timeout", "read_timeout"):
        if not getattr(settings, name) > 0:
            raise UserError(f"--{name.replace('_', '-')}: more than 0, got {getattr(settings, name):g}")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port: expected 0 … 65535, got {args.port}")
    run(args.models, host=args.host, port=args.port, settings=settings)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="serve checkpoints over HTTP: /v1/<pipeline>, dynamic batching, a page to try them",
        description="One process serving every checkpoint given: translation, classification, tagging, QA, "
        "fill-mask, embeddings, attention maps and generation, each at /v1/<pipeline> (JSON as the Python "
        "pipelines), with /v1/models, /health, /openapi.json and a page at /. Concurrent requests to one model "
        "are batched. Needs the extra serve: pip install -e '.[serve]'.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  seq2bert serve runs/sst2/best runs/ner/best $MINILM\n"
        "  seq2bert serve sentiment=runs/sst2/best --port 8080 --max-wait-ms 2\n"
        '  curl -s localhost:8000/v1/classify -d \'{"texts": ["a gripping film"]}\'',
    )
    p.add_argument(
        "models",
        nargs="+",
        metavar="DIR",
        help="checkpoint or run directories or Hub model names (org/name[@revision]), each DIR or NAME=DIR",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="0 … 65535 (0: any free port; default: 8000)")
    p.add_argument(
        "--max-batch-size", type=int, default=32, help="inputs gathered into one batch (1: no batching)"
    )
    p.add_argument("--max-wait-ms", type=float, default=5.0, help="how long a batch waits for more requests")
    p.add_argument(
        "--max-queue", type=int, default=256, help="requests waiting per model and pipeline; more get 503"
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before a waiting request gets 504")
    p.add_argument("--max-body-bytes", type=int, default=1_000_000, help="larger request bodies get 413")
    p.add_argument("--max-text-chars", type=int, default=10_000, help="longer texts get 413")
    p.add_argument("--max-items", type=int, default=256, help="more texts in one request get 413")
    p.add_argument(
        "--max-answer-bytes",
        type=int,
        default=16_000_000,
        help="an attention answer larger than this gets 413, saying which max_tokens or layer fits (default: 16 MB)",
    )
    p.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        help="seconds a request's headers, then its body, may take to arrive; later gets 408 (default: 10)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=128,
        help="open connections at most; one more closes (503) the one that has waited longest without a "
        "request (default: 128)",
    )
    p.add_argument(
        "--show-paths",
        action="store_true",
        help="/v1/models and the errors show the models' absolute paths (default: relative ones, names)",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="translate and generate decode with int8 weights (a scale per row; each token's inputs to those "
        "layers int8 too where the CPU has VNNI/AMX; bf16 between the layers where native, else fp32)",
    )
    add_compile_arg(
        p,
        "translate and generate decode with the decoding stack under torch.compile (the first requests "
        "compile it: seconds to minutes; then each step runs faster)",
    )
    p.add_argument(
        "--draft",
        action="append",
        default=[],
        metavar="[NAME=]DIR",
        help="speculative decoding: a smaller model of the same vocabulary proposes tokens the served model "
        "NAME checks (the same output; repeatable; a bare DIR: the one model that translates or generates)",
    )
    p.set_defaults(func=cmd_serve)
