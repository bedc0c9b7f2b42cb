"""Small and fast models: `seq2bert distill` (a student from a fine-tuned teacher on its task, or from a
pretrained one on raw text), `seq2bert quantize` (int8 Linears) and `seq2bert export` (ONNX)."""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2bert.commands.common import add_model_arg, add_set_arg, load_config
from seq2bert.errors import UserError


def cmd_distill(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from seq2bert.models import registry
    from seq2bert.recipes.distill import DistillConfig, distill
    from seq2bert.recipes.distill_corpus import distill_corpus
    from seq2bert.report import format_table

    cfg = load_config(DistillConfig, args)
    data = cfg.data
    if args.task:
        data = replace(data, task=args.task)
    if args.data:
        data = replace(data, path=str(Path(args.data).resolve()))
    teacher = registry.as_given(args.teacher) if args.teacher else cfg.teacher
    cfg = replace(cfg, data=data, teacher=teacher)
    kind = registry.family_at(registry.checkpoint_dir(teacher)).kind if teacher else None
    if kind == "encoder-decoder":  # a translation run's student: a draft for speculative decoding
        return distill_translation(args, cfg)
    if kind == "decoder":  # a language model's student on text
        if not args.corpus or args.task or args.data:
            raise UserError(f"{args.teacher}: a language model; give the text to distil on (--corpus FILE…)")
        from seq2bert.recipes.distill import distill_language_model

        cfg = replace(cfg, corpus=replace(cfg.corpus, files=[str(Path(f).resolve()) for f in args.corpus]))
        row = distill_language_model(cfg, args.out, resume=args.resume)
        print(format_table([row], DECODER_COLUMNS))
        return 0
    if args.corpus:  # general distillation on raw text
        if args.task or args.data:
            raise UserError(
                "--corpus distils on raw text; --task and --data on a task: give one or the other"
            )
        cfg = replace(cfg, corpus=replace(cfg.corpus, files=[str(Path(f).resolve()) for f in args.corpus]))
        row = distill_corpus(cfg, args.out, resume=args.resume)
        print(format_table([row], CORPUS_COLUMNS))
        return 0
    row = distill(cfg, args.out, resume=args.resume)
    print(format_table([row], distill_columns(row)))
    return 0


def distill_translation(args: argparse.Namespace, distill_cfg) -> int:
    """A student of a translation run: the run's own pairs, settings and tokenizer; the student's depth
    (student.num_hidden_layers), the loss weights (loss.*) and train.* from --set."""
    from dataclasses import replace

    from seq2bert import config as config_io
    from seq2bert.models import registry
    from seq2bert.recipes.distill_decoder import student_config
    from seq2bert.recipes.translation import DistillSection, TranslationConfig, read_run_config, train
    from seq2bert.report import format_table
    from seq2bert.training.checkpoint import latest_checkpoint

    if args.task or args.data or args.corpus:
        raise UserError(
            f"{args.teacher}: a translation run, whose student learns on the run's own pairs; "
            "leave out --task, --data and --corpus"
        )
    last = latest_checkpoint(Path(args.out)) if args.resume else None
    if last is not None and (last / "run.json").is_file():  # resume what was started
        cfg = config_io.load(TranslationConfig, last / "run.json")
    else:
        run = read_run_config(registry.checkpoint_dir(distill_cfg.teacher))
        if run is None:
            raise UserError(
                f"{args.teacher}: the teacher is a translation run of seq2bert (with its run.json)"
            )
        model = student_config(run.model, distill_cfg.student.num_hidden_layers)
        cfg = replace(run, model=model, distill=DistillSection(distill_cfg.teacher, dict(distill_cfg.loss)))
        cfg = config_io.apply_overrides(cfg, [o for o in args.overrides if o.startswith("train.")])
    row = train(cfg, args.out, resume=args.resume)
    print(format_table([row], TRANSLATION_COLUMNS))
    return 0


DECODER_COLUMNS = [
    ("layers", "layers"),
    ("params", "params"),
    ("teacher_params", "teacher params"),
    ("steps", "steps"),
    ("train_seconds", "train time"),
    ("tokens_per_s", "tokens/s"),
    ("valid_perplexity", "held-out ppl"),
    ("teacher_perplexity", "teacher ppl"),
    ("valid_accuracy", "next-token acc %"),
    ("teacher_accuracy", "teacher acc %"),
]
TRANSLATION_COLUMNS = [
    ("model", "model"),
    ("params", "params"),
    ("steps", "steps"),
    ("train_seconds", "train time"),
    ("test_bleu", "test BLEU"),
    ("teacher_test_bleu", "teacher BLEU"),
]


CORPUS_COLUMNS = [
    ("method", "method"),
    ("layers", "layers"),
    ("hidden_size", "width"),
    ("params", "params"),
    ("teacher_params", "teacher params"),
    ("steps", "steps"),
    ("train_seconds", "train time"),
    ("tokens_per_s", "tokens/s"),
    ("valid_loss", "held-out loss"),
    ("valid_mlm_accuracy", "MLM acc %"),
]


def distill_columns(row: dict) -> list[tuple[str, str]]:
    """The student (method, size), its dev metrics, the teacher's, and the share of the teacher's kept."""
    head = [
        ("task", "task"),
        ("method", "method"),
        ("layers", "layers"),
        ("hidden_size", "width"),
        ("params", "params"),
        ("teacher_params", "teacher params"),
        ("train_seconds", "train time"),
        ("best_step", "best step"),
    ]
    dev = [(k, "dev " + k[4:].replace("_", " ")) for k in row if k.startswith("dev_")]
    teacher = [(k, "teacher " + k[12:].replace("_", " ")) for k in row if k.startswith("teacher_dev_")]
    return head + dev + teacher + [("of_teacher", "% of teacher")]


def cmd_quantize(args: argparse.Namespace) -> int:
    from seq2bert.io import check_output_dir
    from seq2bert.models import quantized, registry

    source = registry.checkpoint_dir(args.model)
    out = check_output_dir(
        args.out, command="quantize", mark=quantized.QUANTIZATION, inputs=(source,), overwrite=args.overwrite
    )
    model, _ = registry.load(source)
    if quantized.is_quantized(model):
        raise UserError(f"{args.model}: int8 already")
    quantized.save_int8(quantized.quantize(model), source, out)
    before = sum(f.stat().st_size for f in source.glob("model.safetensors"))
    after = (out / quantized.INT8_WEIGHTS).stat().st_size
    print(
        f"{out}: {type(model).__name__} with int8 Linears; weights {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB"
    )
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from seq2bert.recipes.prune import prune_checkpoint
    from seq2bert.tasks.data import FinetuneDataConfig

    data = FinetuneDataConfig(task=args.task, path=args.data) if args.task else None
    r = prune_checkpoint(
        args.model,
        args.out,
        heads=args.heads,
        sparsity=args.sparsity,
        step=args.step,
        examples=args.examples,
        data=data,
        dense=args.dense,
        overwrite=args.overwrite,
    )
    heads = f"heads {r['heads_before']} -> {r['heads_after']}; " if "heads_after" in r else ""
    zeros = f"; encoder weights {100 * r['sparsity']:.1f} % zero" if "sparsity" in r else ""
    print(f"{args.out}: {heads}parameters {r['params_before']:,} -> {r['params_after']:,}{zeros}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from seq2bert.recipes.export import export_onnx

    r = export_onnx(args.model, args.onnx, check=not args.no_check)
    check = f"; ONNX Runtime max |diff| {r['max_abs_diff']:.1e}" if "max_abs_diff" in r else ""
    print(f"{r['onnx']}: inputs {', '.join(r['inputs'])}; outputs {', '.join(r['outputs'])}{check}")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "distill",
        help="distil a teacher into a smaller student: a fine-tuned BERT on its task (DistilBERT, TinyBERT), "
        "a GPT on text or a translation run on its pairs (a draft for speculative decoding)",
        description="Train a student with fewer (and, if asked, narrower) layers on a task from a fine-tuned "
        "teacher's outputs: DistilBERT's soft targets + task loss + cosine loss (method=distilbert), TinyBERT's "
        "attention and hidden-state distillation then its prediction layer (method=tinybert), or the student "
        "fine-tuned alone (method=none). A student of the teacher's width starts from its embeddings and every "
        "other layer. OUT/best is the student's Hugging Face directory; results.json holds its dev scores and "
        "the teacher's. A GPT teacher (with --corpus) or a translation run (on its own pairs) gets a shallower "
        "student of its family trained on its next-token distributions (word-level distillation): a draft for "
        "--draft (speculative decoding).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  seq2bert distill --teacher runs/minilm-sst2/best --task sst2 --data ../shared/data/sst2 --out runs/sst2-l3\n"
        "  seq2bert distill --teacher runs/minilm-sst2/best --task sst2 --data ../shared/data/sst2 --out runs/sst2-tiny4 "
        "--set method=tinybert --set student.num_hidden_layers=4 --set student.hidden_size=256\n"
        "  seq2bert distill --teacher runs/minilm-conll/best --task conll2003 --data ../shared/data/conll2003 "
        "--out runs/conll-l3 --set method=none\n"
        "  seq2bert distill --teacher $MINILM --corpus ../shared/data/corpus --out runs/tiny4-general --set method=tinybert "
        "--set student.num_hidden_layers=4 --set student.hidden_size=256\n"
        "  seq2bert distill --teacher runs/gpt-mini/best --corpus ../shared/data/corpus --out runs/gpt-mini-draft "
        "--set student.num_hidden_layers=1\n"
        "  seq2bert distill --teacher runs/m30k-transformer --out runs/m30k-draft --set student.num_hidden_layers=1",
    )
    p.add_argument(
        "--teacher",
        help="the teacher's directory or Hub model name: a fine-tuned BERT, a GPT, a translation run (sets teacher)",
    )
    p.add_argument("--task", help="the task (sets data.task): a GLUE task, conll2003, squad, …")
    p.add_argument("--data", metavar="DIR", help="the task's data folder (sets data.path)")
    p.add_argument(
        "--corpus",
        nargs="+",
        metavar="FILE",
        help="in place of --task: general distillation from a "
        "pretrained teacher on text files or folders (sets corpus.files)",
    )
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue a killed run from its last checkpoint")
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON distillation configuration")
    add_set_arg(p, "student.num_hidden_layers=3 --set loss.temperature=4")
    p.set_defaults(func=cmd_distill)

    p = sub.add_parser(
        "quantize",
        help="a directory with its Linear layers dynamically quantised to int8 (CPU)",
        description="Quantise every Linear layer of a model to int8 (per-channel weights, activations "
        "quantised per batch: torch.ao dynamic quantisation) and write it as an int8 directory, "
        "which every command and pipeline loads (on the CPU).",
    )
    add_model_arg(p, "a checkpoint directory (a BERT-family task model, a Transformer translation run, …)")
    p.add_argument("--out", required=True, help="the int8 directory to write: new or empty")
    p.add_argument(
        "--overwrite", action="store_true", help="replace --out if it holds a previous quantize output"
    )
    p.set_defaults(func=cmd_quantize)

    p = sub.add_parser(
        "prune",
        help="remove a fine-tuned encoder's least important attention heads, or its smallest weights",
        description="Heads (--heads P): remove the fraction P of all attention heads, least important first "
        "(Michel et al. 2019: |dL/d gate| on training examples of the checkpoint's task, normalised per layer), "
        "a --step of them at a time with the importances measured again; each layer keeps one. Weights "
        "(--sparsity S): set the fraction S of the encoder layers' Linear weights with the smallest magnitude "
        "to 0 (global). OUT is a directory of the model's family with prune.json; heads are laid out as "
        "transformers 4's prune_heads (--dense: full size, the removed heads' weights 0, for transformers 5).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  seq2bert prune runs/minilm-sst2 --heads 0.5 --out runs/minilm-sst2-heads50\n"
        "  seq2bert prune runs/minilm-sst2 --sparsity 0.6 --out runs/minilm-sst2-sparse60\n"
        "  seq2bert evaluate runs/minilm-sst2-heads50",
    )
    add_model_arg(p, "a fine-tuned checkpoint or run directory (BERT, RoBERTa, ELECTRA, SpanBERT)")
    p.add_argument("--heads", type=float, default=0.0, metavar="P", help="the fraction of heads to remove")
    p.add_argument("--sparsity", type=float, default=0.0, metavar="S", help="the fraction of weights to zero")
    p.add_argument("--step", type=float, default=0.1, help="heads removed per step, a fraction of all (0.1)")
    p.add_argument("--examples", type=int, default=2000, help="training examples the importance reads (2000)")
    p.add_argument("--task", help="the task, when the checkpoint has no run.json")
    p.add_argument("--data", metavar="DIR", help="the task's data folder, with --task")
    p.add_argument(
        "--dense", action="store_true", help="write the heads at full size (transformers 5 reads it)"
    )
    p.add_argument("--out", required=True, help="the directory to write: new or empty")
    p.add_argument(
        "--overwrite", action="store_true", help="replace --out if it holds a previous prune output"
    )
    p.set_defaults(func=cmd_prune)

    p = sub.add_parser(
        "export",
        help="a BERT-family task model or encoder as ONNX, checked with ONNX Runtime",
        description="Export to ONNX (dynamic batch and sequence axes) and check ONNX Runtime's "
        "outputs against ours on padded batches (max |diff| <= 1e-4). Needs the extra onnx.",
    )
    add_model_arg(p, "a task model (sequence, token classification, span QA) or an encoder directory")
    p.add_argument("--onnx", required=True, metavar="FILE", help="the .onnx file to write")
    p.add_argument("--no-check", action="store_true", help="skip the ONNX Runtime check")
    p.set_defaults(func=cmd_export)
