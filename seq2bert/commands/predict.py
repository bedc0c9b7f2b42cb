"""``seq2bert predict``: a model's predictions for every row of a file, written beside the row's columns
(seq2bert/pipelines/predict.py)."""

from __future__ import annotations

import argparse

from seq2bert.commands.common import BF16, add_bf16_arg, add_model_arg


def cmd_predict(args: argparse.Namespace) -> int:
    from seq2bert.pipelines.predict import Settings, predict_file

    choices = (
        [c.strip() for c in args.choice_columns.split(",") if c.strip()] if args.choice_columns else None
    )
    columns = {
        "text": args.column,
        "pair": args.pair_column,
        "question": args.question_column,
        "context": args.context_column,
        "choices": tuple(choices) if choices else None,
    }
    settings = Settings(
        batch_size=args.batch_size,
        bf16=BF16[args.bf16],
        max_new_tokens=args.max_new_tokens,
        num_beams=args.num_beams,
        words=args.words,
    )
    done = predict_file(
        args.model,
        args.file,
        args.out,
        task=args.task,
        columns=columns,
        fmt=args.format,
        settings=settings,
        chunk_size=args.chunk_size,
        progress=not args.no_progress,
    )
    print(f"{done['out']}: {done['rows']} rows ({done['shape']})")
    return 0


CHUNK = 10_000  # pipelines/predict.py's CHUNK, the default of --chunk-size


def register(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="predict every row of a CSV, TSV, JSON Lines or Parquet file; rows and predictions to --out",
        description="Run a model over a file's rows: a fine-tuning run directory (its best/ checkpoint, and "
        "the columns the run read) or any checkpoint directory, whose config.json says what is predicted — "
        "classify (label, score; pairs with --pair-column), regression (score), multi-label (labels, scores), "
        "tag (entities), qa (answer, score, start, end), choice (choice, score, scores), embed (embedding), "
        "translate (translation), generate (generation). The file is read and written CHUNK rows at a time "
        "(a file larger than memory works), each chunk's texts in batches of similar length; the output keeps "
        "the input's order and columns and is written atomically (nothing at --out when a row is bad).",
        epilog="examples:\n  seq2bert predict runs/sst2 reviews.csv --column sentence --out labelled.jsonl\n"
        "  seq2bert predict runs/mrpc pairs.tsv --column sentence1 --pair-column sentence2 --out pairs.csv\n"
        "  seq2bert predict runs/squad questions.jsonl --out answers.parquet\n"
        "  seq2bert predict all-MiniLM-L6-v2/ sentences.csv --out vectors.parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_arg(p, "a fine-tuning run (its best/ and the columns it read) or a model to predict with")
    p.add_argument("file", metavar="FILE", help="the rows: CSV, TSV, JSON Lines or Parquet (by extension)")
    p.add_argument("--out", required=True, help="OUT.jsonl, OUT.csv, OUT.tsv or OUT.parquet")
    p.add_argument("--column", help="the text's column (default: the run's, else text); choice: the context")
    p.add_argument(
        "--pair-column",
        help="the second text's column, for a pair classifier (multiple choice: each choice's start)",
    )
    p.add_argument("--question-column", help="qa: the question's column (default: question)")
    p.add_argument("--context-column", help="qa: the context's column (default: context)")
    p.add_argument("--choice-columns", metavar="A,B,…", help="multiple choice: the choices' columns")
    p.add_argument(
        "--task",
        help="what to predict: classify, regression, multi-label, tag, qa, choice, embed, translate, "
        "generate (default: what the model's config.json says; embed reads any encoder)",
    )
    p.add_argument("--format", help="the input's format: csv | tsv | jsonl | parquet (default: by extension)")
    p.add_argument("--batch-size", type=int, default=32, help="texts per batch (default: 32)")
    p.add_argument(
        "--chunk-size",
        type=int,
        default=CHUNK,
        help=f"rows read, predicted and written at a time (default: {CHUNK})",
    )
    p.add_argument(
        "--max-new-tokens", type=int, default=50, help="generate: tokens per continuation (default: 50)"
    )
    p.add_argument(
        "--num-beams", "--beam", type=int, default=1, help="translate, generate: beam size (default: greedy)"
    )
    p.add_argument(
        "--words",
        action="store_true",
        help="tag: each tagged word (column words) instead of grouped entities",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_bf16_arg(p)
    p.set_defaults(func=cmd_predict)
