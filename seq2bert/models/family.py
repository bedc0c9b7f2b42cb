"""What a model family tells the rest of seq2bert about itself: one ``Family`` record per Hugging Face
``model_type`` (seq2bert/models/registry.py lists them).

Generic code — loading and saving, the pipelines, the CLI, inspection, pretraining and fine-tuning — asks
the family, never a family's name:

    config_class     the dataclass of the family's hyper-parameters (Hugging Face field names)
    architectures    transformers' class name → our class ("BertForMaskedLM" → BertForMaskedLM); the first is
                     the bare model
    heads            what a job needs → the architecture that has it: "base" (hidden states), "pretraining",
                     "masked_lm", "sequence" / "tokens" / "qa" / "choice" (the fine-tuning shapes; "similarity":
                     a pair read in both orders, GPT-1's), "seq2seq", "causal_lm" (a left-to-right language
                     model that generates)
    head_dirs        heads a checkpoint keeps in a directory of their own inside it, where a job asking for
                     one finds it: {"masked_lm": "generator"} (ELECTRA's generator beside the discriminator)
    pretraining_objective  what `seq2bert pretrain` trains the "pretraining" head on: "masked_lm" (MLM + NSP
                     instances, BERT), "causal_lm" (contiguous blocks of the text, GPT) or
                     "replaced_token_detection" (a generator's samples in the masked instances, ELECTRA) or
                     "permutation_lm" (factorisation orders, two streams, partial prediction: XLNet)
    pretrainer       (config, **options) → the module pretraining trains when it is more than the
                     "pretraining" head: ELECTRA's generator and discriminator (None: the head alone)
    sentence_pairs   the masked LM's pairs: "next_sentence" (NSP, BERT: next_sentence_label),
                     "sentence_order" (SOP, ALBERT: sentence_order_label) or "none" (single segments,
                     ELECTRA, SpanBERT); what data.sentence_task=auto means
    pretraining_data the data settings its pretraining takes where the config says "auto" (RoBERTa's
                     FULL-SENTENCES and dynamic masking; SpanBERT's span masking)
    pretraining_terms  (the "pretraining" head's output) → ``PretrainingTerms``: where its MLM loss and logits,
                     its sentence task's loss and logits and a span-boundary loss are (BERT's names by default)
    span_boundaries  whether its pretraining model reads each masked token's span boundaries (SpanBERT's SBO)
    presets          named sizes: {"mini": a function returning the config} (`seq2bert pretrain` starts a
                     family at its "mini" when model.model_type switches to it)
    stream_lm        `seq2bert train-lm` trains it on a token stream (recipes/lm.py: the RNN LM, ELMo)
    word_vectors     one static vector per word, trained by `seq2bert train-vectors` (recipes/vectors.py:
                     word2vec, GloVe, fastText); its tokenizer is the vocabulary with counts (word_counts.txt)
    text_inputs, default_layer   how the pipelines feed its base model texts and which layer they read
    reads_specials   as a frozen features encoder (models/bilstm/features.py): whether it reads its tokenizer's
                     [CLS] A [SEP] (False: bare sub-words, a pair as one text — a translation encoder, CoVe)
    kind             "encoder", "encoder-decoder" or "decoder": how its attention is shown and used
    base_model_prefix  the attribute under which a head model keeps the bare model ("bert"; "" for none)
    tokenizer        the tokenizer kind its checkpoints carry ("wordpiece", "sentencepiece", "bytelevel-bpe",
                     "seq2bert", …); pretraining trains this kind when it is one of data/tokenization.py's

and how its checkpoints are laid out. ``layout="huggingface"``: a directory transformers reads —
config.json with ``architectures``, model.safetensors, the tokenizer files — through the family's
conversions (its declarative key maps, convert.py): ``config_from_hf`` / ``config_to_hf`` and
``state_from_hf`` / ``state_to_hf``. A family of our own (no transformers class) may leave them out: its
config.json is then the config dataclass plus ``architectures``, and its weights our state dict as is.
``layout="seq2bert"``: the translation recipe's checkpoints (config.json of the dataclass, model.safetensors
with tied tensors stored once, tokenizer.json).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from seq2bert import config as config_io
from seq2bert.errors import CheckpointError, ConfigError

KINDS = ("encoder", "encoder-decoder", "decoder")


@dataclass(frozen=True)
class PretrainingTerms:
    """The parts of a masked-LM pretraining step a run measures, as a family's pretraining head returns them."""

    mlm_loss: torch.Tensor
    mlm_logits: torch.Tensor  # (N, V) at the labelled positions, or (B, T, V)
    sentence_loss: torch.Tensor | None = None  # NSP or SOP, when the batch has pairs
    sentence_logits: torch.Tensor | None = None  # (B, 2)
    span_loss: torch.Tensor | None = None  # SpanBERT's SBO


def next_sentence_terms(out: Any) -> PretrainingTerms:
    """BertForPreTraining's output (MLM + NSP): the default of a family."""
    return PretrainingTerms(out.mlm_loss, out.prediction_logits, out.nsp_loss, out.seq_relationship_logits)


