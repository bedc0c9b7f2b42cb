"""Subcommands of the translation recipes: the tour, the demo, training, averaging, Table 3's variations,
evaluation (a fine-tuned BERT run is handed to its own scorer), translation, alignment and comparison."""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2bert.commands.common import (
    BF16,
    add_bf16_arg,
    add_compile_arg,
    add_config_args,
    add_data_dir_args,
    add_decoding_args,
    add_draft_arg,
    add_int4_decoding_arg,
    add_int8_decoding_arg,
    add_model_arg,
    add_source_length_arg,
    data_dir_overrides,
    decoding_of,
    load_run_config,
    stdin_lines,
)
from seq2bert.commands.encoders import add_user_file_args
from seq2bert.errors import UserError

EPILOG_TRAIN = """examples:
  seq2bert train --task copy --out runs/copy
  seq2bert train --data ../shared/data/multi30k --src de --tgt en --out runs/m30k --set train.max_minutes=55
  seq2bert train --config my.yaml --set train.lr=3e-4 --set model.num_layers=2 --out runs/x
  seq2bert train --out runs/x --resume          # continue a killed run from its last checkpoint

Every key of the configuration can be set with --set section.key=value (see `seq2bert config`)."""


def cmd_tour(args: argparse.Namespace) -> int:
    from seq2bert.recipes.tour import format_tour, run_tour

    data = None
    if args.data:
        data = data_dir_overrides(Path(args.data), args.src, args.tgt, args.valid_split, args.test_split)
    if args.budget <= 0:
        raise UserError(f"--budget must be > 0, got {args.budget}")
    bf16 = BF16[args.bf16]
    models = args.models.split(",") if args.models else None
    result = run_tour(
        args.out,
        budget=args.budget,
        seed=args.seed,
        data=data,
        bf16=bf16,
        models=models,
        overrides=tuple(args.overrides),
    )
    print(format_tour(result))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from seq2bert.recipes.demo import format_demo, run_demo

    if not args.budget > 0:
        raise UserError(f"--budget: expected a positive number, got {args.budget}")
    print(format_demo(run_demo(args.out, budget=args.budget)))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from seq2bert.recipes.translation import train
    from seq2bert.report import format_table

    cfg = load_run_config(args)
    row = train(cfg, args.out, resume=args.resume)
    if row.pop("is_main", True):
        print(format_table([row]))
    return 0


def cmd_average(args: argparse.Namespace) -> int:
    from seq2bert.io import check_output_dir
    from seq2bert.training.checkpoint import AVERAGED, average_checkpoints, list_checkpoints

    run_dir = Path(args.run_dir)
    if args.last < 2:
        raise UserError(f"--last: expected at least 2 checkpoints to average, got {args.last}")
    paths = list_checkpoints(run_dir)[-args.last :]
    if len(paths) < 2:
        raise UserError(f"{run_dir}: {len(paths)} checkpoint-<step>/ folder(s) found, at least 2 are needed")
    # the default RUN_DIR/averaged is the run's own: a previous average there is replaced
    out = check_output_dir(
        args.out or run_dir / "averaged",
        command="average",
        mark=AVERAGED,
        inputs=tuple(paths),
        overwrite=args.overwrite or not args.out,
    )
    average_checkpoints(paths, out)
    note = "" if len(paths) == args.last else f" (only {len(paths)} of the {args.last} asked for exist)"
    print(f"averaged {', '.join(p.name for p in paths)}{note} into {out}")
    return 0


