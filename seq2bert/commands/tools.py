"""Subcommands that inspect or prepare: attention maps, positional encodings, the configuration, tokenizers,
training curves and the gradients of recurrent networks."""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2bert.commands.common import (
    add_config_args,
    add_model_arg,
    load_run_config,
)
from seq2bert.errors import UserError


def cmd_attention(args: argparse.Namespace) -> int:
    from seq2bert.viz.inspect import attention_maps, plot_heads, select, write_head_view

    if args.max_tokens < 1:
        raise UserError(f"--max-tokens: at least 1, got {args.max_tokens}")
    maps = attention_maps(args.model, args.text, pair=args.pair, max_tokens=args.max_tokens)
    kind = args.kind or next(iter(maps.layers))
    weights = select(maps, kind, args.layer)
    rows, cols = maps.tokens[kind]
    layer = args.layer % len(maps.layers[kind])
    title = f"{kind} attention, layer {layer}" + (f", head {args.head}" if args.head is not None else "")
    print(plot_heads(weights, rows, cols, args.out, head=args.head, title=title))
    if args.html:
        print(write_head_view(maps, args.html))
    return 0


def cmd_positions(args: argparse.Namespace) -> int:
    from seq2bert.viz.inspect import plot_positional_encoding

    print(plot_positional_encoding(args.d_model, args.length, args.out, interleaved=not args.split))
    return 0


# the recipes whose configuration `seq2bert config RECIPE` prints: the command that runs it → its config class
RECIPE_CONFIGS = {
    "train": ("seq2bert.recipes.translation", "TranslationConfig"),
    "train-lm": ("seq2bert.recipes.lm", "LMConfig"),
    "pretrain": ("seq2bert.recipes.pretrain", "PretrainConfig"),
    "finetune": ("seq2bert.recipes.finetune", "FinetuneConfig"),
    "distill": ("seq2bert.recipes.distill", "DistillConfig"),
}


def cmd_config(args: argparse.Namespace) -> int:
    import importlib

    import yaml

    from seq2bert import config as config_io
    from seq2bert.commands.common import load_config

    if args.recipe == "train":
        cfg = load_run_config(args)
    elif args.task or args.data:
        raise UserError(
            f"--task and --data are the translation recipe's (seq2bert config train), not {args.recipe}'s"
        )
    else:
        module, name = RECIPE_CONFIGS[args.recipe]
        cfg = load_config(getattr(importlib.import_module(module), name), args)
    text = yaml.safe_dump(config_io.to_dict(cfg), sort_keys=False)
    if args.write:
        config_io.save(cfg, args.write)
    print(text, end="")
    return 0


TOKENIZER_KINDS = {
    "bpe": "SentencePiece-like BPE, spaces kept as ▁ (the default)",
    "wordpiece": "BERT's WordPiece with ## continuations",
    "word": "whole words, for teaching",
    "bytelevel-bpe": "GPT-2's byte-level BPE: exact round trip, <|endoftext|> last, keeps case",
    "gpt1-bpe": "GPT-1's BPE: lower-cased, BERT-style words, </w> suffix, <unk>",
}
GPT_KINDS = ("bytelevel-bpe", "gpt1-bpe")


