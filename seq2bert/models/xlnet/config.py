"""Configuration of XLNet (Yang et al. 2019), with Hugging Face's field names (XLNetConfig, model_type "xlnet")
so that config.json files map one to one. The paper's symbols: d_model, n_layer blocks, n_head heads of
d_head = d_model / n_head, a feed-forward of d_inner units; ``mem_len`` the states of the previous segment
kept (Transformer-XL's memory), ``clamp_len`` the largest relative distance encoded (−1: none),
``attn_type`` "bi" (the permutation LM's, every token sees both sides) or "uni" (left to right).

The ``summary_*`` fields describe the sequence classifier's and the multiple-choice head's summary of the
sequence (transformers' SequenceSummary: XLNet reads its last token, <cls>, through a tanh projection).
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2bert.errors import ConfigError
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.objectives.classification import ClassifierFields

ATTN_TYPES = ("bi", "uni")


@dataclass
class XLNetConfig(ClassifierFields):
    """XLNet's hyper-parameters (defaults: XLNet-Large, Sect. 3.1: 24 layers, 1024 units, 16 heads)."""

    model_type: str = "xlnet"
    vocab_size: int = 32000
    d_model: int = 1024
    n_layer: int = 24
    n_head: int = 16
    d_inner: int = 4096
    ff_activation: str = "gelu"
    untie_r: bool = True  # transformers' PyTorch XLNet gives every layer its own biases either way
    attn_type: str = "bi"
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    dropout: float = 0.1
    mem_len: int | None = 512
    reuse_len: int | None = None
    use_mems_eval: bool = True
    use_mems_train: bool = False
    bi_data: bool = False
    clamp_len: int = -1
    same_length: bool = False
    summary_type: str = "last"
    summary_use_proj: bool = True
    summary_activation: str | None = "tanh"
    summary_last_dropout: float = 0.1
    start_n_top: int = 5
    end_n_top: int = 5
    pad_token_id: int | None = 5
    bos_token_id: int | None = 1
    eos_token_id: int | None = 2

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    # transformers' attribute_map: the names the other families' configs use, read-only
    @property
    def hidden_size(self) -> int:
        return self.d_model

    @property
    def num_hidden_layers(self) -> int:
        return self.n_layer

    @property
    def num_attention_heads(self) -> int:
        return self.n_head

    def validate(self) -> None:
        if self.model_type != "xlnet":
            raise ConfigError(f"model_type: expected 'xlnet', got {self.model_type!r}")
        for name in ("vocab_size", "d_model", "n_layer", "n_head", "d_inner"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.n_head:
            raise ConfigError(f"n_head: d_model {self.d_model} is not divisible by {self.n_head} heads")
        if self.attn_type not in ATTN_TYPES:
            raise ConfigError(f"attn_type: expected one of {', '.join(ATTN_TYPES)}, got {self.attn_type!r}")
        if self.ff_activation not in ACTIVATIONS:
            raise ConfigError(
                f"ff_activation: expected one of {', '.join(ACTIVATIONS)}, got {self.ff_activation!r}"
            )
        for name in ("dropout", "summary_last_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {getattr(self, name)}")
        if self.initializer_range < 0 or self.layer_norm_eps <= 0:
            raise ConfigError("initializer_range must be >= 0 and layer_norm_eps > 0")
        if self.mem_len is not None and self.mem_len < 0:
            raise ConfigError(f"mem_len: must be >= 0 or None, got {self.mem_len}")
        if self.bi_data or self.same_length:
            raise ConfigError("bi_data, same_length: not supported (transformers' defaults, False, are)")
        self.validate_classifier()

    def __post_init__(self) -> None:
        self.validate()


def xlnet_base(**overrides) -> XLNetConfig:
    """XLNet-Base (Sect. 3.1: BERT-Base's size): 12 layers, 768 units, 12 heads."""
    return XLNetConfig(**{"d_model": 768, "n_layer": 12, "n_head": 12, "d_inner": 3072, **overrides})


def xlnet_mini(**overrides) -> XLNetConfig:
    """BERT-mini's size (4 layers, 256 units, 4 heads): what `seq2bert pretrain` trains by default."""
    return XLNetConfig(
        **{"d_model": 256, "n_layer": 4, "n_head": 4, "d_inner": 1024, "mem_len": 128, **overrides}
    )


def xlnet_tiny(**overrides) -> XLNetConfig:
    """For tests: 2 layers of 64 units, 4 heads."""
    return XLNetConfig(
        **{"vocab_size": 99, "d_model": 64, "n_layer": 2, "n_head": 4, "d_inner": 96, **overrides}
    )
