"""Configuration of the training engine (one loop for every model of the library)."""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, fields
from typing import Literal

from seq2bert.errors import ConfigError
from seq2bert.nn.lora import ROLES

SEED_MAX = 2**32 - 1  # NumPy's global generator takes seeds 0 … 2**32 − 1 (np.random.seed)


def check_seed(name: str, seed: int) -> None:
    """A seed every generator of a run takes (Python's, NumPy's, torch's): a one-line ConfigError otherwise,
    when the configuration is read — never NumPy's ValueError once the run has begun."""
    if not 0 <= seed <= SEED_MAX:
        raise ConfigError(f"{name}: expected an integer from 0 to {SEED_MAX} (2**32 - 1), got {seed}")


@dataclass
class LoRAConfig:
    """Low-rank adaptation (Hu et al. 2021; seq2bert/nn/lora.py) of a fine-tuning run: ``r`` > 0 freezes the
    checkpoint's weights and trains B A of rank r beside each Linear layer of the ``targets`` roles (query,
    key, value, output: W_q W_k W_v W_o; ffn_in, ffn_out: the feed-forward W_1 W_2), and the task's head.

    ``alpha``: ΔW x is scaled by α/r. The paper sets α to the first r it tries and keeps it as r varies
    (Sect. 4.1: "tuning α is roughly the same as tuning the learning rate"); the default 8 is that constant
    for r = 8 (α/r = 1), and stays 8 when r changes. ``dropout``: on the input of the low-rank path. The
    paper adapts W_q and W_v (Sect. 7.1, ``targets=[query, value]``); the default adapts every attention and
    feed-forward Linear layer."""

    r: int = 0  # 0: no LoRA, every weight trains
    alpha: float = 8.0
    dropout: float = 0.0
    targets: list[str] = field(default_factory=lambda: list(ROLES))

    def validate(self) -> None:
        if self.r < 0:
            raise ConfigError(f"r: the rank must be >= 0 (0: no LoRA), got {self.r}")
        if not self.alpha > 0:
            raise ConfigError(f"alpha: must be > 0, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout: must be in [0, 1), got {self.dropout}")
        if not self.targets:
            raise ConfigError(f"targets: expected some of {', '.join(ROLES)}, got none")
        for target in self.targets:
            if target not in ROLES:
                close = difflib.get_close_matches(target, ROLES, n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                raise ConfigError(
                    f"targets: unknown target {target!r}; {hint}expected some of {', '.join(ROLES)}"
                )

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class TrainConfig:
    """Optimiser, schedule, loop length, evaluation, checkpointing and precision.

    Schedules (training/optim.py): ``constant``; ``linear`` warm-up then linear decay to 0 (BERT);
    ``noam``, Vaswani et al. Eq. 3, lrate = lr · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5) with
    ``noam_d_model`` (lr = 1 is the paper); ``inverse_sqrt``: linear warm-up to lr, then lr · sqrt(warmup/step);
    ``halving``: constant, then halved every ``halving_every`` epochs from epoch ``halving_start`` on
    (Sutskever et al. 2014, Sect. 3.4: after 5 epochs, halve every half epoch); ``slanted_triangular``
    (Howard & Ruder 2018, Eq. 3): a linear rise over the first ``stlr_cut_frac`` of the steps from
    lr / ``stlr_ratio`` to lr, then a long linear decay back down.
    """

    # adagrad (Duchi et al. 2011): GloVe's, its accumulator starting at adagrad_initial (the GloVe code's 1)
    optimizer: Literal["adamw", "sgd", "adagrad"] = "adamw"
    adagrad_initial: float = 0.0
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01
    schedule: Literal["constant", "linear", "noam", "inverse_sqrt", "halving", "slanted_triangular"] = (
        "constant"
    )
    warmup_steps: int = 0
    noam_d_model: int = 512
    halving_start: float = 5.0
    halving_every: float = 0.5
    stlr_cut_frac: float = 0.1  # slanted triangular: the share of the steps spent rising
    stlr_ratio: float = 32.0  # … and how much smaller the lowest rate is than the highest
    # discriminative fine-tuning: each layer group below the top learns layer_lr_decay times slower than the one
    # above it (optim.layer_groups; ULMFiT: 1/2.6, Sect. 3.2; ELECTRA's layer-wise decay: 0.8); 1: one rate
    layer_lr_decay: float = 1.0
    # ULMFiT's gradual unfreezing (Sect. 3.3): epoch e trains the top e + 1 layer groups, the rest frozen
    gradual_unfreezing: bool = False
    # … one more group every this many optimizer steps in place of every epoch (0: an epoch, the paper's):
    # a run of a few epochs (or a time budget) unfreezes them all
    unfreeze_every: int = 0
    max_epochs: int = 10
    max_steps: int = 0  # 0: max_epochs decides
    max_minutes: float = 0.0  # 0: no time limit; otherwise stop (and evaluate, save) after this much training
    clip_norm: float = 1.0  # 0: no clipping
    accumulate: int = 1
    bf16: bool | Literal["auto"] = "auto"  # auto: bf16 autocast where the device computes bf16 natively
    label_smoothing: float = 0.0
    eval_every: int = 0  # steps; 0: at the end of each epoch
    save_every: int = 0  # steps; 0: whenever evaluating
    keep_last: int = 2
    # > 1: the final model is the average of the last N checkpoints, kept when it beats the best on ``metric``
    # (Vaswani et al. 2017, Sect. 6.1: "averaging the last 5 checkpoints"); keep_last is raised to N
    average_last: int = 0
    metric: str = "loss"  # evaluation metric for the best checkpoint and early stopping
    higher_is_better: bool | None = None  # None: False for loss / perplexity, True otherwise
    patience: int = 0  # evaluations without improvement before stopping; 0: never stop early
    log_every: int = 20
    # a step whose loss or gradient is not finite: stop the run (its last checkpoint holds the last good
    # weights) or skip the step (no update; counted in the log and results as skipped_steps)
    nonfinite: Literal["stop", "skip"] = "stop"
    seed: int = 0
    device: str = "auto"  # auto: cuda when available, else cpu
    lora: LoRAConfig = field(default_factory=LoRAConfig)  # r > 0: LoRA (seq2bert finetune)

    def validate(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{f.name}: expected a finite number, got {value}")
        if self.nonfinite not in ("stop", "skip"):
            raise ConfigError(f"nonfinite: expected stop or skip, got {self.nonfinite!r}")
        if not self.lr > 0:
            raise ConfigError(f"lr: must be > 0, got {self.lr}")
        if not all(0.0 <= b < 1.0 for b in self.betas):
            raise ConfigError(f"betas: each must be in [0, 1), got {list(self.betas)}")
        if self.optimizer not in ("adamw", "sgd", "adagrad"):
            raise ConfigError(f"optimizer: expected adamw, sgd or adagrad, got {self.optimizer!r}")
        if self.adagrad_initial < 0:
            raise ConfigError(f"adagrad_initial: must be >= 0, got {self.adagrad_initial}")
        if self.eps <= 0:
            raise ConfigError(f"eps: must be > 0, got {self.eps}")
        if self.weight_decay < 0:
            raise ConfigError(f"weight_decay: must be >= 0, got {self.weight_decay}")
        for name in (
            "warmup_steps",
            "max_steps",
            "max_epochs",
            "eval_every",
            "save_every",
            "patience",
            "average_last",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if self.max_epochs == 0 and self.max_steps == 0:
            raise ConfigError("max_epochs and max_steps are both 0: set one of them")
        if self.schedule in ("noam", "inverse_sqrt") and self.warmup_steps == 0:
            raise ConfigError(f"warmup_steps: the {self.schedule} schedule needs warmup_steps > 0")
        if self.max_minutes < 0:
            raise ConfigError(f"max_minutes: must be >= 0, got {self.max_minutes}")
        if self.clip_norm < 0:
            raise ConfigError(f"clip_norm: must be >= 0 (0 turns clipping off), got {self.clip_norm}")
        if self.accumulate < 1:
            raise ConfigError(f"accumulate: must be >= 1, got {self.accumulate}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"label_smoothing: must be in [0, 1), got {self.label_smoothing}")
        if self.keep_last < 1:
            raise ConfigError(f"keep_last: must be >= 1, got {self.keep_last}")
        if self.log_every < 1:
            raise ConfigError(f"log_every: must be >= 1, got {self.log_every}")
        if self.noam_d_model < 1:
            raise ConfigError(f"noam_d_model: must be >= 1, got {self.noam_d_model}")
        if not 0.0 < self.stlr_cut_frac < 1.0 or self.stlr_ratio < 1:
            raise ConfigError("stlr_cut_frac must be in (0, 1) and stlr_ratio >= 1")
        if not 0.0 < self.layer_lr_decay <= 1.0:
            raise ConfigError(f"layer_lr_decay: must be in (0, 1] (1: one rate), got {self.layer_lr_decay}")
        if self.unfreeze_every < 0:
            raise ConfigError(f"unfreeze_every: must be >= 0 (0: every epoch), got {self.unfreeze_every}")
        if self.halving_start < 0 or self.halving_every <= 0:
            raise ConfigError("halving_start must be >= 0 and halving_every > 0 (in epochs)")
        check_seed("seed", self.seed)
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device):
            raise ConfigError(f"device: expected auto, cpu or cuda[:N], got {self.device!r}")

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)
        self.validate()

    @property
    def metric_higher_is_better(self) -> bool:
        if self.higher_is_better is not None:
            return self.higher_is_better
        return self.metric not in ("loss", "perplexity", "ppl")


def sutskever2014_training(**overrides) -> TrainConfig:
    """The training of Sutskever et al. (2014), Sect. 3.4: SGD without momentum at 0.7, halved every half
    epoch after 5 epochs, 7.5 epochs, gradient norm clipped at 5 (batches of 128 sentences: data.batch_size)."""
    return TrainConfig(
        **{
            "optimizer": "sgd",
            "lr": 0.7,
            "weight_decay": 0.0,
            "schedule": "halving",
            "halving_start": 5.0,
            "halving_every": 0.5,
            "clip_norm": 5.0,
            "max_epochs": 8,
            **overrides,
        }
    )
