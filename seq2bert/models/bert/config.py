"""Configuration of BERT (Devlin et al. 2018), with Hugging Face's field names so that config.json files
map one to one. The paper's symbols: L = num_hidden_layers, H = hidden_size, A = num_attention_heads, the
feed-forward size 4H = intermediate_size.

Named builders: the paper's BERT-base and BERT-large, and the compact models of Turc et al. (2019,
"Well-Read Students Learn Better"): tiny, mini, small, medium.

``is_decoder`` (transformers' field) makes the stack left-to-right: every position attends to itself and the
positions before it only — the "LTR & No NSP" model of the paper's ablation (Sect. 5.1, Table 5), trained as a
left-to-right language model (BertLMHeadModel, model.py). ``bos_token_id`` / ``eos_token_id`` (None unless
set) are what such a model's ``generate`` starts and stops with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seq2bert.errors import ConfigError
from seq2bert.nn.feed_forward import ACTIVATIONS
from seq2bert.objectives.classification import ClassifierFields


@dataclass
class BertConfig(ClassifierFields):
    """BERT's hyper-parameters (defaults: BERT-base, uncased vocabulary of 30,522 WordPieces); the task heads'
    (models/bert/tasks.py) id2label, problem_type and classifier_dropout (None: hidden_dropout_prob) come from
    ClassifierFields, transformers' fields."""

    model_type: str = "bert"
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    is_decoder: bool = False  # causal self-attention: position t sees positions ≤ t
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    # heads removed by `seq2bert prune` (transformers' field): layer → the original numbers of its pruned heads
    pruned_heads: dict[int, list[int]] = field(default_factory=dict)

    def validate(self) -> None:
        expected = type(self).__dataclass_fields__["model_type"].default  # a variant's config sets its own
        if self.model_type != expected:
            raise ConfigError(f"model_type: expected {expected!r}, got {self.model_type!r}")
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.attention_size % self.num_attention_heads:
            raise ConfigError(
                f"num_attention_heads: the attention's width {self.attention_size} is not divisible by"
                f" {self.num_attention_heads} heads"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}: must be in [0, 1), got {getattr(self, name)}")
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(
                f"hidden_act: expected one of {', '.join(ACTIVATIONS)}, got {self.hidden_act!r}"
            )
        if self.initializer_range < 0 or self.layer_norm_eps <= 0:
            raise ConfigError("initializer_range must be >= 0 and layer_norm_eps > 0")
        self.validate_classifier()
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ConfigError(
                f"pad_token_id: must be a token id below vocab_size {self.vocab_size}, got {self.pad_token_id}"
            )
        for name in ("bos_token_id", "eos_token_id"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < self.vocab_size:
                raise ConfigError(
                    f"{name}: must be null or a token id below vocab_size {self.vocab_size}: {value}"
                )
        for layer, heads in self.pruned_heads.items():
            A = self.num_attention_heads
            if not 0 <= int(layer) < self.num_hidden_layers or not all(0 <= int(h) < A for h in heads):
                raise ConfigError(
                    f"pruned_heads: layer {layer} heads {heads}: expected layers 0 … {self.num_hidden_layers - 1}"
                    f" and heads 0 … {A - 1}"
                )
            if len(set(heads)) >= A:
                raise ConfigError(f"pruned_heads: layer {layer} would keep none of its {A} heads")

    def heads_of(self, layer: int) -> list[int]:
        """The original numbers of the heads layer ``layer`` keeps."""
        pruned = {int(h) for h in self.pruned_heads.get(layer, self.pruned_heads.get(str(layer), ()))}
        return [h for h in range(self.num_attention_heads) if h not in pruned]

    def __post_init__(self) -> None:
        try:  # JSON keys are strings
            self.pruned_heads = {int(k): sorted({int(h) for h in v}) for k, v in self.pruned_heads.items()}
        except (TypeError, ValueError, AttributeError):
            raise ConfigError(
                f"pruned_heads: expected {{layer: [heads]}}, got {self.pruned_heads!r}"
            ) from None
        self.validate()

    @property
    def attention_size(self) -> int:
        """The width the heads split: H (MobileBERT's is its bottleneck's)."""
        return self.hidden_size


def _sized(layers: int, hidden: int, **overrides) -> BertConfig:
    """H/64 heads of 64 dimensions and a 4H feed-forward, as every model of the BERT release."""
    return BertConfig(
        **{
            "num_hidden_layers": layers,
            "hidden_size": hidden,
            "num_attention_heads": hidden // 64,
            "intermediate_size": 4 * hidden,
            **overrides,
        }
    )


def bert_tiny(**overrides) -> BertConfig:
    """L = 2, H = 128 (Turc et al. 2019)."""
    return _sized(2, 128, **overrides)


def bert_mini(**overrides) -> BertConfig:
    """L = 4, H = 256."""
    return _sized(4, 256, **overrides)


def bert_small(**overrides) -> BertConfig:
    """L = 4, H = 512."""
    return _sized(4, 512, **overrides)


def bert_medium(**overrides) -> BertConfig:
    """L = 8, H = 512."""
    return _sized(8, 512, **overrides)


def bert_base(**overrides) -> BertConfig:
    """L = 12, H = 768, A = 12: 110 M parameters (Devlin et al., Sect. 3)."""
    return _sized(12, 768, **overrides)


def bert_large(**overrides) -> BertConfig:
    """L = 24, H = 1024, A = 16: 340 M parameters."""
    return _sized(24, 1024, **overrides)
