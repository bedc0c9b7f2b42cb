"""Subcommands of the pretrained encoders: pretraining, fine-tuning, evaluating a fine-tuned run, and the
pipelines (classify, tag, qa, fill-mask, embed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2bert.commands.common import BF16, add_bf16_arg, add_model_arg, add_set_arg, load_config, stdin_lines
from seq2bert.errors import UserError


def cmd_pretrain(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from seq2bert.models import registry
    from seq2bert.recipes.pretrain import PretrainConfig, pretrain
    from seq2bert.report import format_table

    cfg = load_config(PretrainConfig, args)
    if args.files:
        cfg = replace(cfg, data=replace(cfg.data, files=[str(Path(f).resolve()) for f in args.files]))
    if args.valid:
        cfg = replace(cfg, data=replace(cfg.data, valid_files=[str(Path(f).resolve()) for f in args.valid]))
    if args.text_column:
        cfg = replace(cfg, data=replace(cfg.data, text_column=args.text_column))
    if args.init:  # a directory made absolute, a Hub model name as given
        cfg = replace(cfg, init=replace(cfg.init, checkpoint=registry.as_given(args.init)))
    if not cfg.data.files:
        raise UserError("pretrain: give text files or folders (or data.files in --config)")
    row = pretrain(cfg, args.out, resume=args.resume)
    print(format_table([row]))
    for sample in row.get("samples", []):  # a causal LM's continuations of its prompts
        print(f"\n{sample['prompt']!r}\n  greedy:  {sample['greedy']!r}\n  sampled: {sample['sampled']!r}")
    return 0


def cmd_finetune(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from seq2bert.models import registry
    from seq2bert.recipes.finetune import FinetuneConfig, finetune, from_scratch
    from seq2bert.report import format_table, task_columns

    # a model trained from random weights starts from its own defaults (Adam at 1e-3, …), not BERT's
    cfg = load_config(FinetuneConfig, args, defaults=from_scratch(args.model) if args.model else None)
    data = replace(cfg.data, **data_flags(args))
    features = (
        replace(cfg.features, path=str(Path(args.features).resolve())) if args.features else cfg.features
    )
    vectors = cfg.vectors
    if args.vectors:
        vectors = replace(
            vectors, path=str(Path(args.vectors).resolve()), freeze=vectors.freeze or args.freeze_vectors
        )
    elif args.freeze_vectors:
        if not vectors.path:
            raise UserError("--freeze-vectors: give the vectors (--vectors DIR)")
        vectors = replace(vectors, freeze=True)
    cfg = replace(
        cfg,
        data=data,
        init=registry.as_given(args.init) if args.init else cfg.init,
        random_init=cfg.random_init or args.random_init,
        features=features,
        vectors=vectors,
    )
    row = finetune(cfg, args.out, resume=args.resume)
    print(format_table([row], task_columns([row])))
    return 0


USER_FILE_FLAGS = {  # flag → the data key it sets, for the tasks over a user's files (tasks/files.py)
    "train": "train",
    "valid": "valid",
    "test": "test",
    "format": "format",
    "text_column": "text_column",
    "pair_column": "pair_column",
    "label_column": "label_column",
    "choice_columns": "choice_columns",
    "labels": "labels",
    "label_separator": "label_separator",
    "tag_scheme": "tag_scheme",
}
LIST_FLAGS = ("choice_columns", "labels")  # given as a,b,c


def data_flags(args: argparse.Namespace) -> dict:
    """The data keys the command line sets: --task, --data, and the user-file flags (files made absolute)."""
    changes = {}
    if args.task:
        changes["task"] = args.task
    if args.data:
        changes["path"] = str(Path(args.data).resolve())
    for flag, key in USER_FILE_FLAGS.items():
        given = getattr(args, flag, None)
        if given is None:
            continue
        if flag in LIST_FLAGS:
            given = [part.strip() for part in given.split(",") if part.strip()]
        elif flag in ("train", "valid", "test"):
            given = str(Path(given).resolve())
        changes[key] = given
    return changes


def add_user_file_args(p: argparse.ArgumentParser) -> None:
    """The flags of the tasks over your own files (text-classification, text-pair, regression, multi-label,
    token-classification, question-answering, multiple-choice)."""
    g = p.add_argument_group(
        "your own files (--task text-classification|text-pair|regression|multi-label|"
        "token-classification|question-answering|multiple-choice)"
    )
    g.add_argument(
        "--train", metavar="FILE", help="training file: CSV, TSV, JSON Lines, Parquet (by extension)"
    )
    g.add_argument("--valid", metavar="FILE", help="validation file, scored at each evaluation")
    g.add_argument("--test", metavar="FILE", help="test file, predicted by the best checkpoint")
    g.add_argument(
        "--format",
        help="csv | tsv | jsonl | parquet | conll (default: by extension; question-answering: SQuAD JSON)",
    )
    g.add_argument("--text-column", help="the text's column (default: text)")
    g.add_argument(
        "--pair-column",
        help="the second text's column (text-pair; multiple-choice: the start of each choice)",
    )
    g.add_argument(
        "--label-column",
        help="the label's column (default: label; multiple-choice: the right choice's index or text; CoNLL: a "
        "column number)",
    )
    g.add_argument("--choice-columns", metavar="A,B,…", help="multiple choice: the choices' columns")
    g.add_argument("--labels", metavar="A,B,…", help="the label names in order (default: found in --train)")
    g.add_argument(
        "--label-separator",
        help="multi-label: the separator of labels in one text cell (default: a list column, JSON Lines/Parquet)",
    )
    g.add_argument(
        "--tag-scheme", help="token classification: IOB1 | IOB2 | IOBES | none (default: detected)"
    )


TASK_HEADS = ("sequence", "similarity", "tokens", "qa", "choice")


def _architecture(checkpoint: str):
    """(family, the architecture config.json names) of a checkpoint or run directory."""
    from seq2bert.io import read_json
    from seq2bert.models import registry

    family = registry.family_at(checkpoint)
    config = read_json(registry.checkpoint_dir(checkpoint) / "config.json")
    return family, (config.get("architectures") or [None])[0]


def is_finetuned(checkpoint: str) -> bool:
    """A fine-tuning run, its best/ or an encoder's directory (rather than a translation checkpoint); of a
    decoder (GPT), a directory whose model has a task head."""
    try:
        family, architecture = _architecture(checkpoint)
    except UserError:  # not a checkpoint at all: the translation evaluation says so
        return False
    if family.kind != "decoder":
        return family.kind == "encoder"
    return architecture in [family.heads.get(h) for h in TASK_HEADS]


def cmd_evaluate_finetuned(args: argparse.Namespace) -> int:
    from seq2bert.recipes.finetune import FinetuneDataConfig, evaluate_checkpoint
    from seq2bert.recipes.sentence_embedding import evaluate_embeddings, recorded_data
    from seq2bert.report import format_table, task_columns

    if args.task == "sentence-embedding" or (not args.task and recorded_data(args.checkpoint)):
        # any encoder's embeddings as `seq2bert embed` gives them, on --valid's pairs (or the run's)
        data = FinetuneDataConfig(**data_flags(args)) if args.task else None
        row = evaluate_embeddings(args.checkpoint, data, out=args.out)
        print(format_table([row], task_columns([row])))
        return 0
    family, architecture = _architecture(args.checkpoint)
    if architecture not in [family.heads.get(h) for h in TASK_HEADS]:  # a pretraining run, a bare encoder
        raise UserError(
            f"{args.checkpoint}: a {architecture}, not a fine-tuned model; evaluate scores a task's "
            f"head (fine-tune it first: seq2bert finetune --init {args.checkpoint} …)"
        )
    data = None
    if args.task or args.data:
        if not (args.task and args.data):
            raise UserError("evaluate: give both --task and --data (or neither: the run's own)")
        data = FinetuneDataConfig(task=args.task, path=args.data)
    row = evaluate_checkpoint(args.checkpoint, data, out=args.out)
    print(format_table([row], task_columns([row])))
    return 0


def _load_task(path: str, head: str, *others: str):
    """The fine-tuned model of ``path`` (the class its config.json names), which must have ``head`` (or one of
    ``others``)."""
    from seq2bert.models import registry

    model, tok = registry.load(path)
    family = registry.family_of(model)
    needed = family.heads.get(head)
    if family.architecture_of(model) not in [
        family.heads.get(h) for h in (head, *others) if h in family.heads
    ]:
        raise UserError(f"{path}: a {type(model).__name__}; this command needs a {needed or head + ' model'}")
    if tok is None:
        raise UserError(f"{path}: no tokenizer in the directory")
    return model, tok


def cmd_classify(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import classify

    model = _load_task(args.model, "sequence", "similarity")
    texts = args.text or stdin_lines(keep_blank=False)
    items = [tuple(t.split("\t", 1)) if "\t" in t else t for t in texts]  # "A<TAB>B": a pair
    results = classify(items, model, top_k=1, int8=args.int8, bf16=BF16[args.bf16])
    for text, result in zip(texts, results, strict=True):
        if isinstance(result, list):  # a multi-label model: the labels over its threshold, comma-separated
            labels, scores = (
                ",".join(r["label"] for r in result),
                ",".join(f"{r['score']:.4f}" for r in result),
            )
            print(f"{labels}\t{scores}\t{text}")
            continue
        print(f"{result['label']}\t{result['score']:.4f}\t{text}")
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import tag

    model = _load_task(args.model, "tokens")
    for i, text in enumerate(args.text or stdin_lines(keep_blank=False)):
        if i:
            print()
        for e in tag(text, model, aggregate=not args.words, int8=args.int8):
            print(
                f"{e.get('entity_group', e.get('entity'))}\t{e['start']}-{e['end']}\t{e['score']:.4f}\t{e['word']}"
            )
    return 0


def cmd_qa(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import answer

    model = _load_task(args.model, "qa")
    context = args.context
    if args.context_file:
        context = Path(args.context_file).read_text(encoding="utf-8")
    if not context:
        raise UserError("qa: give --context TEXT or --context-file FILE")
    result = answer(
        args.question,
        context,
        model,
        handle_impossible_answer=args.allow_no_answer,
        max_seq_length=args.max_seq_length,
        doc_stride=args.doc_stride,
        max_answer_length=args.max_answer_length,
        int8=args.int8,
    )
    print(f"{result['answer'] or '(no answer)'}\t{result['score']:.4f}\t{result['start']}-{result['end']}")
    return 0


def cmd_fill_mask(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import fill_mask

    results = fill_mask(args.text, model=args.model, top_k=args.top_k, int8=args.int8)
    for i, rows in enumerate(results if isinstance(results[0], list) else [results]):
        if i:
            print()
        for r in rows:  # one line each: a byte-level token may be a control character ("\r")
            print(f"{r['score']:.4f}  {printable(r['token']):<15} {printable(r['sequence'])}")
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    from seq2bert.pipelines import embed

    texts = args.text or stdin_lines(keep_blank=False)
    if not texts:
        raise UserError("embed: no texts; give them as arguments or one per line on stdin")
    if args.word:
        from seq2bert.pipelines import word_vectors

        vectors = word_vectors(texts, args.word, model=args.model, layer=args.layer)
        vectors = torch_normalize(vectors) if args.normalize else vectors
    else:
        vectors = embed(
            texts,
            model=args.model,
            normalize=args.normalize,
            layer=args.layer,
            int8=args.int8,
            bf16=BF16[args.bf16],
        )
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


def printable(text: str) -> str:
    """``text`` with its unprintable characters escaped (a carriage return as \\r)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def layer_arg(value: str) -> int | str:
    """--layer: an index (0: the embeddings / ELMo's token layer, −1: the last) or "mean"."""
    if value == "mean":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a layer index or 'mean', got {value!r}") from None


