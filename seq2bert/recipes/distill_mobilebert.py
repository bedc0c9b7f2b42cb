"""MobileBERT's knowledge transfer (Sun et al. 2020, Sect. 3.5–3.6) as ``method=mobilebert`` of `seq2bert distill`.

The student is MobileBERT-shaped (models/mobilebert/): inside each block a bottleneck of width B
(``mobilebert.bottleneck``), ``mobilebert.feedforward_networks`` stacked feed-forward networks, NoNorm, and
word embeddings of width E widened by the trigram projection; between its blocks — its feature maps — the
teacher's width H, so that each block's output can learn the teacher's layer's output as it is. It has the
teacher's depth (layer ℓ learns teacher layer ℓ; with ``student.num_hidden_layers`` fewer, layer_map's g(ℓ)).
MobileBERT's teacher is an inverted-bottleneck BERT made for the purpose; here it is the fine-tuned teacher
of the task, whose width the student's feature maps take (all-MiniLM-L6-v2: H = 384, 12 heads).

Progressive knowledge transfer (Sect. 3.6, Fig. 4 (c)): L stages; stage ℓ trains block ℓ alone, the blocks
below it frozen ("when training the ℓ-th layer, we freeze all the trainable parameters in the layers below"),
on the feature map and attention transfer of that layer,

    L_ℓ = L_FMT^ℓ + L_AT^ℓ            (objectives/distillation.py; stage 1 also trains the embeddings, with
                                       L_FMT of their output against the teacher's: a marked departure, the
                                       paper's student and teacher share their embeddings)

for ``mobilebert.layer_epochs`` epochs (or ``mobilebert.layer_steps`` steps) at ``mobilebert.layer_lr``, into
OUT/transfer/layer-ℓ. Then pre-training distillation (Sect. 3.5) over every parameter, the task standing in
for MLM: L_PD = α L_task + (1 − α) L_KD, α = 1/2 (``loss.hard`` and ``loss.soft`` change it), for
train.max_epochs, into OUT. The pooler and the classifier start as the teacher's (their shapes are equal);
so do the position and segment embeddings, which sit at width H.

Departures, marked: the teacher's heads (12) are pooled into the student's (4 by default) by averaging
groups of their distributions (MobileBERT's teacher has the student's head count); L_FMT is the plain mean
square error (the paper also tried splitting it into normalised maps and their statistics).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from torch import nn

from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.mobilebert.config import MobileBertConfig
from seq2bert.training.optim import layer_groups

STAGE = "transfer"  # the method's first stage, run as one stage per layer


@dataclass
class MobileBertTransferConfig:
    bottleneck: int = 128  # B, the width inside a block (intra_bottleneck_size; MobileBERT's 128)
    embedding_size: int = 128  # E (MobileBERT's 128, widened to H by the trigram projection)
    feedforward_networks: int = 4  # F stacked feed-forward networks per block (Sect. 3.3)
    layer_epochs: int = 1  # each layer's stage
    layer_steps: int = 0  # > 0: each layer's stage in steps rather than epochs
    layer_lr: float = 5e-4  # a student from random weights: higher than fine-tuning's

    def __post_init__(self) -> None:
        for name in ("bottleneck", "embedding_size", "feedforward_networks", "layer_epochs"):
            if getattr(self, name) < 1:
                raise ConfigError(f"mobilebert.{name}: must be >= 1, got {getattr(self, name)}")
        if self.layer_steps < 0 or not self.layer_lr > 0:
            raise ConfigError("mobilebert: layer_steps must be >= 0 and layer_lr > 0")


def student_config(
    teacher: BertConfig, m: MobileBertTransferConfig, layers: int, heads: int, intermediate: int, hidden: int
) -> MobileBertConfig:
    """The MobileBERT student of a BERT teacher: the teacher's vocabulary, positions, segments and labels;
    its feature maps at the teacher's width; ``layers``, ``heads``, ``intermediate`` (0: the defaults said
    in the module's docstring: the teacher's depth, the most heads up to MobileBERT's 4 that group the
    teacher's and divide B, 4 B)."""
    if type(teacher) is not BertConfig:
        raise ConfigError(
            f"method=mobilebert: a BERT teacher (the student takes its vocabulary and positions), got "
            f"{teacher.model_type}"
        )
    H, B = teacher.hidden_size, m.bottleneck
    if hidden and hidden != H:
        raise ConfigError(
            f"student.hidden_size: {hidden}, but MobileBERT's feature maps have the teacher's width {H} "
            "(leave it 0; mobilebert.bottleneck sets the width inside a block)"
        )
    A_t = teacher.num_attention_heads
    heads = heads or max(a for a in range(1, 5) if A_t % a == 0 and B % a == 0)
    layers = layers or teacher.num_hidden_layers
    if layers > teacher.num_hidden_layers:
        raise ConfigError(
            f"student.num_hidden_layers: {layers}, more than the teacher's {teacher.num_hidden_layers}"
        )
    shared = ("vocab_size", "max_position_embeddings", "type_vocab_size", "initializer_range", "pad_token_id",
              "id2label", "problem_type")  # fmt: skip
    kept = {f.name: getattr(teacher, f.name) for f in dataclasses.fields(teacher) if f.name in shared}
    try:
        return MobileBertConfig(
            **kept,
            hidden_size=H,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=intermediate or 4 * B,
            intra_bottleneck_size=B,
            embedding_size=m.embedding_size,
            num_feedforward_networks=m.feedforward_networks,
        )
    except (ValueError, ConfigError) as e:
        raise ConfigError(f"student (method=mobilebert): {e}") from None


def copy_outside_blocks(student: nn.Module, teacher: nn.Module) -> list[str]:
    """The teacher's tensors outside the blocks whose names (under each model's encoder prefix) and shapes
    the student shares — position and segment embeddings, pooler, classifier (not a LayerNorm's γ and β into
    a NoNorm, which does not normalise); returns their names."""

    def plain(key: str, model: nn.Module) -> str:
        prefix = f"{model.base_model_prefix}."
        return key[len(prefix) :] if key.startswith(prefix) else key

    source = {plain(k, teacher): v for k, v in teacher.state_dict().items() if ".layers." not in k}
    if getattr(student.config, "normalization_type", "") == "no_norm":  # γ, β of a LayerNorm mean else there
        source = {k: v for k, v in source.items() if not k.startswith("embeddings.norm.")}
    copied = {
        k: source[plain(k, student)]
        for k, v in student.state_dict().items()
        if plain(k, student) in source and source[plain(k, student)].shape == v.shape
    }
    student.load_state_dict(copied, strict=False)
    return sorted(copied)


def train_only(student: nn.Module, layer: int | None) -> None:
    """Stage ``layer`` of the progressive transfer: block ``layer`` (1-based) trainable, and the embeddings
    at layer 1; every other parameter frozen. None: every parameter trainable (pre-training distillation)."""
    groups = layer_groups(student, trainable_only=False)  # embeddings, block 1 … block L, the rest
    student.requires_grad_(layer is None)
    if layer is not None:
        for group in groups[: layer + 1] if layer == 1 else [groups[layer]]:
            for p in group:
                p.requires_grad_(True)
