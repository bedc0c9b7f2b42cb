"""Subcommands of the language models: train one on raw text, score it on other text, sample from it,
continue prompts with a GPT (generate), and bring a published ELMo model into our checkpoint format."""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2bert.commands.common import (
    BF16,
    add_bf16_arg,
    add_compile_arg,
    add_draft_arg,
    add_generation_args,
    add_int4_decoding_arg,
    add_int8_decoding_arg,
    add_model_arg,
    add_run_args,
    generation_settings,
    load_config,
)
from seq2bert.decoding.config import TEXT_DEFAULTS
from seq2bert.errors import UserError

# the columns of a language model's results row (train-lm) and of a perplexity evaluation (evaluate-lm)
LM_COLUMNS = [
    ("model", "model"),
    ("checkpoint", "checkpoint"),
    ("params", "params"),
    ("train_seconds", "train time"),
    ("tokens_per_s", "tokens/s"),
    ("valid_before_perplexity", "valid ppl before (token)"),  # train-lm --init: the checkpoint as given
    ("valid_perplexity", "valid ppl (token)"),
    ("valid_word_perplexity", "valid ppl (word)"),
    ("valid_forward_perplexity", "valid ppl (forward)"),
    ("valid_backward_perplexity", "valid ppl (backward)"),
    ("words", "words"),
    ("tokens", "tokens"),
    ("perplexity", "perplexity (token)"),
    ("word_perplexity", "perplexity (word)"),
    ("unk_tokens", "[UNK] tokens"),
    ("unscored_words", "unscored placeholders"),
]