def cmd_variations(args: argparse.Namespace) -> int:
    from seq2bert.recipes.variations import format_variations, run_variations

    args.overrides = ["model.model_type=transformer", *args.overrides]
    args.resume = False
    cfg = load_run_config(args)
    rows = [r.strip() for arg in args.rows for r in arg.split(",") if r.strip()]  # --rows A,B or --rows A B
    print(format_variations(run_variations(cfg, rows, args.out)))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from seq2bert.commands.encoders import cmd_evaluate_finetuned, is_finetuned

    if is_finetuned(args.checkpoint):
        if args.int8 or args.bf16 != "false":
            raise UserError(
                "--int8 and --bf16 are for translation checkpoints (a fine-tuned BERT: seq2bert quantize)"
            )
        return cmd_evaluate_finetuned(args)
    if args.task or args.data or args.out:
        raise UserError("--task, --data and --out are for fine-tuned BERT checkpoints")
    import torch

    from seq2bert.data.parallel import read_parallel
    from seq2bert.models.weight_only import int8_description
    from seq2bert.pipelines.loading import inference_precision
    from seq2bert.recipes.translation import evaluate, load, load_pairs
    from seq2bert.report import format_metrics, format_table

    if args.rescore:
        from seq2bert.recipes.translation import rescore_run

        if (
            args.source
            or args.by_length
            or args.num_beams != 1
            or args.split != "test"
            or args.int8
            or args.bf16 != "false"
        ):
            raise UserError(
                "--rescore scores the run's own splits (greedy, beam 5, by length); it takes no other options"
            )

        print(format_table([rescore_run(args.checkpoint)]))
        return 0
    model, tok, run = load(args.checkpoint)
    if args.source:
        pairs = read_parallel(args.source, args.target).pairs
        label = args.source
    else:
        if run is None:
            raise UserError(f"{args.checkpoint}: no run.json; give --source/--target files to evaluate on")
        pairs = load_pairs(run.data)[args.split]
        label = f"{run.data.task} {args.split}"
        if not pairs:
            raise UserError(f"{args.checkpoint}: the run has no {args.split} split; give --source/--target")
    decoding = decoding_of(args)
    # the copy translate runs
    with inference_precision(model, BF16[args.bf16], kept=True, int8=args.int8) as net:
        result = evaluate((net, tok, run), pairs, decoding=decoding, by_length=args.by_length)
        weight = next(net.parameters())
        precision = (
            "bf16 autocast"
            if torch.is_autocast_enabled(weight.device.type)
            else str(weight.dtype).removeprefix("torch.")
        )
        precision = int8_description(net, precision) if args.int8 else precision
    buckets = result.pop("bleu_by_length", None)
    search = "greedy" if decoding.num_beams == 1 else f"beam {decoding.num_beams}"
    print(format_metrics(result, title=f"{args.checkpoint} on {label} ({search}, {precision})"))
    if buckets:
        rows = [{"source words": b, **v} for b, v in buckets.items()]
        print(
            format_table(
                rows,
                [
                    ("source words", "source words"),
                    ("sentences", "sentences"),
                    ("bleu", "BLEU"),
                    ("bleu_lowercase", "BLEU (lc)"),
                ],
            )
        )
    return 0


