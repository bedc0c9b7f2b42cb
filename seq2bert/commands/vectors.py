"""Subcommands of static word vectors: train word2vec, GloVe or fastText on raw text (train-vectors) and score
any vectors — a run of ours or a published file — on word analogies and word similarities
(evaluate-vectors)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from seq2bert.commands.common import add_run_args, load_config
from seq2bert.errors import UserError

# the columns of a results row (train-vectors, evaluate-vectors)
VECTORS_COLUMNS = [
    ("method", "method"),
    ("vectors", "vectors"),
    ("vocabulary", "vocabulary"),
    ("words", "words"),
    ("train_seconds", "train time (s)"),
    ("tokens_per_s", "words/s"),
    ("analogy_3cosadd_semantic", "semantic (3CosAdd)"),
    ("analogy_3cosadd_syntactic", "syntactic (3CosAdd)"),
    ("analogy_3cosadd_total", "total (3CosAdd)"),
    ("analogy_3cosmul_total", "total (3CosMul)"),
    ("analogy_oov_rate", "questions OOV"),
    ("wordsim_spearman", "WordSim-353 ρ"),
    ("wordsim_oov_rate", "pairs OOV"),
]


def cmd_train_vectors(args: argparse.Namespace) -> int:
    from seq2bert.recipes.vectors import VectorsConfig, method_config, train_vectors
    from seq2bert.report import format_table

    cfg = load_config(VectorsConfig, args, defaults=method_config(args.method))
    chosen = method_config(args.method).model
    same = type(cfg.model) is type(chosen) and getattr(cfg.model, "architecture", "") == getattr(
        chosen, "architecture", ""
    )
    if not args.resume and not same:  # the training settings are the method's: the model must be its model
        raise UserError(
            f"model: a {cfg.model.describe()} with --method {args.method}'s training; give the method of that "
            "model (--method skipgram, cbow, glove or fasttext)"
        )
    data = cfg.data
    if args.files:
        data = replace(data, files=[str(Path(f).resolve()) for f in args.files])
    if not data.files:
        raise UserError("train-vectors: give text files or folders (or data.files in --config)")
    row = train_vectors(replace(cfg, data=data), args.out, resume=args.resume)
    print(format_table([row], VECTORS_COLUMNS))
    return 0


def cmd_evaluate_vectors(args: argparse.Namespace) -> int:
    import json

    from seq2bert.recipes.vectors import VectorsEvalConfig, evaluate_vectors
    from seq2bert.report import format_table

    ev = VectorsEvalConfig(
        analogies=args.analogies, similarity=args.similarity, restrict_vocab=args.restrict_vocab
    )
    row = evaluate_vectors(args.vectors, ev, limit=args.limit)
    print(json.dumps(row, indent=2) if args.json else format_table([row], VECTORS_COLUMNS))
    return 0


def register(sub) -> None:
    """Add this module's subcommands to the ``seq2bert`` parser's subparsers."""
    p = sub.add_parser(
        "train-vectors",
        help="train static word vectors: word2vec (skip-gram, CBOW), GloVe or fastText, on raw text",
        description="Train one vector per word on raw text with the training engine (progress bar, checkpoints, "
        "--resume), score the vectors on word analogies and WordSim-353 at each epoch (gensim's copies of the "
        "files, when gensim is installed) and write them to OUT/vectors.txt in word2vec's text format.",
        epilog="examples:\n  seq2bert train-vectors --method skipgram ../shared/data/corpus/gutenberg --out runs/sg\n"
        "  seq2bert train-vectors --method glove books/ --out runs/glove --set model.vector_size=300\n"
        "  seq2bert train-vectors --method fasttext books/ --out runs/ft --set train.max_epochs=3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", help="text files, or folders of *.txt files")
    p.add_argument(
        "--method",
        choices=("skipgram", "cbow", "glove", "fasttext"),
        default="skipgram",
        help="the model and its paper's training settings (default: skipgram)",
    )
    add_run_args(p, "model.vector_size=300")
    p.set_defaults(func=cmd_train_vectors)

    p = sub.add_parser(
        "evaluate-vectors",
        help="score word vectors on word analogies (3CosAdd, 3CosMul) and WordSim-353 (Spearman)",
        description="Score the vectors of a train-vectors run, or a published file (word2vec text or binary, "
        "GloVe text), on Mikolov's analogy questions (semantic / syntactic / total accuracy) and on word "
        "similarity (Spearman), with the share of questions and pairs out of the vocabulary.",
    )
    p.add_argument("vectors", help="a train-vectors run, or a vectors file")
    p.add_argument(
        "--analogies", default="auto", help="questions-words.txt (default: gensim's copy, when installed)"
    )
    p.add_argument("--similarity", default="auto", help="wordsim353.tsv (default: gensim's copy)")
    p.add_argument(
        "--restrict-vocab",
        type=int,
        default=300_000,
        help="search the answers among the most frequent N words (default: 300000, gensim's)",
    )
    p.add_argument("--limit", type=int, help="read only the first N vectors of a file")
    p.add_argument("--json", action="store_true", help="print the whole row as JSON")
    p.set_defaults(func=cmd_evaluate_vectors)