def masked_lm_terms(out: Any) -> PretrainingTerms:
    """A masked-LM head alone (RoBERTa's pretraining model): its loss and logits."""
    return PretrainingTerms(out.loss, out.logits)


def max_input_length(config: Any, default: int | None = None) -> int | None:
    """The most tokens a model of ``config`` reads: its ``max_input_length`` when it says (RoBERTa's positions
    start past the padding index), else the size of its position table; ``default`` for a model without
    one (an LSTM reads any length)."""
    said = getattr(config, "max_input_length", None)
    return said if said is not None else getattr(config, "max_position_embeddings", default)


@dataclass(frozen=True)
class Family:
    model_type: str
    config_class: type
    architectures: dict[str, type[nn.Module]]
    heads: dict[str, str] = field(default_factory=dict)
    head_dirs: dict[str, str] = field(default_factory=dict)  # head → subdirectory of a checkpoint holding it
    kind: Literal["encoder", "encoder-decoder", "decoder"] = "encoder"
    base_model_prefix: str = ""
    tokenizer: str = "seq2bert"
    layout: Literal["huggingface", "seq2bert"] = "huggingface"
    # Hugging Face checkpoints (None: seq2bert's own layout)
    config_from_hf: Callable[[dict, str], Any] | None = None  # (config.json dict, source) → our config
    config_to_hf: Callable[[Any, str], dict] | None = None  # (our config, architecture) → config.json dict
    # (their state, our config, architecture, source, new_heads) → our state dict
    state_from_hf: Callable[..., dict[str, torch.Tensor]] | None = None
    state_to_hf: Callable[[dict, Any, str], dict] | None = None  # (our state, config, architecture) → theirs
    load_tokenizer: Callable[[Path], Any] | None = None  # the checkpoint's tokenizer (None when it has none)
    # (tokenizer, directory, model config): its files in a checkpoint (default: tokenizer.save(directory))
    save_tokenizer: Callable[[Any, Path, Any], None] | None = None
    # our model for (config, architecture, their weights or None); default: architectures[architecture](config)
    build: Callable[..., nn.Module] | None = None
    head_modules: tuple[str, ...] = ()  # top-level modules of every head (dropped when a task starts)
    pretraining_options: dict = field(default_factory=dict)  # keyword arguments of the pretraining forward
    pretraining_objective: Literal["masked_lm", "causal_lm", "replaced_token_detection", "permutation_lm"] = (
        "masked_lm"
    )
    pretrainer: Callable[..., nn.Module] | None = None
    sentence_pairs: Literal["next_sentence", "sentence_order", "none"] = "next_sentence"
    # the data section's values its pretraining takes by default (for the settings left at "auto":
    # data.sentence_task, data.masking), e.g. RoBERTa's FULL-SENTENCES with dynamic masking
    pretraining_data: dict = field(default_factory=dict)
    pretraining_terms: Callable[[Any], PretrainingTerms] = next_sentence_terms
    span_boundaries: bool = False
    presets: dict[str, Callable[[], Any]] = field(default_factory=dict)
    stream_lm: bool = False
    word_vectors: bool = False  # static word vectors `seq2bert train-vectors` trains (recipes/vectors.py)
    # (files, vocab_size) → the tokenizer a pretraining run trains when none is given; None: data/tokenization's
    # kind ``tokenizer`` (RoBERTa's: a byte-level BPE with its own specials; ALBERT's: a SentencePiece unigram)
    train_tokenizer: Callable[[list[Path], int], Any] | None = None
    # how the pipelines give texts to its base model: (model, tokenizer, texts) → (inputs, each text's tokens);
    # None: the tokenizer's ids, [CLS] and [SEP] included (a model that reads characters spells words itself)
    text_inputs: Callable[[nn.Module, Any, list[str]], tuple[dict, list[list[str]]]] | None = None
    # as a features encoder (models/bilstm/features.py): whether its base model reads its tokenizer's special
    # tokens ([CLS] A [SEP] (B [SEP])); False: bare sub-words, a pair as one text (a translation encoder: CoVe)
    reads_specials: bool = True
    default_layer: int | Literal["mean"] = -1  # what the pipelines read: a layer, or "mean" (all of them)
    # files of a checkpoint beside its config, weights and tokenizer: (model, directory) → None, written with
    # every checkpoint and read when one is loaded (the BiLSTM's: its features encoder's tokenizer)
    save_files: Callable[[nn.Module, Path], None] | None = None
    load_files: Callable[[nn.Module, Path], None] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.model_type}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.architectures:
            raise ValueError(f"{self.model_type}: a family needs at least one architecture")
        unknown = [a for a in self.heads.values() if a not in self.architectures]
        if unknown:
            raise ValueError(f"{self.model_type}: heads name unknown architectures {unknown}")

    @property
    def base_architecture(self) -> str:
        return next(iter(self.architectures))

    @property
    def huggingface(self) -> bool:
        """Whether its checkpoints are Hugging Face-style directories (else the translation recipe's layout)."""
        return self.layout == "huggingface"

    # --- checkpoints: the family's conversions, or our own layout as is
    def read_config(self, data: dict, source: str) -> Any:
        """Our config from a config.json dictionary. Of a Hugging Face directory, the values it gives the keys
        it shares with the config dataclass are checked against the dataclass's annotations first — a one-line
        error naming the file, the key and the type expected — for every family, before its own reading
        (``config_from_hf``) sees them; but lists and nulls, which a family's reading may take in
        transformers' ways (Marian's list of [EOS] ids; null: unset), and model_type, which it checks."""
        if self.config_from_hf is not None:
            shared = {
                k: v
                for k, v in data.items()
                if k != "model_type" and v is not None and not isinstance(v, list)
            }
            try:
                data = {**data, **config_io.shared_fields(self.config_class, shared)}
            except ConfigError as e:
                raise CheckpointError(f"{source}: {e}") from None
            return self.config_from_hf(data, source)
        fields = {k: v for k, v in data.items() if k in self.config_class.__dataclass_fields__}
        fields = config_io.former_defaults(self.config_class, fields)
        try:
            return config_io.from_dict(self.config_class, fields)
        except ConfigError as e:
            raise CheckpointError(f"{source}: {e}") from None

    def write_config(self, config: Any, architecture: str) -> dict:
        """config.json's dictionary for ``config`` and ``architecture``."""
        if self.config_to_hf is not None:
            return self.config_to_hf(config, architecture)
        return {"architectures": [architecture], **config_io.to_dict(config)}

    def read_state(
        self, state: dict[str, torch.Tensor], config: Any, architecture: str, source: str, new_heads: bool
    ) -> dict[str, torch.Tensor]:
        """Our state dict from a checkpoint's; ``new_heads`` (a task starting): without any head."""
        if self.state_from_hf is not None:
            return self.state_from_hf(state, config, architecture, source, new_heads)
        # our own layout: a head model keeps the bare model under base_model_prefix; either loads from either
        prefix = f"{self.base_model_prefix}." if self.base_model_prefix else ""
        prefixed = bool(prefix) and any(k.startswith(prefix) for k in state)
        if architecture == self.base_architecture and prefixed:
            state = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        elif architecture != self.base_architecture and prefix and not prefixed:
            state = {prefix + k: v for k, v in state.items()}
        if new_heads:
            return {k: v for k, v in state.items() if k.split(".")[0] not in self.head_modules}
        return dict(state)

    def write_state(self, state: dict[str, torch.Tensor], config: Any, architecture: str) -> dict:
        if self.state_to_hf is not None:
            return self.state_to_hf(state, config, architecture)
        return dict(state)

    def architecture_for(self, head: str) -> str:
        """The architecture that has ``head``; a one-line error naming the heads the family has."""
        if head not in self.heads:
            raise KeyError(f"{self.model_type} has no {head!r} model (it has: {', '.join(self.heads)})")
        return self.heads[head]

    def architecture_of(self, model: nn.Module) -> str:
        return self.architecture_of_class(type(model))

    def architecture_of_class(self, model_class: type) -> str:
        for name, cls in self.architectures.items():
            if model_class is cls:
                return name
        raise TypeError(f"not a {self.model_type} model: {model_class.__name__}")

    def make(self, config: Any, architecture: str | None = None, weights: dict | None = None) -> nn.Module:
        """A new model of ``architecture`` (default: the bare model) for ``config``."""
        architecture = architecture or self.base_architecture
        if self.build is not None:
            return self.build(config, architecture, weights)
        return self.architectures[architecture](config)

    def base_model(self, model: nn.Module) -> nn.Module:
        """The bare model inside a head model (the model itself when it is bare)."""
        return getattr(model, self.base_model_prefix, model) if self.base_model_prefix else model


