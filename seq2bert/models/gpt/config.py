"""Configuration of GPT (Radford et al. 2018) and GPT-2 (Radford et al. 2019), with Hugging Face's field names
(OpenAIGPTConfig, model_type "openai-gpt"; GPT2Config, "gpt2") so that config.json files map one to one. The
papers' symbols: n = n_layer blocks, d_model = n_embd, h = n_head, the context k = n_positions; the
feed-forward has 4·n_embd units (GPT-2: ``n_inner`` when set).

The two share every field but a few: ``GPTConfig`` holds the shared ones and their checks, each model's
class adds its own — GPT-1 its activation ``afn``, GPT-2 ``n_inner``, ``activation_function``, the attention
scaling switches and its special ids. The ``summary_*`` fields describe the multiple-choice head of the
DoubleHeads models (transformers' SequenceSummary).

Named builders: the papers' models — ``gpt1()`` (12 layers, 768 units, 12 heads: Radford et al. 2018,
Sect. 4.1), GPT-2 small / medium / large / XL (Radford et al. 2019, Table 2) — mini models of BERT-mini's size
(4 layers, 256 units, 4 heads: what `seq2bert pretrain` trains by default) and tiny models for tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.objectives.classification import ClassifierFields

SUMMARY_TYPES = ("last", "first", "mean", "cls_index")  # transformers' SequenceSummary ("attn" never existed)
# GPT-1's ``afn`` → our activation: transformers' OpenAIGPT maps "gelu" to the tanh approximation (ACT_FNS),
# as the released code computed it
AFN = {"gelu": "gelu_new", "relu": "relu", "silu": "silu", "swish": "swish"}


@dataclass
class GPTConfig(ClassifierFields):
    """What GPT-1 and GPT-2 share (defaults: the 12-layer, 768-unit models). ``classifier_dropout`` (None:
    0.1, as transformers) is the dropout of GPT-2's token classifier; id2label / problem_type those of the
    sequence classifier (ClassifierFields)."""

    model_type: str = ""
    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    summary_type: str = "cls_index"
    summary_use_proj: bool = True
    summary_activation: str | None = None
    summary_proj_to_labels: bool = True
    summary_first_dropout: float = 0.1
    summary_last_dropout: float = 0.0
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    pad_token_id: int | None = None

    @property
    def d_ff(self) -> int:
        """The feed-forward's inner size: 4·n_embd ("3072 dimensional inner states", GPT-1 Sect. 4.1)."""
        return 4 * self.n_embd

    # transformers' attribute_map: the names the other families' configs use, read-only
    @property
    def hidden_size(self) -> int:
        return self.n_embd

    @property
    def num_hidden_layers(self) -> int:
        return self.n_layer

    @property
    def num_attention_heads(self) -> int:
        return self.n_head

    @property
    def max_position_embeddings(self) -> int:
        return self.n_positions

    def validate(self) -> None:
        expected = type(self).__dataclass_fields__["model_type"].default
        if self.model_type != expected:
            raise ConfigError(f"model_type: expected {expected!r}, got {self.model_type!r}")
        for name in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_head: n_embd {self.n_embd} is not divisible by {self.n_head} heads")
        for name in (
            "resid_pdrop",
            "embd_pdrop",
            "attn_pdrop",
            "summary_first_dropout",
            "summary_last_dropout",
        ):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {getattr(self, name)}")
        if self.initializer_range < 0 or self.layer_norm_epsilon <= 0:
            raise ConfigError("initializer_range must be >= 0 and layer_norm_epsilon > 0")
        if self.summary_type not in SUMMARY_TYPES:
            raise ConfigError(
                f"summary_type: expected one of {', '.join(SUMMARY_TYPES)}, got {self.summary_type!r}"
            )
        if self.summary_activation not in (None, "tanh", "linear", *ACTIVATIONS):
            raise ConfigError(
                f"summary_activation: expected None, 'tanh' or one of {', '.join(ACTIVATIONS)}, "
                f"got {self.summary_activation!r}"
            )
        for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"{name}: expected a token id (an int >= 0) or None, got {value!r}")
        self.validate_classifier()

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class OpenAIGPTConfig(GPTConfig):
    """GPT-1: 40,478 BPE tokens, a context of 512, GELU (``afn``, one of AFN)."""

    model_type: str = "openai-gpt"
    vocab_size: int = 40478
    n_positions: int = 512
    afn: str = "gelu"

    def validate(self) -> None:
        super().validate()
        if self.afn not in AFN:
            raise ConfigError(f"afn: expected one of {', '.join(AFN)}, got {self.afn!r}")


