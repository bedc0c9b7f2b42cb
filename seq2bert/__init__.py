"""seq2bert: the lineage of neural sequence models, from Seq2Seq to BERT, as real, fast, tested software."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def from_pretrained(path: str | Path, device: str = "cpu"):
    """Load a seq2bert checkpoint (or a run directory's best checkpoint), or a Hugging Face directory of any
    family in the registry (seq2bert/models/registry.py) — a MarianMT model as our Transformer, a BERT as
    the class its config.json names (BertModel, BertForPreTraining, BertForMaskedLM, a task head) — as a
    model in eval mode. A model name of the Hugging Face Hub — ``"bert-base-uncased"``,
    ``"sentence-transformers/all-MiniLM-L6-v2"``, ``"gpt2@main"``, ``name@<commit hash>`` — is read from the
    huggingface_hub cache, downloaded there first if need be (seq2bert/models/hub.py; a local directory of
    that name comes first). Every command and pipeline that takes a checkpoint directory takes a name too."""
    from seq2bert.models import registry

    return registry.load(path, device=device)[0]


def translate(
    texts: str | list[str],
    model: str | Path,
    *,
    batch_size: int = 64,
    max_source_length: int | None = None,
    bf16: bool | str = "auto",
    int8: bool = False,
    int4: bool = False,
    compile: bool = False,
    draft=None,
    **settings,
) -> str | list[str]:
    """Translate ``texts`` (a string: one sentence) with the checkpoint at ``model``: greedy decoding, or beam
    search with ``num_beams``; at most ⌊max_len_a · |x| + max_len_b⌋ tokens per sentence (1.5 and 10 unless
    set); ``settings``: GenerationConfig's (seq2bert/decoding/config.py: ``num_beams``, ``length_penalty``
    — GNMT's form here —, ``max_len_a``, ``max_len_b``, ``no_repeat_ngram_size``, …); sources truncated
    to ``max_source_length`` tokens (default: the model's positions, else 512), "" for an empty text. The
    model is loaded once and kept between calls; it decodes in bf16 where the CPU computes bf16 natively
    (``bf16="auto"``), in fp32 with ``bf16=False``; ``int8``, ``int4``, ``compile`` and ``draft`` as
    ``seq2bert.pipelines.translate`` takes them."""
    from seq2bert.decoding.generation import Decoding
    from seq2bert.pipelines import translate as _translate

    decoding = Decoding.of(**settings)
    return _translate(
        model,
        texts,
        decoding=decoding,
        batch_size=batch_size,
        max_source_length=max_source_length,
        bf16=bf16,
        int8=int8,
        int4=int4,
        compile=compile,
        draft=draft,
    )


def embed(
    texts: list[str],
    model,
    *,
    normalize: bool | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    layer: int | str | None = None,
    bf16: bool | str = "auto",
):
    """Sentence embeddings (n, hidden) of an encoder directory, pooled (by default: mean) and normalised as
    its sentence-transformers modules.json says, unless ``normalize`` is given; ``layer``: an index or
    "mean" (default: the last, for ELMo the mean of its layers; see seq2bert/pipelines/encoders.py). Texts are
    read in batches of similar length, under bf16 autocast where the device computes bf16 natively
    (``bf16="auto"``; ``bf16=False`` computes in fp32)."""
    from seq2bert.pipelines import embed as _embed

    return _embed(
        texts,
        model,
        normalize=normalize,
        batch_size=batch_size,
        max_length=max_length,
        layer=layer,
        bf16=bf16,
    )


def fill_mask(text: str, model, *, top_k: int = 5):
    """The top-k tokens (with scores) for the [MASK] of ``text`` by a directory with an MLM head (BERT, RoBERTa
    with <mask>, ALBERT, SpanBERT; an ELECTRA run: its generator)."""
    from seq2bert.pipelines import fill_mask as _fill_mask

    return _fill_mask(text, model, top_k=top_k)


def classify(texts, model, *, top_k: int | None = 1, bf16: bool | str = "auto"):
    """Labels (with probabilities) of texts or (text, pair) tuples by a fine-tuned sequence classifier; in
    batches of similar length, under bf16 autocast where the device computes bf16 natively (as ``embed``)."""
    from seq2bert.pipelines import classify as _classify

    return _classify(texts, model, top_k=top_k, bf16=bf16)


def tag(text, model, *, aggregate: bool = True):
    """Entities of ``text`` (grouped, with character spans) by a fine-tuned token classifier."""
    from seq2bert.pipelines import tag as _tag

    return _tag(text, model, aggregate=aggregate)


def answer(question: str, context: str, model, **options):
    """The answer to ``question`` as a span of ``context`` (text, score, start, end) by a QA model."""
    from seq2bert.pipelines import answer as _answer

    return _answer(question, context, model, **options)


def generate(prompts, model, **settings):
    """The continuation of each prompt (a string for a string, else a list) by a language model directory
    (GPT, GPT-2, BERT with is_decoder) or a ``(model, tokenizer)`` pair: the generated text alone, prompt
    excluded. ``settings``: GenerationConfig's (seq2bert/decoding/config.py) — ``max_new_tokens`` (50),
    ``do_sample``, ``temperature``, ``top_k`` (50, when sampling), ``top_p``, ``num_beams``,
    ``repetition_penalty``, ``no_repeat_ngram_size``, ``min_new_tokens``, ``length_penalty``, ``seed``, … —
    and ``stop`` (stop strings), ``batch_size``, ``on_text`` (a callable given the text as it comes),
    ``bf16`` ("auto": bf16 where the CPU computes it natively; False: fp32).
    Prompts longer than the context leaves (n_positions − max_new_tokens) keep their last tokens, with a
    warning; an empty prompt starts from the model's <|endoftext|> (an error for a model without one).
    Invalid settings raise ValueError (ConfigError). The model of a directory is loaded once and kept
    between calls (seq2bert/pipelines/loading.py)."""
    from seq2bert.pipelines import generate as _generate

    return _generate(prompts, model, **settings)