# --- the table of families, by model_type: filled by seq2bert/models/registry.py (the built-in ones, listed
# there) and by ``register`` (a plugin's); it lives here, below every family, so that a model's
# save_pretrained / from_pretrained finds its family without importing the registry (which imports them all)
FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add a family (one of your own: a model_type not taken yet)."""
    if family.model_type in FAMILIES and FAMILIES[family.model_type] is not family:
        raise ValueError(f"model_type {family.model_type!r} is already registered")
    FAMILIES[family.model_type] = family
    return family


def get(model_type: str | None, source: str | Path = "config.json") -> Family:
    """The family of ``model_type``; a one-line error naming the known ones otherwise."""
    if model_type is None:
        raise CheckpointError(f"{source}: no model_type (expected one of {', '.join(FAMILIES)})")
    if model_type not in FAMILIES:
        raise CheckpointError(f"{source}: model_type {model_type!r} is not one of {', '.join(FAMILIES)}")
    return FAMILIES[model_type]


def family_of(model_or_config: Any) -> Family:
    """The family of a model or config (by its ``model_type``)."""
    config = getattr(model_or_config, "config", model_or_config)
    return get(getattr(config, "model_type", None), type(config).__name__)


def families(where: Callable[[Family], bool]) -> dict[str, type]:
    """{model_type: config class} of the registered families that satisfy ``where``, in registration order:
    the choices of a model section (config.Tagged), read when a configuration is."""
    return {t: f.config_class for t, f in FAMILIES.items() if where(f)}