def torch_normalize(v):
    import torch.nn.functional as F

    return F.normalize(v, dim=-1)


def add_int8_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--int8",
        action="store_true",
        help="run with the Linear layers dynamically quantised to int8 "
        "(CPU; an int8 directory of `seq2bert quantize` is int8 already)",
    )


def register(sub) -> None:
    """Add this module's subcommands to the ``seq2bert`` parser's subparsers."""
    p = sub.add_parser(
        "pretrain",
        help="pretrain BERT (masked LM + next sentence) or GPT / GPT-2 (causal LM) on raw text files",
        description="Pretrain BertForPreTraining from raw text (Devlin et al. 2018) — or, with --set "
        "model.model_type=gpt2 / openai-gpt, a GPT language model on contiguous blocks of the text (Radford et al. "
        "2018, 2019): the text is tokenized once into shards of token arrays in --out/corpus (streamed from disk), "
        "BERT's instances and masks follow the original recipe (data.* keys), a GPT reports held-out perplexity and "
        "ends with samples; checkpoints are Hugging Face directories, --resume continues a killed run.",
        epilog="examples:\n  seq2bert pretrain ../shared/data/corpus --out runs/bert-mini --set train.max_minutes=55\n"
        "  seq2bert pretrain books/ --out runs/b --set model.num_hidden_layers=2 --set data.masking=dynamic\n"
        "  seq2bert pretrain ../shared/data/corpus --out runs/gpt2-mini --set model.model_type=gpt2 "
        "--set data.documents=file\n"
        "  seq2bert pretrain domain.txt --init MODEL_DIR --out runs/dapt   (continued pretraining: the\n"
        "    checkpoint's objective, tokenizer and model; valid_before_* and valid_* in results.json)\n"
        "  seq2bert pretrain ../shared/data/sst2/train.tsv --text-column sentence --init MODEL_DIR --out runs/tapt",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", help="text files, or folders of *.txt files")
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON pretraining configuration")
    add_set_arg(p, "model.num_hidden_layers=4")
    p.add_argument(
        "--init",
        metavar="MODEL",
        help="continue this checkpoint's pretraining (its masked or causal LM) with its own tokenizer; "
        "no vocabulary is trained (sets init.checkpoint)",
    )
    p.add_argument(
        "--valid",
        nargs="+",
        metavar="FILE",
        help="held-out text, scored before and after (sets data.valid_files; default: "
        "data.valid_fraction of the documents of FILES)",
    )
    p.add_argument(
        "--text-column",
        metavar="COLUMN",
        help="read this column of each file: a table's (CSV, TSV, JSON Lines, Parquet; each row a "
        "document), or a CoNLL file's number (0: the words; sets data.text_column)",
    )
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    p.set_defaults(func=cmd_pretrain)

    p = sub.add_parser(
        "finetune",
        help="fine-tune a BERT (or GPT) checkpoint on a GLUE task, CoNLL-2003, SQuAD, SWAG or your own files",
        description="Fine-tune the encoder of a Hugging Face-format BERT directory with a new task head — a GPT "
        "directory as GPT-1 was (input transformations with [start] [delim] [extract], L3 = L2 + lm_coef * L1) — or "
        "train a model from random weights on the task (--model bilstm: the pre-Transformer baseline); "
        "the best checkpoint on dev is kept in OUT/best (a transformers directory) and its dev predictions "
        "in OUT/predictions.jsonl. The generic tasks read your own files (--train, --valid, --test: CSV, TSV, "
        "JSON Lines, Parquet; SQuAD-format JSON for question-answering) by the columns you name; their classes "
        "are --labels or those of the training file, recorded in OUT/run.json; --test is predicted by the best "
        "checkpoint into OUT/test_predictions.jsonl (and scored, test_* in results.json, when labelled).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  seq2bert finetune --task sst2 --init MODEL_DIR --data ../shared/data/sst2 --out runs/sst2\n"
        "  seq2bert finetune --task conll2003 --init MODEL_DIR --data ../shared/data/conll2003 --out runs/ner\n"
        "  seq2bert finetune --task squad --init MODEL_DIR --data ../shared/data/squad --out runs/squad "
        "--set data.max_train_examples=20000 --set train.max_minutes=55\n"
        "  seq2bert finetune --task mrpc --init runs/bert-mini/best --random-init --data ../shared/data/mrpc --out runs/mrpc-random\n"
        "  seq2bert finetune --task sst2 --model bilstm --data ../shared/data/sst2 --out runs/sst2-bilstm "
        "--set model_config.hidden_size=128\n"
        "  seq2bert finetune --task conll2003 --model bilstm --features runs/elmo/best --data ../shared/data/conll2003 "
        "--out runs/ner-elmo\n"
        "  seq2bert finetune --task text-classification --init MODEL_DIR --train train.csv --valid dev.csv "
        "--out runs/mine\n"
        "  seq2bert finetune --task text-pair --init MODEL_DIR --train train.jsonl --valid dev.jsonl "
        "--text-column sentence1 --pair-column sentence2 --out runs/pairs\n"
        "  seq2bert finetune --task regression --init MODEL_DIR --train train.parquet --valid dev.parquet "
        "--pair-column text2 --label-column score --out runs/scores\n"
        "  seq2bert finetune --task multi-label --init MODEL_DIR --train train.csv --valid dev.csv "
        "--label-column topics --label-separator '|' --out runs/topics\n"
        "  seq2bert finetune --task multiple-choice --init MODEL_DIR --train train.csv --valid dev.csv "
        "--text-column question --choice-columns a,b,c,d --label-column answer --out runs/choices\n"
        "  seq2bert finetune --task question-answering --init MODEL_DIR --train qa-train.json --valid qa-dev.json "
        "--test qa-test.json --out runs/qa\n\n"
        "tasks of a folder (--data): sst2 cola mrpc stsb qqp mnli qnli rte wnli conll2003 squad squad_v2 swag;\n"
        "tasks of your own files (--train, --valid [--test]): text-classification text-pair regression "
        "multi-label token-classification multiple-choice question-answering;\n"
        "and those a plugin module registers (SEQ2BERT_PLUGINS=MODULE seq2bert finetune --task NAME …)",
    )
    p.add_argument("--task", help="the task (sets data.task)")
    p.add_argument("--init", help="the BERT or GPT directory (or Hub model name) to start from (sets init)")
    p.add_argument("--data", metavar="DIR", help="the task's data folder (sets data.path)")
    p.add_argument("--random-init", action="store_true", help="the checkpoint's architecture, fresh weights")
    p.add_argument(
        "--model",
        metavar="TYPE",
        help="in place of --init: a family trained from random weights "
        "with a tokenizer trained on the task (bilstm: the pre-Transformer baseline; sets model)",
    )
    p.add_argument(
        "--features",
        metavar="DIR",
        help="with --model: a frozen encoder (ELMo, BERT, or a translation run's encoder: CoVe) whose "
        "layers the model reads beside its embeddings (sets features.path; features.layers=mix|last|"
        "sum_last_four)",
    )
    p.add_argument(
        "--vectors",
        metavar="DIR",
        help="with --model bilstm: static word vectors its word embeddings start from (a train-vectors run, "
        "a word2vec / GloVe / fastText checkpoint or a published vectors file; sets vectors.path)",
    )
    p.add_argument(
        "--freeze-vectors",
        action="store_true",
        help="keep the --vectors as they are (sets vectors.freeze; default: the task tunes them)",
    )
    add_user_file_args(p)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue a killed run from its last checkpoint")
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON fine-tuning configuration")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key, e.g. --set train.lr=3e-5 --set data.batch_size=16",
    )
    p.set_defaults(func=cmd_finetune)

    p = sub.add_parser("classify", help="label texts with a fine-tuned sequence classifier")
    add_model_arg(p, "a BertForSequenceClassification directory (e.g. runs/sst2/best)")
    p.add_argument("text", nargs="*", help="texts; TEXT<TAB>PAIR for pairs (default: lines of stdin)")
    add_int8_arg(p)
    add_bf16_arg(p)
    p.set_defaults(func=cmd_classify)

    p = sub.add_parser("tag", help="named entities (character spans) with a fine-tuned token classifier")
    add_model_arg(p, "a BertForTokenClassification directory (e.g. runs/ner/best)")
    p.add_argument("text", nargs="*", help="texts (default: lines of stdin)")
    p.add_argument(
        "--words", action="store_true", help="one line per tagged word instead of grouped entities"
    )
    add_int8_arg(p)
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("qa", help="answer a question with a span of a context (extractive QA)")
    add_model_arg(p, "a BertForQuestionAnswering directory (e.g. runs/squad/best)")
    p.add_argument("--question", required=True)
    p.add_argument("--context", help="the passage to answer from")
    p.add_argument("--context-file", help="read the passage from a file")
    p.add_argument("--allow-no-answer", action="store_true", help="SQuAD v2: answer nothing when unsure")
    p.add_argument("--max-seq-length", type=int, default=384, help="tokens per window (default: 384)")
    p.add_argument("--doc-stride", type=int, default=128, help="tokens between window starts (default: 128)")
    p.add_argument("--max-answer-length", type=int, default=30, help="longest answer in tokens (default: 30)")
    add_int8_arg(p)
    p.set_defaults(func=cmd_qa)

    p = sub.add_parser("fill-mask", help="the most probable tokens for [MASK] (a directory with an MLM head)")
    add_model_arg(
        p,
        "a directory with a masked-LM head: BERT, RoBERTa, ALBERT, SpanBERT (…ForMaskedLM "
        "/ …ForPreTraining); of an ELECTRA run, its generator (found in best/generator)",
    )
    p.add_argument(
        "text", help='a text with the mask token, e.g. "Paris is the [MASK] of France." (RoBERTa: <mask>)'
    )
    p.add_argument("--top-k", type=int, default=5)
    add_int8_arg(p)
    p.set_defaults(func=cmd_fill_mask)

    p = sub.add_parser(
        "embed",
        help="sentence embeddings of texts (pooled as the directory says); prints their cosine similarities",
    )
    add_model_arg(p, "an encoder directory (BERT, a sentence-transformers model, ELMo, …)")
    p.add_argument("text", nargs="*", help="texts (default: one per line on stdin)")
    p.add_argument(
        "--normalize",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="L2-normalise the vectors (default: as the directory's modules.json says)",
    )
    p.add_argument("--word", help="the contextual vector of this word in each text instead of the sentence's")
    p.add_argument(
        "--layer",
        type=layer_arg,
        metavar="N|mean",
        help="the layer read: an index (0: the embeddings, ELMo's character-CNN layer; -1: the last) "
        "or mean (all layers averaged); default: the last, and for ELMo the mean",
    )
    p.add_argument("--out", help="save the (n, hidden) vectors as a .npy file")
    p.add_argument("--plot", metavar="PNG", help="draw the cosine-similarity matrix of the texts")
    add_int8_arg(p)
    add_bf16_arg(p)
    p.set_defaults(func=cmd_embed)
