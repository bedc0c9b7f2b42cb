"""Configurations of the attention-based recurrent encoder-decoders: RNNsearch (Bahdanau et al. 2015) and the
global / local attention models of Luong et al. (2015)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seq2bert.errors import ConfigError
from seq2bert.models.seq2seq.config import RecurrentConfig
from seq2bert.nn.attention import LUONG_SCORES

LUONG_ATTENTIONS = ("global", "local-m", "local-p")
ATTENTION_TYPES = ("soft", "hard")


@dataclass
class BahdanauConfig(RecurrentConfig):
    """RNNsearch: a bidirectional GRU encoder (``hidden_size`` per direction), additive attention of width
    ``attention_size``, a GRU decoder of ``hidden_size`` units and a maxout deep output of ``maxout_size``.

    The paper's RNNsearch-50 is ``bahdanau2015()``: 1000 hidden units, 620-d embeddings, 1000-d alignment
    model, 500 maxout units, one encoder layer.
    """

    model_type: str = "bahdanau"
    attention_size: int = 512
    maxout_size: int = 256
    # "soft": c_i = Σ_j α_ij h_j (Bahdanau et al.); "hard": c_i = h_{s_i}, s_i ~ α_i (Xu et al. 2015, Sect. 4.1),
    # trained by REINFORCE (objectives/reinforce.py) with weight λ_r = reinforce_weight and an entropy term
    # λ_e = entropy_weight (the paper gives no value: off), taking the expected context for a row with
    # probability hard_expected_prob (the paper's 0.5). hard_reward: "sequence" is Eq. 12's (log p(y | s̃, a)
    # for every location of the sequence), "token" credits each location with its own token's log-likelihood.
    # The defaults are not the paper's sequence reward at λ_r = 1 (the paper gives no λ_r): on the tour's task
    # the model stayed at test BLEU 6–28 with that reward, its attention near uniform; alone
    # (hard_expected_prob=0) REINFORCE learned most alignments with the token's reward at λ_r = 0.1
    # (docs/results.md, "Hard attention beside soft"). hard_reward=sequence reinforce_weight=1 is the paper's.
    #
    # A checkpoint saved before hard_reward existed was trained with Eq. 12's reward (its config.json holds its
    # reinforce_weight; hard_reward is filled in when it is read: config.former_defaults).
    FORMER_DEFAULTS: ClassVar[dict] = {"hard_reward": "sequence"}
    attention_type: str = "soft"
    reinforce_weight: float = 0.1
    entropy_weight: float = 0.0
    hard_expected_prob: float = 0.5
    hard_reward: str = "token"

    def validate(self) -> None:
        super().validate()
        if self.attention_type not in ATTENTION_TYPES:
            raise ConfigError(
                f"attention_type: expected one of {', '.join(ATTENTION_TYPES)}, got {self.attention_type!r}"
            )
        if not 0.0 <= self.hard_expected_prob <= 1.0:
            raise ConfigError(f"hard_expected_prob: a probability in [0, 1], got {self.hard_expected_prob}")
        if self.hard_reward not in ("sequence", "token"):
            raise ConfigError(f"hard_reward: expected sequence or token, got {self.hard_reward!r}")
        if self.reinforce_weight < 0 or self.entropy_weight < 0:
            raise ConfigError("reinforce_weight and entropy_weight: must be >= 0")


def bahdanau2015(**overrides) -> BahdanauConfig:
    """The configuration of the paper (Appendix A.2.3 and Sect. 4.2): n = 1000, m = 620, n' = 1000, l = 500."""
    return BahdanauConfig(
        **{
            "embedding_dim": 620,
            "hidden_size": 1000,
            "attention_size": 1000,
            "maxout_size": 500,
            "num_layers": 1,
            "dropout": 0.0,
            **overrides,
        }
    )


@dataclass
class LuongConfig(RecurrentConfig):
    """A stacked-LSTM encoder-decoder with Luong attention.

    ``score``: dot / general / concat / location; ``attention``: global, local-m or local-p with half-width
    ``window`` (D); ``input_feeding`` feeds h̃_{t−1} to the next step (Sect. 3.3); ``max_source_length``
    bounds the location score (one logit per position); ``reverse_source`` as in Sutskever et al.
    The paper's best system is ``luong2015()``: 4 layers of 1000 cells, local-p with the general score, D = 10,
    input feeding, dropout 0.2, parameters drawn from U(−0.1, 0.1).
    """

    model_type: str = "luong"
    num_layers: int = 2
    score: str = "general"
    attention: str = "global"
    window: int = 10
    input_feeding: bool = True
    max_source_length: int = 128
    reverse_source: bool = False
    init_range: float = 0.1

    def validate(self) -> None:
        super().validate()
        if self.score not in LUONG_SCORES:
            raise ConfigError(f"score: expected one of {', '.join(LUONG_SCORES)}, got {self.score!r}")
        if self.attention not in LUONG_ATTENTIONS:
            raise ConfigError(
                f"attention: expected one of {', '.join(LUONG_ATTENTIONS)}, got {self.attention!r}"
            )
        if self.window < 0:
            raise ConfigError(f"window: must be >= 0, got {self.window}")
        if self.attention == "local-p" and self.window < 1:  # σ = D/2 = 0 would divide by zero in Eq. 10
            raise ConfigError(f"window: local-p needs a window of at least 1, got {self.window}")
        if self.max_source_length < 1:
            raise ConfigError(f"max_source_length: must be at least 1, got {self.max_source_length}")
        if self.init_range < 0:
            raise ConfigError(f"init_range: must be >= 0, got {self.init_range}")


def luong2015(**overrides) -> LuongConfig:
    """The paper's best single model (Sect. 4.1, Table 1): 4 × 1000 LSTM, local-p general, feed input."""
    return LuongConfig(
        **{
            "embedding_dim": 1000,
            "hidden_size": 1000,
            "num_layers": 4,
            "score": "general",
            "attention": "local-p",
            "window": 10,
            "input_feeding": True,
            "dropout": 0.2,
            "reverse_source": True,
            "init_range": 0.1,
            **overrides,
        }
    )