def cmd_translate(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import translate

    if args.text:
        texts = args.text
    elif args.input:
        from seq2bert.data.parallel import read_lines

        texts = read_lines(args.input)
    else:
        texts = stdin_lines()
    if args.show_alignment and args.draft:
        raise UserError("--show-alignment decodes with the model alone; leave out --draft")
    if args.show_alignment:
        from seq2bert.models.alignment import align, loaded
        from seq2bert.pipelines.loading import inference_precision
        from seq2bert.viz.attention import plot_alignment

        out = Path(args.show_alignment)
        model, tok = loaded(args.checkpoint)
        for i, text in enumerate(texts):
            try:  # in the precision translate decodes in (bf16 where native: the model's bf16-weights copy)
                with inference_precision(
                    model, BF16[args.bf16], kept=True, int8=args.int8, int4=args.int4
                ) as net:
                    a = align(
                        net,
                        text,
                        tokenizer=tok,
                        decoding=decoding_of(args),
                        max_source_length=args.max_source_length,
                    )
            except ValueError as e:
                raise UserError(f"{args.checkpoint}: {e}") from None
            png = out if len(texts) == 1 else out.with_name(f"{out.stem}-{i + 1}{out.suffix}")
            print(
                f"{a.translation}\t{plot_alignment(a.source_tokens, a.target_tokens, a.weights, png, title=a.translation)}"
            )
        return 0
    for line in translate(
        args.checkpoint,
        texts,
        batch_size=args.batch_size,
        decoding=decoding_of(args),
        int8=args.int8,
        bf16=BF16[args.bf16],
        max_source_length=args.max_source_length,
        draft=args.draft,
        compile=args.compile,
        int4=args.int4,
    ):
        print(line)
    return 0


def cmd_align(args: argparse.Namespace) -> int:
    from seq2bert.models.alignment import align
    from seq2bert.viz.attention import plot_alignment

    try:
        a = align(
            args.checkpoint, args.text, decoding=decoding_of(args), max_source_length=args.max_source_length
        )
    except ValueError as e:
        raise UserError(f"{args.checkpoint}: {e}") from None
    print(a.translation)
    print(plot_alignment(a.source_tokens, a.target_tokens, a.weights, args.out, title=a.translation))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from seq2bert.report import format_table
    from seq2bert.viz.attention import plot_bleu_by_length

    rows, buckets = [], {}
    for run in args.runs:
        path = Path(run) / "results.json"
        if not path.is_file():
            raise UserError(f"{run}: no results.json (is it a finished run directory?)")
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
        rows.append(row)
        if "test_bleu_by_length" in row:
            buckets[f"{row.get('model', run)} ({Path(run).name})"] = row["test_bleu_by_length"]
    print(format_table(rows))
    if args.out:
        if not buckets:
            raise UserError("--out: none of these runs has BLEU by source length (test_bleu_by_length)")
        print(plot_bleu_by_length(buckets, args.out))
    return 0


def register(sub) -> None:
    """Add this module's subcommands to the ``seq2bert`` parser's subparsers."""
    p = sub.add_parser(
        "tour",
        help="the lineage tour: Seq2Seq, reversed, Cho et al., Bahdanau, Luong, Transformer on one task, one table",
        description="Train the encoder-decoders of the lineage on the same task with the same budget (steps "
        "over the same batches), score each overall and by source length, and plot quality against source "
        "length and one attention map per attention model. Default: the built-in synthetic language pair, "
        "under 10 minutes on 2 CPU cores; --data trains on real parallel text.",
    )
    p.add_argument("--out", default="runs/tour", help="folder of the runs and plots (default: runs/tour)")
    p.add_argument("--budget", type=float, default=1.0, help="scale the steps of every model (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default: 0)")
    p.add_argument(
        "--bf16",
        choices=("auto", "true", "false"),
        default="auto",
        help="train.bf16 of every model (default: auto, bf16 autocast where the CPU computes it natively)",
    )
    p.add_argument(
        "--models",
        metavar="A,B",
        help="train only these models (default: all): "
        "seq2seq, seq2seq-reversed, cho, bahdanau, luong, transformer",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key of every run, e.g. --set train.scheduled_sampling.schedule="
        "inverse_sigmoid (repeatable)",
    )
    add_data_dir_args(p)
    p.set_defaults(func=cmd_tour)

    p = sub.add_parser(
        "demo",
        help="the main job: train a Seq2Seq on the built-in task, evaluate, translate",
        description="Train the default Seq2Seq (Sutskever et al. 2014) on the built-in synthetic "
        "language pair, evaluate it, translate a few examples and print a results table. "
        "No download; a few minutes on 2 CPU cores.",
    )
    p.add_argument("--out", default="runs/demo", help="run directory (default: runs/demo)")
    p.add_argument("--budget", type=float, default=1.0, help="scale the training time (default 1.0)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "train",
        help="train a model (Seq2Seq) on a synthetic task or parallel text",
        description="Train a sequence-to-sequence model with the seq2bert engine: checkpoints, "
        "log.jsonl, curves.png and results.json land in --out.",
        epilog=EPILOG_TRAIN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_args(p)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "average",
        help="average a run's last checkpoints into one model (Vaswani et al. 2017, Sect. 6.1)",
        description="Write a checkpoint whose weights are the mean of the run's last --last checkpoint-<step>/ "
        "folders (the Transformer paper averages the last 5); evaluate, translate or fine-tune from it like any "
        "checkpoint. train.average_last=N does this at the end of training and keeps the average as best/ "
        "when it scores better on validation.",
    )
    p.add_argument("run_dir", help="run directory holding checkpoint-<step>/ folders")
    p.add_argument("--last", type=int, default=5, help="how many of the last checkpoints (default: 5)")
    p.add_argument("--out", help="checkpoint directory to write, new or empty (default: RUN_DIR/averaged)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it holds a previous average")
    p.set_defaults(func=cmd_average)

    p = sub.add_parser(
        "variations",
        help="Transformer variations (Vaswani et al. Table 3, rows A–E): train each, print dev PPL / BLEU",
        description="Train the base Transformer of the configuration and its variations — (A) heads 1/4/8/16 "
        "at constant compute, (B) smaller d_k, (C) model size (N, d_model, d_ff), (D) dropout and label "
        "smoothing, (E) learned positional embeddings — with the same data and budget (train.max_minutes or "
        "train.max_steps), and print a table shaped like Table 3. One run directory per row in --out; "
        "run again to resume.",
        epilog="example:\n  seq2bert variations --data ../shared/data/multi30k --rows A,B,C,D,E --out runs/var "
        "--set train.max_minutes=8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_args(p)
    p.add_argument(
        "--rows", nargs="+", default=["A", "B"], help="rows of Table 3 to train: some of A B C D E (or A,B,C)"
    )
    p.add_argument("--out", required=True, help="folder of the rows' run directories")
    p.set_defaults(func=cmd_variations)

    p = sub.add_parser(
        "evaluate",
        help="score a checkpoint: BLEU and perplexity (translation), or a fine-tuned BERT's dev metrics",
        description="Evaluate a checkpoint (or a run directory's best) on its run's split or on "
        "given parallel files; BLEU is sacrebleu's, cased and lowercased. A fine-tuned BERT run (or "
        "its best/) is scored on its task's dev set with the task's metrics.",
    )
    add_model_arg(p, "a translation model (a run directory: its best/)", dest="checkpoint")
    p.add_argument(
        "--split", default="test", choices=["train", "valid", "test"], help="split of the run's data"
    )
    p.add_argument("--source", help="source file (plain/.gz) or a TSV of source<TAB>target")
    p.add_argument("--target", help="target file aligned with --source")
    p.add_argument("--by-length", action="store_true", help="also BLEU by source length (in words)")
    p.add_argument(
        "--rescore",
        action="store_true",
        help="score a run directory's best checkpoint again (greedy, beam 5, by length), update its results.json",
    )
    p.add_argument("--task", help="fine-tuned BERT: the task to score on (default: the run's)")
    p.add_argument(
        "--data", metavar="DIR", help="fine-tuned BERT: the task's data folder (default: the run's)"
    )
    p.add_argument("--out", help="fine-tuned BERT: write the dev predictions to this JSONL file")
    add_user_file_args(p)  # --task sentence-embedding --valid FILE: any encoder's embeddings on pairs
    add_decoding_args(p)
    add_int8_decoding_arg(p, "translation: score the model decoding with int8 weights (a scale per row)")
    p.add_argument(
        "--bf16",
        choices=tuple(BF16),
        default="false",
        help="translation: score in bf16 as seq2bert translate decodes by default (a bf16-weights copy; "
        "default: false, fp32, the precision results.json reports; auto: where native)",
    )
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "translate",
        help="translate text with a checkpoint (greedy or beam search)",
        description="Translate the given texts, a file (--input) or standard input, one per line.",
    )
    add_model_arg(p, "a translation model (a run directory: its best/)", dest="checkpoint")
    p.add_argument("text", nargs="*", help="texts to translate (default: read lines from --input or stdin)")
    p.add_argument("--input", help="file with one source sentence per line")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--show-alignment",
        nargs="?",
        const="alignment.png",
        metavar="PNG",
        help="also draw each translation's attention alignment (default alignment.png; -N per text)",
    )
    add_decoding_args(p)
    add_source_length_arg(p)
    add_int8_decoding_arg(p)
    add_int4_decoding_arg(p)
    add_draft_arg(p, "a smaller translation model")
    add_compile_arg(p)
    add_bf16_arg(p)
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser(
        "align",
        help="translate one sentence and plot its attention weights (PNG)",
        description="Translate TEXT with an attention model and draw the alignment matrix: one row per "
        "target token, one column per source token (Bahdanau et al. 2015, Fig. 3).",
    )
    add_model_arg(p, "a translation model (a run directory: its best/)", dest="checkpoint")
    p.add_argument("text", help="the source sentence")
    p.add_argument("--out", default="alignment.png", help="PNG path (default: alignment.png)")
    add_decoding_args(p)
    add_source_length_arg(p)
    p.set_defaults(func=cmd_align)

    p = sub.add_parser(
        "compare",
        help="one results table for several finished runs; plot BLEU by source length",
        description="Print the results rows (results.json) of several run directories side by side and, "
        "with --out, plot their test BLEU by source-sentence length (Bahdanau et al. 2015, Fig. 2).",
    )
    p.add_argument("runs", nargs="+", help="run directories")
    p.add_argument("--out", help="PNG path for the BLEU-by-length plot")
    p.set_defaults(func=cmd_compare)