def cmd_tokenizer(args: argparse.Namespace) -> int:
    from seq2bert.data.tokenization import Tokenizer

    if args.action == "train":
        tok = Tokenizer.train(
            [Path(f) for f in args.files],  # Path: read the files (a str would be a text)
            kind=args.kind,
            vocab_size=args.vocab_size,
            min_frequency=args.min_frequency,
            lowercase=args.lowercase,
        )
        tok.save(args.out)
        written = ["tokenizer.json"] + (["vocab.json", "merges.txt"] if args.kind in GPT_KINDS else [])
        where = ", ".join(str(Path(args.out) / name) for name in written)
        print(f"{args.kind} vocabulary of {tok.vocab_size} tokens written to {where}")
    else:
        tok = Tokenizer.from_file(args.tokenizer)
        enc = tok.encode(args.text, args.pair)
        for token, i, t, (s, e) in zip(enc.tokens, enc.ids, enc.type_ids, enc.offsets, strict=True):
            print(f"{i:>7}  {t}  {s:>4}-{e:<4} {token}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from seq2bert.viz.curves import plot_training_curves

    run = Path(args.run)
    log_path = run / "log.jsonl" if run.is_dir() else run
    out = Path(args.out) if args.out else log_path.with_name("curves.png")
    print(plot_training_curves(log_path, out))
    return 0


def cmd_gradients(args: argparse.Namespace) -> int:
    from seq2bert.recipes.gradients import GradientsConfig, format_table, run_gradients

    cfg = GradientsConfig(length=args.length, steps=args.steps, seed=args.seed)
    results = run_gradients(args.out, cfg)
    print(format_table(results))
    print(f"written: {Path(args.out) / 'gradients.png'}, {Path(args.out) / 'gradients.json'}")
    return 0


def register(sub) -> None:
    """Add this module's subcommands to the ``seq2bert`` parser's subparsers."""
    p = sub.add_parser(
        "attention",
        help="attention heatmaps of any layer and head (PNG) and an offline HTML head view",
        description="Run MODEL on TEXT and draw the attention weights of one layer: every head, or --head. "
        "MODEL is an encoder directory: BERT, RoBERTa, ALBERT, ELECTRA, SpanBERT (encoder self-attention; --pair "
        "for segment B), or a translation checkpoint (encoder self-, decoder self- and cross-attention over its "
        "own translation).",
    )
    add_model_arg(p, "an encoder directory (BERT, RoBERTa, …) or a translation checkpoint / run directory")
    p.add_argument("text")
    p.add_argument("--pair", help="BERT: the second segment")
    p.add_argument(
        "--kind", choices=["encoder", "decoder", "cross"], help="which attention (default: the first)"
    )
    p.add_argument("--layer", type=int, default=-1, help="layer, from 0 (default: -1, the last)")
    p.add_argument("--head", type=int, help="one head (default: all heads of the layer)")
    p.add_argument("--out", default="attention.png", help="PNG path (default: attention.png)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML head view of every layer")
    p.add_argument(
        "--max-tokens",
        type=int,
        default=128,
        metavar="N",
        help="show the first N tokens of the text (and of a translation), with a warning when it is longer "
        "(default: 128; the maps grow with N²)",
    )
    p.set_defaults(func=cmd_attention)

    p = sub.add_parser("positions", help="the sinusoidal positional encodings as a heatmap (PNG)")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--length", type=int, default=100, help="number of positions (default: 100)")
    p.add_argument(
        "--split", action="store_true", help="all sines then all cosines (Marian) instead of interleaved"
    )
    p.add_argument("--out", default="positions.png", help="PNG path (default: positions.png)")
    p.set_defaults(func=cmd_positions)

    p = sub.add_parser(
        "config",
        help="print a recipe's full configuration (defaults, file and overrides applied)",
        description="Print the full configuration of a recipe as YAML: every key --set can change "
        "(--task and --data: the translation recipe's).",
        epilog="examples:\n  seq2bert config                      # train (translation)\n"
        "  seq2bert config pretrain --set model.model_type=roberta\n"
        "  seq2bert config finetune --write my.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "recipe",
        nargs="?",
        default="train",
        choices=tuple(RECIPE_CONFIGS),
        help="the command whose configuration to print (default: train)",
    )
    add_config_args(p)
    p.add_argument("--write", metavar="FILE", help="also write it to FILE (.yaml or .json)")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser(
        "tokenizer",
        help="train a WordPiece / BPE / GPT BPE / word vocabulary, or show an encoding",
        description="`seq2bert tokenizer train --kind bpe --vocab-size 8000 --out DIR FILE...` or "
        "`seq2bert tokenizer encode TOKENIZER TEXT [--pair TEXT]`.",
    )
    tsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    t = tsub.add_parser(
        "train",
        help="train a vocabulary from text files (plain or .gz)",
        description="Train a vocabulary on text files, one text a line. Kinds:\n"
        + "\n".join(f"  {kind:<14} {text}" for kind, text in TOKENIZER_KINDS.items())
        + "\nThe GPT kinds also write GPT's vocab.json + merges.txt, which transformers reads.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("files", nargs="+")
    t.add_argument("--kind", default="bpe", choices=list(TOKENIZER_KINDS), help="see above (default: bpe)")
    t.add_argument("--vocab-size", type=int, default=8000, help="bytelevel-bpe: at least 257 (default: 8000)")
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--lowercase", action="store_true", help="bpe, wordpiece, word: lower-case the text")
    t.add_argument("--out", required=True, help="folder for tokenizer.json (and vocab.json + merges.txt)")
    t = tsub.add_parser("encode", help="show tokens, ids, type ids and offsets of a text (or pair)")
    t.add_argument(
        "tokenizer", help="tokenizer.json, vocab.json + merges.txt, vocab.txt or a folder holding one"
    )
    t.add_argument("text")
    t.add_argument("--pair", help="second text of a pair")
    p.set_defaults(func=cmd_tokenizer)

    p = sub.add_parser(
        "plot",
        help="plot the training curves of a run (PNG)",
        description="Plot loss, validation metrics and learning rate from a run's log.jsonl.",
    )
    p.add_argument("run", help="run directory or log.jsonl")
    p.add_argument("--out", help="PNG path (default: curves.png beside the log)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser(
        "gradients",
        help="vanishing and exploding gradients: ‖∂L_T/∂h_t‖ of tanh RNN, IRNN, LSTM, GRU (PNG + JSON)",
        description="Measure ‖∂L_T/∂h_t‖ against t for a tanh RNN (as initialised, and with ρ(W) = 2), an IRNN, "
        "an LSTM and a GRU on 'remember the first token', at initialisation and after SGD without and with "
        "gradient-norm clipping; print ρ(W) and ‖∂L_T/∂h_1‖ / ‖∂L_T/∂h_T‖ per cell.",
    )
    p.add_argument("--out", required=True, help="folder for gradients.png and gradients.json")
    p.add_argument("--length", type=int, default=100, help="sequence length T (default: 100)")
    p.add_argument("--steps", type=int, default=200, help="SGD steps per training run (default: 200)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_gradients)
