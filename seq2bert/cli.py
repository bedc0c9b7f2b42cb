"""The ``seq2bert`` command: thin subcommands, each calling one public function.

Mistakes in the input (a bad config key, a malformed data file, a missing checkpoint) print one line
``seq2bert: error: …`` and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from seq2bert.errors import UserError

EPILOG_TRAIN = """examples:
  seq2bert train --task copy --out runs/copy
  seq2bert train --data ../shared/data/multi30k --src de --tgt en --out runs/m30k --set train.max_minutes=55
  seq2bert train --config my.yaml --set train.lr=3e-4 --set model.num_layers=2 --out runs/x
  seq2bert train --out runs/x --resume          # continue a killed run from its last checkpoint

Every key of the configuration can be set with --set section.key=value (see `seq2bert config`)."""


def _add_data_dir_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data", metavar="DIR", help="folder of parallel text: {train,val,test...}.{SRC,TGT}[.gz]"
    )
    p.add_argument("--src", default="de", help="source language suffix with --data (default: de)")
    p.add_argument("--tgt", default="en", help="target language suffix with --data (default: en)")
    p.add_argument("--valid-split", default="val", help="validation split name with --data (default: val)")
    p.add_argument("--test-split", default="test_2016_flickr", help="test split name with --data")


def _add_config_args(p: argparse.ArgumentParser) -> None:
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
    _add_data_dir_args(p)


def load_run_config(args: argparse.Namespace):
    """Defaults (or, with --resume, the run's own run.json) ← --config file ← --task / --data ← --set overrides.

    Validated once, at the end, before any work starts.
    """
    from seq2bert import config as config_io
    from seq2bert.recipes.translation import TranslationConfig, check_run_config, read_run_config
    from seq2bert.training.checkpoint import latest_checkpoint

    base = None
    if getattr(args, "resume", False) and (last := latest_checkpoint(Path(args.out))) is not None:
        base = read_run_config(last)  # resume what was started, whatever flags are given again
    overrides = []
    if args.task:
        overrides.append(f"data.task={args.task}")
    if args.data:
        overrides += data_dir_overrides(
            Path(args.data), args.src, args.tgt, args.valid_split, args.test_split
        )
    cfg = config_io.build(
        TranslationConfig, base=base, file=args.config, overrides=overrides + args.overrides
    )
    if base is not None and cfg != base:
        changed = _changed_keys(config_io.to_dict(base), config_io.to_dict(cfg))
        logging.getLogger("seq2bert").warning("--resume with a changed configuration: %s", ", ".join(changed))
    check_run_config(cfg)
    return cfg


def _changed_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for key in a:
        if isinstance(a[key], dict):
            out += _changed_keys(
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


def cmd_train(args: argparse.Namespace) -> int:
    from seq2bert.recipes.translation import train
    from seq2bert.report import format_table

    cfg = load_run_config(args)
    row = train(cfg, args.out, resume=args.resume)
    if row.pop("is_main", True):
        print(format_table([row]))
    return 0


def cmd_tour(args: argparse.Namespace) -> int:
    from seq2bert.recipes.tour import format_tour, run_tour

    data = None
    if args.data:
        data = data_dir_overrides(Path(args.data), args.src, args.tgt, args.valid_split, args.test_split)
    if args.budget <= 0:
        raise UserError(f"--budget must be > 0, got {args.budget}")
    bf16 = {"auto": "auto", "true": True, "false": False}[args.bf16]
    print(format_tour(run_tour(args.out, budget=args.budget, seed=args.seed, data=data, bf16=bf16)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from seq2bert.recipes.demo import format_demo, run_demo

    if not args.budget > 0:
        raise UserError(f"--budget: expected a positive number, got {args.budget}")
    print(format_demo(run_demo(args.out, budget=args.budget)))
    return 0


def cmd_variations(args: argparse.Namespace) -> int:
    from seq2bert.recipes.variations import format_variations, run_variations

    args.overrides = ["model.model_type=transformer", *args.overrides]
    args.resume = False
    cfg = load_run_config(args)
    print(format_variations(run_variations(cfg, args.rows, args.out)))
    return 0


def cmd_average(args: argparse.Namespace) -> int:
    from seq2bert.training.checkpoint import average_checkpoints, list_checkpoints

    run_dir = Path(args.run_dir)
    if args.last < 2:
        raise UserError(f"--last: expected at least 2 checkpoints to average, got {args.last}")
    paths = list_checkpoints(run_dir)[-args.last :]
    if len(paths) < 2:
        raise UserError(f"{run_dir}: {len(paths)} checkpoint-<step>/ folder(s) found, at least 2 are needed")
    out = Path(args.out) if args.out else run_dir / "averaged"
    average_checkpoints(paths, out)
    note = "" if len(paths) == args.last else f" (only {len(paths)} of the {args.last} asked for exist)"
    print(f"averaged {', '.join(p.name for p in paths)}{note} into {out}")
    return 0


def cmd_pretrain(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from seq2bert import config as config_io
    from seq2bert.recipes.pretrain import PretrainConfig, pretrain
    from seq2bert.report import format_table
    from seq2bert.training.checkpoint import latest_checkpoint, read_json

    base = None
    if (
        args.resume
        and (last := latest_checkpoint(Path(args.out))) is not None
        and (last / "run.json").is_file()
    ):
        base = config_io.from_dict(PretrainConfig, read_json(last / "run.json"))
    cfg = config_io.build(PretrainConfig, base=base, file=args.config, overrides=args.overrides)
    if args.files:
        cfg = replace(cfg, data=replace(cfg.data, files=[str(Path(f).resolve()) for f in args.files]))
    if not cfg.data.files:
        raise UserError("pretrain: give text files or folders (or data.files in --config)")
    row = pretrain(cfg, args.out, resume=args.resume)
    print(format_table([row]))
    return 0


def cmd_finetune(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from seq2bert import config as config_io
    from seq2bert.recipes.finetune import FinetuneConfig, finetune
    from seq2bert.report import format_table, task_columns
    from seq2bert.training.checkpoint import latest_checkpoint, read_json

    base = None
    if (
        args.resume
        and (last := latest_checkpoint(Path(args.out))) is not None
        and (last / "run.json").is_file()
    ):
        base = config_io.from_dict(FinetuneConfig, read_json(last / "run.json"))
    cfg = config_io.build(FinetuneConfig, base=base, file=args.config, overrides=args.overrides)
    data = cfg.data
    if args.task:
        data = replace(data, task=args.task)
    if args.data:
        data = replace(data, path=str(Path(args.data).resolve()))
    cfg = replace(cfg, data=data, init=str(Path(args.init).resolve()) if args.init else cfg.init,
                  random_init=cfg.random_init or args.random_init)  # fmt: skip
    row = finetune(cfg, args.out, resume=args.resume)
    print(format_table([row], task_columns([row])))
    return 0


def is_finetuned(checkpoint: str) -> bool:
    """A fine-tuning run, its best/ or a BERT task directory (rather than a translation checkpoint)."""
    from seq2bert.models.hf import model_type_of

    path = Path(checkpoint)
    return model_type_of(path) == "bert" or model_type_of(path / "best") == "bert"


def cmd_evaluate_finetuned(args: argparse.Namespace) -> int:
    from seq2bert.recipes.finetune import FinetuneDataConfig, evaluate_checkpoint
    from seq2bert.report import format_table, task_columns

    data = None
    if args.task or args.data:
        if not (args.task and args.data):
            raise UserError("evaluate: give both --task and --data (or neither: the run's own)")
        data = FinetuneDataConfig(task=args.task, path=args.data)
    row = evaluate_checkpoint(args.checkpoint, data, out=args.out)
    print(format_table([row], task_columns([row])))
    return 0


def _load_bert_task(path: str, architecture: str):
    from seq2bert.models.bert.pretrained import load_bert

    model, tok = load_bert(path)
    if type(model).__name__ != architecture:
        raise UserError(f"{path}: a {type(model).__name__}; this command needs a {architecture}")
    if tok is None:
        raise UserError(f"{path}: no tokenizer.json or vocab.txt")
    return model, tok


def cmd_classify(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import classify

    model = _load_bert_task(args.model, "BertForSequenceClassification")
    texts = args.text or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    items = [tuple(t.split("\t", 1)) if "\t" in t else t for t in texts]  # "A<TAB>B": a pair
    for text, result in zip(texts, classify(items, model, top_k=1), strict=True):
        print(f"{result['label']}\t{result['score']:.4f}\t{text}")
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import tag

    model = _load_bert_task(args.model, "BertForTokenClassification")
    for i, text in enumerate(args.text or [line.rstrip("\n") for line in sys.stdin if line.strip()]):
        if i:
            print()
        for e in tag(text, model, aggregate=not args.words):
            print(
                f"{e.get('entity_group', e.get('entity'))}\t{e['start']}-{e['end']}\t{e['score']:.4f}\t{e['word']}"
            )
    return 0


def cmd_qa(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import answer

    model = _load_bert_task(args.model, "BertForQuestionAnswering")
    context = args.context
    if args.context_file:
        context = Path(args.context_file).read_text(encoding="utf-8")
    if not context:
        raise UserError("qa: give --context TEXT or --context-file FILE")
    result = answer(args.question, context, model, handle_impossible_answer=args.allow_no_answer,
                    max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
                    max_answer_length=args.max_answer_length)  # fmt: skip
    print(f"{result['answer'] or '(no answer)'}\t{result['score']:.4f}\t{result['start']}-{result['end']}")
    return 0


def cmd_fill_mask(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import fill_mask

    results = fill_mask(args.text, model=args.model, top_k=args.top_k)
    for i, rows in enumerate(results if isinstance(results[0], list) else [results]):
        if i:
            print()
        for r in rows:
            print(f"{r['score']:.4f}  {r['token']:<15} {r['sequence']}")
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import embed

    texts = args.text or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    if args.word:
        from seq2bert.pipelines import word_vectors

        vectors = word_vectors(texts, args.word, model=args.model)
        vectors = torch_normalize(vectors) if args.normalize else vectors
    else:
        vectors = embed(texts, model=args.model, normalize=args.normalize)
    if args.out:
        import numpy as np

        np.save(args.out, vectors.numpy())
        print(f"{args.out}: {tuple(vectors.shape)}")
    if len(texts) > 1:  # the cosine similarities of the texts, pair by pair
        unit = torch_normalize(vectors)
        sims = unit @ unit.T
        if args.plot:
            from seq2bert.viz.inspect import plot_similarity

            what = f'"{args.word}" in each text' if args.word else "sentence embeddings"
            print(plot_similarity(texts, sims, args.plot, title=f"cosine similarity: {what}"))
        width = max(len(t[:40]) for t in texts)
        for i, t in enumerate(texts):
            print(f"{t[:40]:<{width}}  " + " ".join(f"{float(x):6.3f}" for x in sims[i]))
    elif not args.out:
        print(" ".join(f"{float(x):.5f}" for x in vectors[0]))
    return 0


def torch_normalize(v):
    import torch.nn.functional as F

    return F.normalize(v, dim=-1)


def cmd_evaluate(args: argparse.Namespace) -> int:
    if is_finetuned(args.checkpoint):
        return cmd_evaluate_finetuned(args)
    if args.task or args.data or args.out:
        raise UserError("--task, --data and --out are for fine-tuned BERT checkpoints")
    from seq2bert.data.parallel import read_parallel
    from seq2bert.recipes.translation import evaluate, load, load_pairs
    from seq2bert.report import format_metrics, format_table

    if args.rescore:
        from seq2bert.recipes.translation import rescore_run

        if args.source or args.by_length or args.beam != 1 or args.split != "test":
            raise UserError(
                "--rescore scores the run's own splits (greedy, beam 5, by length); it takes no other options"
            )

        print(format_table([rescore_run(args.checkpoint)]))
        return 0
    loaded = load(args.checkpoint)
    if args.source:
        pairs = read_parallel(args.source, args.target).pairs
        label = args.source
    else:
        run = loaded[2]
        if run is None:
            raise UserError(f"{args.checkpoint}: no run.json; give --source/--target files to evaluate on")
        pairs = load_pairs(run.data)[args.split]
        label = f"{run.data.task} {args.split}"
        if not pairs:
            raise UserError(f"{args.checkpoint}: the run has no {args.split} split; give --source/--target")
    decoding = _decoding(args)
    result = evaluate(loaded, pairs, decoding=decoding, by_length=args.by_length)
    buckets = result.pop("bleu_by_length", None)
    search = "greedy" if decoding.num_beams == 1 else f"beam {decoding.num_beams}"
    print(format_metrics(result, title=f"{args.checkpoint} on {label} ({search})"))
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


def _decoding(args: argparse.Namespace):
    from seq2bert.recipes.translation import Decoding

    if args.beam < 1:
        raise UserError(f"--beam: expected a beam size of at least 1, got {args.beam}")
    return Decoding(num_beams=args.beam, length_penalty=args.length_penalty)


def _add_decoding_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=int, default=1, metavar="K", help="beam size (default 1: greedy decoding)")
    p.add_argument(
        "--length-penalty",
        type=float,
        default=1.0,
        metavar="ALPHA",
        help="beam search length penalty α of Wu et al. (2016) (default 1.0; 0 = none)",
    )


def cmd_translate(args: argparse.Namespace) -> int:
    from seq2bert.recipes.translation import translate

    if args.text:
        texts = args.text
    elif args.input:
        from seq2bert.data.parallel import read_lines

        texts = read_lines(args.input)
    else:
        texts = [line.rstrip("\n") for line in sys.stdin]
    if args.show_alignment:
        from seq2bert.recipes.translation import align
        from seq2bert.viz.attention import plot_alignment

        out = Path(args.show_alignment)
        for i, text in enumerate(texts):
            try:
                a = align(args.checkpoint, text, decoding=_decoding(args))
            except ValueError as e:
                raise UserError(f"{args.checkpoint}: {e}") from None
            png = out if len(texts) == 1 else out.with_name(f"{out.stem}-{i + 1}{out.suffix}")
            print(
                f"{a.translation}\t{plot_alignment(a.source_tokens, a.target_tokens, a.weights, png, title=a.translation)}"
            )
        return 0
    for line in translate(args.checkpoint, texts, batch_size=args.batch_size, decoding=_decoding(args)):
        print(line)
    return 0


def cmd_attention(args: argparse.Namespace) -> int:
    from seq2bert.viz.inspect import attention_maps, plot_heads, select, write_head_view

    maps = attention_maps(args.model, args.text, pair=args.pair)
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


def cmd_align(args: argparse.Namespace) -> int:
    from seq2bert.recipes.translation import align
    from seq2bert.viz.attention import plot_alignment

    try:
        a = align(args.checkpoint, args.text, decoding=_decoding(args))
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


def cmd_config(args: argparse.Namespace) -> int:
    import yaml

    from seq2bert import config as config_io

    cfg = load_run_config(args)
    text = yaml.safe_dump(config_io.to_dict(cfg), sort_keys=False)
    if args.write:
        config_io.save(cfg, args.write)
    print(text, end="")
    return 0


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
        print(
            f"{args.kind} vocabulary of {tok.vocab_size} tokens written to {Path(args.out) / 'tokenizer.json'}"
        )
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seq2bert",
        description="The lineage of neural sequence models, from Seq2Seq to BERT: train, evaluate, translate.",
        epilog="Start with `seq2bert demo`; every subcommand has its own --help.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    p.add_argument("--bf16", choices=("auto", "true", "false"), default="auto",
                   help="train.bf16 of every model (default: auto, bf16 autocast where the CPU computes it natively)")  # fmt: skip
    _add_data_dir_args(p)
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
    _add_config_args(p)
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
    p.add_argument("--out", help="checkpoint directory to write (default: RUN_DIR/averaged)")
    p.set_defaults(func=cmd_average)

    p = sub.add_parser(
        "pretrain",
        help="pretrain BERT (masked LM + next sentence) on raw text files",
        description="Pretrain BertForPreTraining from raw text (Devlin et al. 2018): the text is tokenized once "
        "into shards of token arrays in --out/corpus (streamed from disk), instances and masks follow the original recipe "
        "(data.* keys), checkpoints are Hugging Face BERT directories, --resume continues a killed run.",
        epilog="examples:\n  seq2bert pretrain ../shared/data/corpus --out runs/bert-mini --set train.max_minutes=55\n"
        "  seq2bert pretrain books/ --out runs/b --set model.num_hidden_layers=2 --set data.masking=dynamic",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", help="text files, or folders of *.txt files")
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON pretraining configuration")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config key, e.g. --set model.num_hidden_layers=4 (repeatable)")  # fmt: skip
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    p.set_defaults(func=cmd_pretrain)

    p = sub.add_parser(
        "finetune",
        help="fine-tune a BERT checkpoint on a GLUE task, CoNLL-2003, SQuAD or SWAG",
        description="Fine-tune the encoder of a Hugging Face-format BERT directory with a new task head; "
        "the best checkpoint on dev is kept in OUT/best (a transformers directory) and its dev predictions "
        "in OUT/predictions.jsonl.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  seq2bert finetune --task sst2 --init MODEL_DIR --data ../shared/data/sst2 --out runs/sst2\n"
        "  seq2bert finetune --task conll2003 --init MODEL_DIR --data ../shared/data/conll2003 --out runs/ner\n"
        "  seq2bert finetune --task squad --init MODEL_DIR --data ../shared/data/squad --out runs/squad "
        "--set data.max_train_examples=20000 --set train.max_minutes=55\n"
        "  seq2bert finetune --task mrpc --init runs/bert-mini/best --random-init --data ../shared/data/mrpc --out runs/mrpc-random\n\n"
        "tasks: sst2 cola mrpc stsb qqp mnli qnli rte wnli conll2003 squad squad_v2 swag",
    )
    p.add_argument("--task", help="the task (sets data.task)")
    p.add_argument("--init", help="the BERT directory to start from (sets init)")
    p.add_argument("--data", metavar="DIR", help="the task's data folder (sets data.path)")
    p.add_argument("--random-init", action="store_true", help="the checkpoint's architecture, fresh weights")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue a killed run from its last checkpoint")
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON fine-tuning configuration")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config key, e.g. --set train.lr=3e-5 --set data.batch_size=16")  # fmt: skip
    p.set_defaults(func=cmd_finetune)

    p = sub.add_parser("classify", help="label texts with a fine-tuned sequence classifier")
    p.add_argument("model", help="a BertForSequenceClassification directory (e.g. runs/sst2/best)")
    p.add_argument("text", nargs="*", help="texts; TEXT<TAB>PAIR for pairs (default: lines of stdin)")
    p.set_defaults(func=cmd_classify)

    p = sub.add_parser("tag", help="named entities (character spans) with a fine-tuned token classifier")
    p.add_argument("model", help="a BertForTokenClassification directory (e.g. runs/ner/best)")
    p.add_argument("text", nargs="*", help="texts (default: lines of stdin)")
    p.add_argument(
        "--words", action="store_true", help="one line per tagged word instead of grouped entities"
    )
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("qa", help="answer a question with a span of a context (extractive QA)")
    p.add_argument("model", help="a BertForQuestionAnswering directory (e.g. runs/squad/best)")
    p.add_argument("--question", required=True)
    p.add_argument("--context", help="the passage to answer from")
    p.add_argument("--context-file", help="read the passage from a file")
    p.add_argument("--allow-no-answer", action="store_true", help="SQuAD v2: answer nothing when unsure")
    p.add_argument("--max-seq-length", type=int, default=384, help="tokens per window (default: 384)")
    p.add_argument("--doc-stride", type=int, default=128, help="tokens between window starts (default: 128)")
    p.add_argument("--max-answer-length", type=int, default=30, help="longest answer in tokens (default: 30)")
    p.set_defaults(func=cmd_qa)

    p = sub.add_parser(
        "fill-mask", help="the most probable tokens for [MASK] (a BERT directory with an MLM head)"
    )
    p.add_argument(
        "model", help="a Hugging Face-format BERT directory (BertForMaskedLM / BertForPreTraining)"
    )
    p.add_argument("text", help='a text with [MASK], e.g. "Paris is the [MASK] of France."')
    p.add_argument("--top-k", type=int, default=5)
    p.set_defaults(func=cmd_fill_mask)

    p = sub.add_parser(
        "embed", help="mean-pooled sentence embeddings of texts; prints their cosine similarities"
    )
    p.add_argument("model", help="a Hugging Face-format BERT directory")
    p.add_argument("text", nargs="*", help="texts (default: one per line on stdin)")
    p.add_argument("--normalize", action="store_true", help="L2-normalise the vectors")
    p.add_argument("--word", help="the contextual vector of this word in each text instead of the sentence's")
    p.add_argument("--out", help="save the (n, hidden) vectors as a .npy file")
    p.add_argument("--plot", metavar="PNG", help="draw the cosine-similarity matrix of the texts")
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser(
        "variations",
        help="Transformer variations (Vaswani et al. Table 3, rows A and B): train each, print dev PPL / BLEU",
        description="Train the base Transformer of the configuration and its variations — (A) heads 1/4/8/16 "
        "at constant compute, (B) smaller d_k — with the same data and budget (train.max_minutes or "
        "train.max_steps), and print a table shaped like Table 3. One run directory per row in --out; "
        "run again to resume.",
        epilog="example:\n  seq2bert variations --data ../shared/data/multi30k --rows A B --out runs/var "
        "--set train.max_minutes=8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_config_args(p)
    p.add_argument("--rows", nargs="+", default=["A", "B"], help="rows of Table 3 to train (A, B)")
    p.add_argument("--out", required=True, help="folder of the rows' run directories")
    p.set_defaults(func=cmd_variations)

    p = sub.add_parser(
        "evaluate",
        help="score a checkpoint: BLEU and perplexity (translation), or a fine-tuned BERT's dev metrics",
        description="Evaluate a checkpoint (or a run directory's best) on its run's split or on "
        "given parallel files; BLEU is sacrebleu's, cased and lowercased. A fine-tuned BERT run (or "
        "its best/) is scored on its task's dev set with the task's metrics.",
    )
    p.add_argument("checkpoint", help="checkpoint or run directory")
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
    _add_decoding_args(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "translate",
        help="translate text with a checkpoint (greedy or beam search)",
        description="Translate the given texts, a file (--input) or standard input, one per line.",
    )
    p.add_argument("checkpoint", help="checkpoint or run directory")
    p.add_argument("text", nargs="*", help="texts to translate (default: read lines from --input or stdin)")
    p.add_argument("--input", help="file with one source sentence per line")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--show-alignment", nargs="?", const="alignment.png", metavar="PNG",
                   help="also draw each translation's attention alignment (default alignment.png; -N per text)")  # fmt: skip
    _add_decoding_args(p)
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser(
        "attention",
        help="attention heatmaps of any layer and head (PNG) and an offline HTML head view",
        description="Run MODEL on TEXT and draw the attention weights of one layer: every head, or --head. "
        "MODEL is a BERT directory (encoder self-attention; --pair for segment B) or a translation "
        "checkpoint (encoder self-, decoder self- and cross-attention over its own translation).",
    )
    p.add_argument("model", help="a BERT directory or a translation checkpoint / run directory")
    p.add_argument("text")
    p.add_argument("--pair", help="BERT: the second segment")
    p.add_argument(
        "--kind", choices=["encoder", "decoder", "cross"], help="which attention (default: the first)"
    )
    p.add_argument("--layer", type=int, default=-1, help="layer, from 0 (default: -1, the last)")
    p.add_argument("--head", type=int, help="one head (default: all heads of the layer)")
    p.add_argument("--out", default="attention.png", help="PNG path (default: attention.png)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML head view of every layer")
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
        "align",
        help="translate one sentence and plot its attention weights (PNG)",
        description="Translate TEXT with an attention model and draw the alignment matrix: one row per "
        "target token, one column per source token (Bahdanau et al. 2015, Fig. 3).",
    )
    p.add_argument("checkpoint", help="checkpoint or run directory")
    p.add_argument("text", help="the source sentence")
    p.add_argument("--out", default="alignment.png", help="PNG path (default: alignment.png)")
    _add_decoding_args(p)
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

    p = sub.add_parser(
        "config",
        help="print the run configuration (defaults, file and overrides applied)",
        description="Print the full run configuration as YAML: every key --set can change.",
    )
    _add_config_args(p)
    p.add_argument("--write", metavar="FILE", help="also write it to FILE (.yaml or .json)")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser(
        "tokenizer",
        help="train a WordPiece / BPE / word vocabulary, or show an encoding",
        description="`seq2bert tokenizer train --kind bpe --vocab-size 8000 --out DIR FILE...` or "
        "`seq2bert tokenizer encode TOKENIZER TEXT [--pair TEXT]`.",
    )
    tsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    t = tsub.add_parser("train", help="train a vocabulary from text files (plain or .gz)")
    t.add_argument("files", nargs="+")
    t.add_argument("--kind", default="bpe", choices=["bpe", "wordpiece", "word"])
    t.add_argument("--vocab-size", type=int, default=8000)
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--lowercase", action="store_true")
    t.add_argument("--out", required=True, help="folder for tokenizer.json")
    t = tsub.add_parser("encode", help="show tokens, ids, type ids and offsets of a text (or pair)")
    t.add_argument("tokenizer", help="tokenizer.json, BERT vocab.txt or a folder holding one")
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