def cmd_train_lm(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from seq2bert.recipes.lm import LMConfig, train_lm
    from seq2bert.report import format_table

    cfg = load_config(LMConfig, args)
    data = cfg.data
    if args.files:
        data = replace(data, files=[str(Path(f).resolve()) for f in args.files])
    if args.valid:
        data = replace(data, valid_files=[str(Path(f).resolve()) for f in args.valid])
    if not data.files:
        raise UserError("train-lm: give text files or folders (or data.files in --config)")
    if args.init:  # a directory made absolute, a Hub model name as given
        from seq2bert.models import registry

        cfg = replace(cfg, init=registry.as_given(args.init))
    row = train_lm(replace(cfg, data=data), args.out, resume=args.resume)
    print(format_table([row], LM_COLUMNS))
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    import torch

    from seq2bert.models import registry
    from seq2bert.pipelines import prompt_ids

    model, tok = registry.load(args.model, head="causal_lm")
    if tok is None:
        raise UserError(f"{args.model}: no tokenizer in the directory")
    draft = None if args.draft is None else registry.load(args.draft, head="causal_lm")[0]
    greedy = args.temperature == 0  # `sample`'s own spelling of greedy decoding
    if greedy:
        args.temperature = 1.0
    settings = generation_settings(args)
    # a prompt past the context keeps its end (as `generate`'s); an empty one starts a new document at [EOS]
    ids = prompt_ids(model, tok, [args.prompt], settings["max_new_tokens"])[0] if args.prompt else []
    prompt = torch.tensor([ids or [model.config.eos_token_id]])
    if args.int8 or args.int4:  # any family's int8 / int4 twin (a recurrent LM's output layer too)
        from seq2bert.models.weight_only import int8_twin, parameter_dtype, quantized_bits

        model = int8_twin(model, parameter_dtype(model), quantized_bits(args.int8, args.int4))
    drafted = {} if draft is None else {"draft": draft}  # speculative decoding: GPTs (step_many, rewind)
    for i in range(args.n):
        out = model.generate(
            prompt,
            **drafted,
            **{
                **settings,
                "do_sample": not greedy,
                "temperature": args.temperature,
                "seed": None if args.seed is None else args.seed + i,
            },
        )
        print(tok.decode(out[0].tolist()))
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    import json
    import sys

    from seq2bert.commands.common import stdin_text
    from seq2bert.pipelines import generate

    prompts = args.text or [stdin_text().removesuffix("\n")]
    # --stop '\n': backslash escapes read as Python reads them in a string
    stops = [s.encode("latin-1", "backslashreplace").decode("unicode_escape") for s in args.stop]
    settings = dict(
        generation_settings(args),
        stop=stops or None,
        batch_size=args.batch_size,
        bf16=BF16[args.bf16],
        int8=args.int8,
        draft=args.draft,
        compile=args.compile,
        int4=args.int4,
    )
    if len(prompts) == 1 and args.num_beams == 1:  # streamed: each piece printed as it is generated

        def show(piece: str) -> None:
            sys.stdout.write(piece)
            sys.stdout.flush()

        generate(prompts[0], args.model, on_text=show, **settings)
        print()
    elif len(prompts) == 1:
        print(generate(prompts[0], args.model, **settings))
    else:  # one line per prompt: the text as a JSON string (it may hold newlines)
        for text in generate(prompts, args.model, **settings):
            print(json.dumps(text, ensure_ascii=False))
    return 0


def cmd_evaluate_lm(args: argparse.Namespace) -> int:
    from seq2bert.recipes.lm import evaluate_lm
    from seq2bert.report import format_table

    row = evaluate_lm(
        args.model,
        args.files,
        bptt=args.bptt,
        max_unknown=args.max_unknown,
        unk_token=args.unk_token,
        bits=8 if args.int8 else 4 if args.int4 else None,
    )
    print(format_table([row], LM_COLUMNS))
    return 0


def cmd_convert_elmo(args: argparse.Namespace) -> int:
    from seq2bert.models.elmo.convert import save_bilm_tf
    from seq2bert.training.run import count_parameters

    model = save_bilm_tf(args.options, args.weights, args.out, args.vocab)
    c = model.config
    print(
        f"{args.out}: ELMo biLM, {c.num_layers} layers of {c.cell_size} cells projected to {c.projection_dim}, "
        f"{count_parameters(model):,} parameters"
    )
    return 0


def register(sub) -> None:
    """Add this module's subcommands to the ``seq2bert`` parser's subparsers."""
    p = sub.add_parser(
        "train-lm",
        help="train a recurrent language model (Elman RNN, IRNN, LSTM, GRU; ELMo's biLM) on raw text",
        description="Train a word-piece language model with truncated back-propagation through time: the text is "
        "tokenized once into --out/corpus (streamed from disk), read as one stream in --set data.bptt segments; "
        "held-out perplexity per token and per word. --resume continues a killed run exactly.",
        epilog="examples:\n  seq2bert train-lm ../shared/data/corpus --out runs/lm --set train.max_minutes=55\n"
        "  seq2bert train-lm books/ --out runs/gru --set model.cell=gru --valid held-out.txt\n"
        "  seq2bert train-lm books/ --out runs/elmo --set model.model_type=elmo   # ELMo's biLM (word softmax)\n"
        "  seq2bert train-lm domain.txt --init runs/lm --out runs/lm-domain   # continue a run on new text",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", help="text files, or folders of *.txt files")
    p.add_argument(
        "--valid", nargs="*", help="held-out text files (default: data.valid_fraction of the documents)"
    )
    p.add_argument(
        "--init",
        metavar="MODEL",
        help="continue this language model (a train-lm run or checkpoint) with its own vocabulary (sets init)",
    )
    add_run_args(p, "model.cell=gru")
    p.set_defaults(func=cmd_train_lm)

    p = sub.add_parser("sample", help="continue a prompt with a language model (sampling with a temperature)")
    add_model_arg(p, "a language model (a train-lm run's best/)")
    p.add_argument("--prompt", default="", help="the text to continue (default: a new document)")
    add_generation_args(
        p,
        defaults={"max_new_tokens": 50},
        exclude=("do_sample", "max_len_a", "max_len_b", "num_return_sequences"),
        helps={"temperature": "sample from p^(1/T); 0: greedy (the most probable token)"},
    )
    p.add_argument("-n", type=int, default=1, help="how many samples")
    add_int8_decoding_arg(
        p, "sample with int8 weights: every Linear layer and the output layer int8 with a scale per row"
    )
    add_int4_decoding_arg(p)
    add_draft_arg(p, "a smaller language model")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser(
        "generate",
        help="continue prompts with a GPT / GPT-2 directory: greedy, beam search or sampling, streamed",
        description="Continue each prompt with a decoder-only language model (a Hugging Face GPT or GPT-2 "
        "directory with its tokenizer files). One prompt without beams is streamed to the terminal as it is "
        "generated; several prompts print one line each, the continuation as a JSON string. The prompt itself "
        "is not printed. No prompt: one prompt read from stdin. A prompt longer than the context leaves "
        "(the model's positions - max-new-tokens: GPT's n_positions, BERT's max_position_embeddings) keeps its "
        "last tokens, with one warning; an empty prompt starts from the "
        "model's <|endoftext|>.",
        epilog='examples:\n  seq2bert generate gpt2/ "The meaning of life is" --max-new-tokens 40\n'
        '  seq2bert generate gpt2/ "Once upon a time" --do-sample --temperature 0.8 --top-p 0.9 --seed 1\n'
        '  seq2bert generate gpt2/ "Q: why?" "Q: how?" --num-beams 4 --no-repeat-ngram-size 3 --stop "\\n"\n'
        '  seq2bert generate gpt2/ "DeepMind Company is" --penalty-alpha 0.6 --top-k 4   # contrastive search',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_arg(p, "a GPT / GPT-2 directory (config.json, weights, vocab.json + merges.txt)")
    p.add_argument("text", nargs="*", help="the prompts (default: one read from stdin)")
    add_generation_args(p, defaults=TEXT_DEFAULTS, exclude=("max_len_a", "max_len_b", "num_return_sequences"))
    p.add_argument(
        "--stop",
        action="append",
        default=[],
        metavar="STR",
        help="stop a text when it comes to contain STR (kept; escapes such as \\n read; repeatable)",
    )
    p.add_argument("--batch-size", type=int, default=16, help="prompts decoded together (left-padded)")
    add_bf16_arg(p)
    add_int8_decoding_arg(p)
    add_int4_decoding_arg(p)
    add_draft_arg(p, "a smaller language model")
    add_compile_arg(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser(
        "evaluate-lm", help="perplexity of a language model on text files (its own vocabulary)"
    )
    add_model_arg(p, "a language model (a train-lm run or its best/)")
    p.add_argument(
        "files",
        nargs="+",
        help="text files or folders of *.txt (e.g. ../shared/data/wikitext2/wiki.test.tokens)",
    )
    p.add_argument(
        "--bptt",
        type=int,
        default=128,
        help="segment length: a recurrent LM carries its state across segments; a GPT reads windows of this "
        "many tokens sliding by half a window, each token scored once (default 128, the pretraining blocks)",
    )
    p.add_argument(
        "--max-unknown",
        type=float,
        default=0.2,
        help="the largest share of [UNK] tokens accepted: above it the vocabulary does not cover the text "
        "(default 0.2)",
    )
    p.add_argument(
        "--unk-token",
        metavar="WORD",
        help="the text's own placeholder for removed words (WikiText: '<unk>'): read as the model's [UNK] "
        "and not counted as a word; no [UNK] target is then scored (a byte-level BPE without [UNK] reads the "
        "placeholder spelled out and scores none of its pieces)",
    )
    weights = p.add_mutually_exclusive_group()
    weights.add_argument(
        "--int8", action="store_true", help="score the model with int8 weights (as `generate --int8` decodes)"
    )
    weights.add_argument(
        "--int4", action="store_true", help="score the model with 4-bit weights in groups of 32"
    )
    p.set_defaults(func=cmd_evaluate_lm)

    p = sub.add_parser(
        "convert-elmo",
        help="a published ELMo model (bilm-tf options.json + weights.hdf5) as a seq2bert checkpoint",
        description="Read a published ELMo biLM (the options.json and HDF5 weights of bilm-tf, which AllenNLP "
        "also reads; needs h5py) and write it as a seq2bert checkpoint that `seq2bert embed` and fine-tuning "
        "features read. The published models read tokenized text, split on whitespace.",
        epilog="example:\n  seq2bert convert-elmo elmo_options.json elmo_weights.hdf5 --out models/elmo-small\n"
        '  seq2bert embed models/elmo-small "he sat on the river bank ." "she paid the money into the bank ."',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("options", help="bilm-tf's options.json")
    p.add_argument("weights", help="bilm-tf's weights (HDF5)")
    p.add_argument("--out", required=True, help="the checkpoint folder to write")
    p.add_argument("--vocab", help="bilm-tf's vocabulary file (one word per line), kept with the checkpoint")
    p.set_defaults(func=cmd_convert_elmo)
