"""Static word vectors against gensim, in one run: the same text (our reader's words and paragraphs, given to
gensim as its sentences), the same vocabulary rule (min_count), dimensions, window, noise words, subsampling
and epochs; both scored by one evaluator (seq2bert/evaluation/word_vectors.py: gensim's conventions) on
Mikolov's analogy questions and WordSim-353 (the copies in gensim's test data).

    python benchmarks/word_vectors.py ../shared/data/corpus/gutenberg ../shared/data/wikitext2/wiki.valid.tokens \
        --methods skipgram cbow fasttext glove --out runs/vectors

Ours is `seq2bert train-vectors --method M FILES --out OUT/M` (its run kept in OUT/M: vectors.txt, results.json,
log.jsonl, curves.png); gensim's is ``gensim.models.Word2Vec`` / ``FastText`` with ``workers`` = the cores
torch uses. Printed: training seconds and words/s of each (gensim's: the words it reports as effective, i.e.
after subsampling, over its training time), analogy accuracy (3CosAdd, 3CosMul; semantic / syntactic /
total), WordSim-353 Spearman, and the differences ours − gensim. GloVe has no peer here (the paper's C code is
not a Python package): its row is ours alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from seq2bert.data.pretraining import text_files
from seq2bert.data.word_corpus import paragraphs
from seq2bert.evaluation.word_vectors import analogy, default_test_sets, similarity
from seq2bert.recipes.vectors import method_config, train_vectors

PARTS = ("semantic", "syntactic", "total")


def scored(words: list[str], vectors: torch.Tensor, sets) -> dict:
    a = analogy(words, vectors, sets[0])
    s = similarity(words, vectors, sets[1])
    row = {f"{m}_{p}": a[m][p] for m in ("3cosadd", "3cosmul") for p in PARTS}
    return {**row, "oov_questions": a["oov_rate"], "wordsim": s["spearman"], "oov_pairs": s["oov_rate"]}


def gensim_run(method: str, sentences: list[list[str]], cfg, threads: int) -> dict:
    from gensim.models import FastText, Word2Vec

    m = cfg.model
    common = dict(
        vector_size=m.vector_size,
        window=m.window,
        negative=m.negative,
        sample=m.sample,
        ns_exponent=m.ns_exponent,
        min_count=m.min_count,
        sg=int(m.architecture == "skipgram"),
        hs=0,
        epochs=cfg.train.max_epochs,
        alpha=cfg.train.lr,
        workers=threads,
        seed=cfg.train.seed,
    )
    if method == "fasttext":
        model = FastText(min_n=m.min_n, max_n=m.max_n, bucket=m.bucket, **common)
    else:
        model = Word2Vec(**common)
    model.build_vocab(sentences)
    t0 = time.perf_counter()
    _, effective = model.train(sentences, total_examples=len(sentences), epochs=model.epochs)
    seconds = time.perf_counter() - t0
    words = list(model.wv.index_to_key)
    vectors = torch.from_numpy(model.wv.vectors[: len(words)].copy())
    return {"words": words, "vectors": vectors, "seconds": seconds, "words_per_s": effective / seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument(
        "--methods", nargs="+", default=["skipgram"], choices=["skipgram", "cbow", "fasttext", "glove"]
    )
    ap.add_argument("--out", default="runs/vectors")
    ap.add_argument("--epochs", type=int, help="both sides' epochs (default: the method's, 5; GloVe 50)")
    ap.add_argument("--max-minutes", type=float, default=30.0, help="ours stops after this much training")
    ap.add_argument("--no-gensim", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sets = default_test_sets()
    if not all(sets):
        print(
            "gensim is not installed: its test data holds the analogy and similarity files", file=sys.stderr
        )
        return 2
    files = text_files(args.files, "files")
    threads = torch.get_num_threads()
    sentences = None
    rows = []
    for method in args.methods:
        cfg = method_config(method)
        train = replace(cfg.train, max_minutes=args.max_minutes)
        if args.epochs:
            train = replace(train, max_epochs=args.epochs)
        cfg = replace(cfg, data=replace(cfg.data, files=[str(f) for f in files]), train=train)
        out = Path(args.out) / method
        if (out / "results.json").is_file():
            ours = json.loads((out / "results.json").read_text())
            print(f"{method}: ours from {out} (results.json; delete the folder to train again)")
        else:
            ours = train_vectors(cfg, out, progress_bar=True)
        row = {
            "method": method,
            "library": "seq2bert",
            "seconds": ours["train_seconds"],
            "words_per_s": ours["tokens_per_s"],
        }
        from seq2bert.data.vector_files import read_vectors

        wv = read_vectors(out / "vectors.txt")
        row |= scored(wv.words, wv.vectors, sets)
        rows.append(row)
        if method == "glove" or args.no_gensim:
            continue
        if sentences is None:
            sentences = list(paragraphs(files, cfg.model.lowercase))
        g = gensim_run(method, sentences, cfg, threads)
        peer = {
            "method": method,
            "library": "gensim",
            "seconds": g["seconds"],
            "words_per_s": g["words_per_s"],
        }
        rows.append(peer | scored(g["words"], g["vectors"], sets))
    cols = [
        "method",
        "library",
        "seconds",
        "words_per_s",
        *(f"3cosadd_{p}" for p in PARTS),
        "3cosmul_total",
        "oov_questions",
        "wordsim",
        "oov_pairs",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print(
            "| " + " | ".join(f"{r[c]:,.2f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |"
        )
    for method in args.methods:
        pair = [r for r in rows if r["method"] == method]
        if len(pair) == 2:
            o, g = pair
            print(
                f"{method}: ours − gensim: analogy 3CosAdd total {o['3cosadd_total'] - g['3cosadd_total']:+.2f} points, "
                f"WordSim {o['wordsim'] - g['wordsim']:+.2f}; training time ours/gensim {o['seconds'] / g['seconds']:.1f}×"
            )
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "benchmark.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
