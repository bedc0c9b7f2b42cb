"""Configuration of ELMo's bidirectional language model (Peters et al. 2018), with the names of its
options.json where they read well (``projection_dim``, ``cell_clip``, ``proj_clip``, ``n_highway`` →
``num_highway``, ``filters``, ``max_characters_per_token``).

    token encoder   character embeddings of ``char_embedding_dim``; ``filters`` (width, number) pairs,
                    max-pooled; ``num_highway`` highway layers; a projection to ``projection_dim`` P
    biLM            ``num_layers`` L layers of LSTMP per direction: ``cell_size`` C cells projected to P,
                    ``cell_clip`` / ``proj_clip`` (None: no clipping), a residual connection from each
                    layer's input to its output above the first (``residual``)
    softmax         ``vocab_size`` words (train-lm sets it), shared by the two directions; trained as a
                    sampled softmax of ``softmax_samples`` words (0: the full one)
    dropout         on each LSTM layer's input and on the softmax's input (bilm-tf's 0.1)

The published model is 2 × 4096 cells projected to 512, 2,048 filters ((1, 32) … (7, 1024)), 2 highway
layers, clipping at 3, a 793,471-word softmax (the One Billion Word Benchmark). The defaults are a small biLM
that trains on CPU cores: 512 filters of widths 1–5, 1 highway layer, 2 × 512 cells projected to 128, a
20,000-word softmax sampled 1,024 words at a time, no clipping (torch's fused LSTM has none; with clipping
the cells run step by step): 5.6 M parameters (3.0 M without the softmax), about 1,900 words of text a
second on one thread (3,800 predictions: each word is predicted by both LMs). The batch's character CNN
and the LSTMs' small matrix products dominate; 1,024 cells ran about 1.5 times slower.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from seq2bert.data.characters import MAX_CHARACTERS, NUM_CHARACTERS
from seq2bert.errors import ConfigError


@dataclass
class ELMoConfig:
    model_type: str = "elmo"
    vocab_size: int = 0  # the softmax's words (0: none — a biLM read for its layers only)
    num_characters: int = NUM_CHARACTERS  # 0 (padding tokens), 256 bytes, 5 special characters
    max_characters_per_token: int = MAX_CHARACTERS
    char_embedding_dim: int = 16
    filters: list[tuple[int, int]] = field(
        default_factory=lambda: [(1, 32), (2, 32), (3, 64), (4, 128), (5, 256)]
    )
    num_highway: int = 1
    activation: Literal["relu", "tanh"] = "relu"
    projection_dim: int = 128  # P: the token layer and every LSTM layer's output (a layer of ELMo is 2P wide)
    cell_size: int = 512  # C
    num_layers: int = 2  # L, per direction
    cell_clip: float | None = None
    proj_clip: float | None = None
    residual: bool = True  # h_j = LSTM_j(h_{j−1}) + h_{j−1} for j ≥ 2 (options.json: use_skip_connections)
    dropout: float = 0.1
    softmax_samples: int = 1024  # training's sampled softmax (bilm-tf: 8,192); 0: the full softmax
    pad_token_id: int = 0  # the word vocabulary's ids (train-lm sets them from its tokenizer)
    unk_token_id: int = 1
    bos_token_id: int = 5  # <S>
    eos_token_id: int = 6  # </S>

    # how `seq2bert train-lm` trains it (recipes/lm.py): a vocabulary of whole words, 20,000 in the softmax;
    # a forward and a backward language model
    lm_vocabulary: ClassVar[tuple[str, int]] = ("word", 20_000)
    bidirectional: ClassVar[bool] = True

    # the Hugging Face names of a layer's count and width, for code that reads any encoder's layers
    # (models/bilstm/features.py): the L LSTM layers above the token layer, each 2P wide ([h→; h←])
    @property
    def num_hidden_layers(self) -> int:
        return self.num_layers

    @property
    def hidden_size(self) -> int:
        return 2 * self.projection_dim

    def describe(self) -> str:
        return f"ELMo biLM ({self.num_layers}×{self.cell_size}→{self.projection_dim})"

    def validate(self) -> None:
        if self.model_type != "elmo":
            raise ConfigError(f"model_type: expected 'elmo', got {self.model_type!r}")
        for name in ("char_embedding_dim", "projection_dim", "cell_size", "num_layers", "num_characters"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if not self.filters or any(w < 1 or n < 1 for w, n in self.filters):
            raise ConfigError(
                f"filters: expected (width, number) pairs of positive integers, got {self.filters}"
            )
        widest = max(w for w, _ in self.filters)
        if self.max_characters_per_token < max(widest, 3):
            raise ConfigError(
                f"max_characters_per_token: must be at least the widest filter ({widest}) and 3, "
                f"got {self.max_characters_per_token}"
            )
        if self.projection_dim >= self.cell_size:
            raise ConfigError(
                f"projection_dim ({self.projection_dim}) must be below cell_size ({self.cell_size}): "
                "the LSTM projects its cells down"
            )
        if min(self.num_highway, self.vocab_size, self.softmax_samples) < 0 or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(
                "num_highway, vocab_size and softmax_samples must be >= 0 and dropout in [0, 1)"
            )
        for name in ("cell_clip", "proj_clip"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name}: must be positive (or null: no clipping), got {value}")

    def __post_init__(self) -> None:
        self.filters = [tuple(f) for f in self.filters]
        self.validate()
