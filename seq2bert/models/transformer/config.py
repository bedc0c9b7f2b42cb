"""Configuration of the Transformer encoder-decoder (Vaswani et al. 2017), with Hugging Face's field names
(those of MarianConfig / BartConfig) so that checkpoints map one to one; the paper's symbols are:

    N      encoder_layers, decoder_layers         h     encoder_attention_heads, decoder_attention_heads
    d_model d_model                               d_k, d_v  d_k, d_v (0: d_model / h)
    d_ff   encoder_ffn_dim, decoder_ffn_dim       P_drop  dropout (residuals and embedding sums)
    ε_ls   train.label_smoothing (a training setting, not the model's)

The paper's models are the builders ``transformer_base()`` and ``transformer_big()`` (Table 3); the defaults
(``transformer_small()``) are a model that trains on 2 CPU cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from seq2bert.errors import ConfigError
from seq2bert.nn.feed_forward import ACTIVATIONS


@dataclass
class TransformerConfig:
    """The Transformer's hyper-parameters; vocabulary sizes and special ids come from the tokenizer.

    ``normalize_before``: LayerNorm before each sub-layer (pre-norm) instead of after it (the paper).
    ``position_embedding``: the paper's sinusoids (``interleave_sinusoids``: sin/cos as in Sect. 3.5, or all sines
    then all cosines as Marian and fairseq) or learned positions (Table 3, row E), both added to the
    embeddings; or ``relative``: no absolute positions, each self-attention has relative position
    representations of pairs at most ``max_relative_position`` (k) apart (Shaw, Uszkoreit & Vaswani 2018;
    their k = 16; distances beyond k share the vector of ±k).
    ``share_embeddings``: one embedding matrix for source and target (needs one vocabulary);
    ``tie_word_embeddings``: the target embedding is the pre-softmax projection (both Sect. 3.4).
    ``final_logits_bias``: a bias on the output logits (Marian checkpoints have one).
    ``forced_eos_token_id``: the token ``generate`` forces at the maximum length (transformers' field; Marian
    configs set it to [EOS]); None, our models' default, forces nothing."""

    model_type: str = "transformer"
    src_vocab_size: int = 0
    tgt_vocab_size: int = 0
    d_model: int = 256
    encoder_layers: int = 3
    decoder_layers: int = 3
    encoder_attention_heads: int = 4
    decoder_attention_heads: int = 4
    encoder_ffn_dim: int = 1024
    decoder_ffn_dim: int = 1024
    d_k: int = 0
    d_v: int = 0
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    activation_function: str = "relu"
    normalize_before: bool = False
    layer_norm_eps: float = 1e-5
    position_embedding: Literal["sinusoidal", "learned", "relative"] = "sinusoidal"
    max_relative_position: int = 16
    interleave_sinusoids: bool = True
    max_position_embeddings: int = 1024
    scale_embedding: bool = True
    share_embeddings: bool = True
    tie_word_embeddings: bool = True
    final_logits_bias: bool = False
    pad_token_id: int = 0
    bos_token_id: int = 5
    eos_token_id: int = 6
    forced_eos_token_id: int | None = None
    bad_words_ids: list[list[int]] = field(default_factory=list)  # sequences generate never produces

    def validate(self) -> None:
        if self.model_type != "transformer":
            raise ConfigError(f"model_type: expected 'transformer', got {self.model_type!r}")
        for name in (
            "d_model",
            "encoder_layers",
            "decoder_layers",
            "encoder_attention_heads",
            "decoder_attention_heads",
            "encoder_ffn_dim",
            "decoder_ffn_dim",
            "max_position_embeddings",
            "max_relative_position",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("src_vocab_size", "tgt_vocab_size", "d_k", "d_v"):
            if getattr(self, name) < 0:
                raise ConfigError(
                    f"{name}: must be >= 0 (0 = {'from the tokenizer' if 'vocab' in name else 'd_model / h'}), got {getattr(self, name)}"
                )
        for name in ("encoder_attention_heads", "decoder_attention_heads"):
            h = getattr(self, name)
            if (not self.d_k or not self.d_v) and self.d_model % h:
                raise ConfigError(
                    f"{name}: d_model {self.d_model} is not divisible by {h} heads (or set d_k and d_v)"
                )
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {getattr(self, name)}")
        if self.activation_function not in ACTIVATIONS:
            raise ConfigError(
                f"activation_function: expected one of {', '.join(ACTIVATIONS)}, got {self.activation_function!r}"
            )
        if self.layer_norm_eps <= 0:
            raise ConfigError(f"layer_norm_eps: must be > 0, got {self.layer_norm_eps}")
        if self.forced_eos_token_id is not None and self.forced_eos_token_id < 0:
            raise ConfigError(
                f"forced_eos_token_id: must be a token id (>= 0) or null, got {self.forced_eos_token_id}"
            )
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError(
                f"share_embeddings: needs one vocabulary, got src_vocab_size {self.src_vocab_size} "
                f"and tgt_vocab_size {self.tgt_vocab_size}"
            )

    def check_vocab(self) -> None:
        if self.src_vocab_size < 1 or self.tgt_vocab_size < 1:
            raise ValueError(
                "TransformerConfig: src_vocab_size and tgt_vocab_size must be set (from the tokenizer)"
            )

    def __post_init__(self) -> None:
        self.validate()


def transformer_base(**overrides) -> TransformerConfig:
    """Table 3, "base": N = 6, d_model = 512, d_ff = 2048, h = 8, d_k = d_v = 64, P_drop = 0.1 (ε_ls = 0.1
    is train.label_smoothing). 65 M parameters with the paper's shared 37,000-token vocabulary."""
    base = dict(
        d_model=512,
        encoder_layers=6,
        decoder_layers=6,
        encoder_ffn_dim=2048,
        decoder_ffn_dim=2048,
        encoder_attention_heads=8,
        decoder_attention_heads=8,
        dropout=0.1,
    )
    return TransformerConfig(**{**base, **overrides})


def transformer_big(**overrides) -> TransformerConfig:
    """Table 3, "big": N = 6, d_model = 1024, d_ff = 4096, h = 16, d_k = d_v = 64, P_drop = 0.3 (213 M)."""
    big = dict(
        d_model=1024,
        encoder_ffn_dim=4096,
        decoder_ffn_dim=4096,
        encoder_attention_heads=16,
        decoder_attention_heads=16,
        dropout=0.3,
    )
    return transformer_base(**{**big, **overrides})


def transformer_small(**overrides) -> TransformerConfig:
    """The defaults: a Transformer for 2 CPU cores and Multi30k-sized data, N = 3, d_model = 256, d_ff = 1024,
    h = 4 (d_k = d_v = 64, as in the paper)."""
    return TransformerConfig(**overrides)