@dataclass
class GPT2Config(GPTConfig):
    """GPT-2: 50,257 byte-level BPE tokens, a context of 1024, <|endoftext|> (50256) begins and ends texts.

    ``n_inner``: the feed-forward's size (None: 4·n_embd). ``scale_attn_weights``: QKᵀ/√d_k (False: QKᵀ);
    ``scale_attn_by_inverse_layer_idx``: the scores of layer ℓ (0-based) further divided by ℓ + 1 (Mistral's
    stable training of GPT-2). ``reorder_and_upcast_attn`` computes the scores in fp32: our attention always
    does under autocast, so it changes nothing here."""

    model_type: str = "gpt2"
    n_inner: int | None = None
    activation_function: str = "gelu_new"
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False
    bos_token_id: int | None = 50256
    eos_token_id: int | None = 50256

    @property
    def d_ff(self) -> int:
        return self.n_inner if self.n_inner is not None else 4 * self.n_embd

    def validate(self) -> None:
        super().validate()
        if self.n_inner is not None and self.n_inner < 1:
            raise ConfigError(f"n_inner: must be at least 1 (or None: 4·n_embd), got {self.n_inner}")
        if self.activation_function not in ACTIVATIONS:
            raise ConfigError(
                f"activation_function: expected one of {', '.join(ACTIVATIONS)}, got {self.activation_function!r}"
            )


def gpt1(**overrides) -> OpenAIGPTConfig:
    """12 layers, d_model 768, 12 heads, 512 positions, 117 M parameters (Radford et al. 2018, Sect. 4.1)."""
    return OpenAIGPTConfig(**overrides)


def gpt1_mini(**overrides) -> OpenAIGPTConfig:
    """4 layers, d_model 256, 4 heads (BERT-mini's size): the default of GPT-1 pretraining on a CPU."""
    return OpenAIGPTConfig(**{"n_layer": 4, "n_embd": 256, "n_head": 4, **overrides})


def gpt1_tiny(**overrides) -> OpenAIGPTConfig:
    """2 layers, d_model 64, 4 heads, 128 positions: a model for tests and CPU experiments."""
    return OpenAIGPTConfig(**{"n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 128, **overrides})


def _gpt2(layers: int, width: int, heads: int, **overrides) -> GPT2Config:
    return GPT2Config(**{"n_layer": layers, "n_embd": width, "n_head": heads, **overrides})


def gpt2_tiny(**overrides) -> GPT2Config:
    """2 layers, d_model 64, 4 heads, 128 positions: a model for tests and CPU experiments."""
    return _gpt2(2, 64, 4, **{"n_positions": 128, **overrides})


def gpt2_mini(**overrides) -> GPT2Config:
    """4 layers, d_model 256, 4 heads (BERT-mini's size): the default of GPT-2 pretraining on a CPU."""
    return _gpt2(4, 256, 4, **overrides)


def gpt2_small(**overrides) -> GPT2Config:
    """12 layers, d_model 768, 12 heads: 117 M parameters (Radford et al. 2019, Table 2)."""
    return _gpt2(12, 768, 12, **overrides)


def gpt2_medium(**overrides) -> GPT2Config:
    """24 layers, d_model 1024, 16 heads: 345 M parameters."""
    return _gpt2(24, 1024, 16, **overrides)


def gpt2_large(**overrides) -> GPT2Config:
    """36 layers, d_model 1280, 20 heads: 762 M parameters."""
    return _gpt2(36, 1280, 20, **overrides)


def gpt2_xl(**overrides) -> GPT2Config:
    """48 layers, d_model 1600, 25 heads: 1,542 M parameters."""
    return _gpt2(48, 1600, 25, **overrides)
