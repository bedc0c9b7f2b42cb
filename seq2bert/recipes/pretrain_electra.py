"""ELECTRA's objective in `seq2bert pretrain` (Clark et al. 2020, Sect. 2, Figure 2): replaced token detection.

The instances are the masked LM's (recipes/pretrain.py: single segments by default — ELECTRA has no sentence
task — or BERT's pairs, their labels unused). The module trained is the family's ``pretrainer``
(models/electra/pretrainer.py): the generator, ``electra.generator_size`` × the discriminator's width, learns
the masked tokens; its samples (no gradient) replace them; the discriminator tells, at every real position,
whether the token is the original:

    loss = L_MLM + λ L_Disc        λ = electra.disc_weight (50)

The replacements of a training step are drawn from torch's global generator — seeded by the run, saved and
restored with every checkpoint — so a resumed run samples what the uninterrupted one did. The held-out
evaluation draws its own from a generator seeded anew each time (the same weights give the same numbers):
the generator's MLM loss and accuracy, the discriminator's loss and accuracy (over every real position, and
apart on the replaced and the original tokens), its ROC AUC (``disc_auc``, in %: how well its scores rank
the replaced tokens above the originals, whatever the threshold — 50 is chance; a discriminator that says
"original" everywhere may still rank them), and ``loss``, the objective. The best checkpoint is the one
with the lowest held-out discriminator loss (``disc_loss``: the network that is kept).

A checkpoint holds the discriminator as an ElectraForPreTraining directory transformers reads, and the
generator as an ElectraForMaskedLM directory beside it, ``generator/``; both are read back on resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from sklearn.metrics import roc_auc_score
from torch import nn

from seq2bert.data.pretraining import PretrainingData
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.io import read_json
from seq2bert.models.electra.pretrained import GENERATOR
from seq2bert.models.family import Family
from seq2bert.models.pretrained import load_hf_weights, write_hf_files
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.replaced_token_detection import LAMBDA

METRIC = "disc_loss"  # picks best/: lower is better


@dataclass
class ElectraSettings:
    """The pair ELECTRA trains: the generator's width as a fraction of the discriminator's (Sect. 3.2:
    "generators 1/4-1/2 the size of the discriminator" work best), the weight λ of L_Disc, whether L_Disc
    weighs the replaced and the original tokens alike (``balanced``; the paper weighs every token 1 — see
    docs/results.md, the ELECTRA diagnosis), what the two networks share (Sect. 3.1: the embeddings, or
    "all encoder weights", which needs a generator as wide as the discriminator), and ``two_stage_steps``:
    0 trains the two together (the paper's ELECTRA); n > 0 is Sect. 3.2's two-stage ELECTRA — n steps of
    the generator alone, then the discriminator from its weights, the generator frozen (a generator as
    wide as the discriminator; models/electra/pretrainer.py)."""

    generator_size: float = 0.25
    disc_weight: float = LAMBDA
    balanced: bool = False
    tie_weights: Literal["embeddings", "all"] = "embeddings"
    two_stage_steps: int = 0

    def validate(self) -> None:
        if not 0.0 < self.generator_size <= 1.0:
            raise ConfigError(
                f"electra.generator_size: a fraction of the discriminator's width in (0, 1], got "
                f"{self.generator_size} (the generator may not be wider than the discriminator)"
            )
        if self.tie_weights == "all" and self.generator_size != 1.0:
            raise ConfigError(
                f"electra.tie_weights=all: the generator shares the discriminator's encoder, so "
                f"electra.generator_size must be 1.0, got {self.generator_size}"
            )
        if self.two_stage_steps < 0:
            raise ConfigError(f"electra.two_stage_steps: a number of steps >= 0, got {self.two_stage_steps}")
        if self.two_stage_steps and (self.generator_size != 1.0 or self.tie_weights != "embeddings"):
            raise ConfigError(
                f"electra.two_stage_steps: the discriminator starts from the generator's weights, so "
                f"electra.generator_size must be 1.0 and electra.tie_weights embeddings, got "
                f"{self.generator_size} and {self.tie_weights}"
            )
        if not self.disc_weight > 0:
            raise ConfigError(f"electra.disc_weight: must be > 0, got {self.disc_weight}")

    def __post_init__(self) -> None:
        self.validate()


def begin_step(model: nn.Module, step: int) -> None:
    """The pair's stage for the training step ``step`` (two-stage ELECTRA; nothing for joint training)."""
    model.begin_step(step)


def loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """L_MLM + λ L_Disc of a batch (a pair label, if the instances have one, is not read)."""
    return model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], batch["labels"]).loss


@torch.no_grad()
def evaluate(model, data: PretrainingData, indices: list[int], device, disc_weight: float, seed: int) -> dict:
    """The held-out metrics of the pair (the module docstring); replacements drawn with a generator seeded by
    ``seed``."""
    sampler = torch.Generator(device=device).manual_seed(seed)
    mlm_loss = mlm_correct = masked = 0.0
    disc_loss = disc_correct = real_total = 0.0
    hits = {"replaced": 0.0, "original": 0.0}
    counts = {"replaced": 0.0, "original": 0.0}
    scores, truths = [], []  # every real position's score of "replaced" and its label
    for start in range(0, len(indices), data.batch_size):
        batch = {k: v.to(device) for k, v in data.collate(indices[start : start + data.batch_size]).items()}
        labels, mask = batch["labels"], batch["attention_mask"]
        out = model(batch["input_ids"], mask, batch["token_type_ids"], labels, generator=sampler)
        targets = labels[labels.ne(IGNORE_INDEX)]  # (N,): the generator's logits are (N, V), row-major
        mlm_loss += float(out.mlm_loss) * targets.numel()
        mlm_correct += float((out.generator_logits.argmax(-1) == targets).sum())
        masked += targets.numel()
        real = mask.bool()
        predicted, replaced = out.discriminator_logits[real] > 0, out.replaced[real].bool()  # (M,)
        disc_loss += float(out.disc_loss) * predicted.numel()
        disc_correct += float((predicted == replaced).sum())
        real_total += predicted.numel()
        scores.append(out.discriminator_logits[real].float().cpu())
        truths.append(replaced.cpu())
        for name, which in (("replaced", replaced), ("original", ~replaced)):
            hits[name] += float((predicted == replaced)[which].sum())
            counts[name] += float(which.sum())
    result = {
        "mlm_loss": mlm_loss / max(masked, 1),
        "mlm_accuracy": 100.0 * mlm_correct / max(masked, 1),
        "disc_loss": disc_loss / max(real_total, 1),
        "disc_accuracy": 100.0 * disc_correct / max(real_total, 1),
        "disc_replaced_accuracy": 100.0 * hits["replaced"] / max(counts["replaced"], 1),
        "disc_original_accuracy": 100.0 * hits["original"] / max(counts["original"], 1),
        "replaced_fraction": 100.0 * counts["replaced"] / max(real_total, 1),
        "disc_auc": ranking_auc(torch.cat(scores), torch.cat(truths)) if scores else 50.0,
    }
    return {**result, "loss": result["mlm_loss"] + disc_weight * result["disc_loss"]}


def ranking_auc(scores: torch.Tensor, replaced: torch.Tensor) -> float:
    """ROC AUC in % of ``scores`` (M,) against the 0/1 labels ``replaced`` (M,); 50 when one class is absent."""
    labels = replaced.numpy()
    if labels.min() == labels.max():
        return 50.0
    return 100.0 * float(roc_auc_score(labels, scores.numpy()))


def generator_size_of(directory: Path, discriminator: Any) -> float:
    """The ``generator_size`` of the pair a checkpoint holds: its generator's width over the discriminator's."""
    generator = read_json(Path(directory) / GENERATOR / "config.json")
    return generator["hidden_size"] / discriminator.hidden_size


def load_continued(family: Family, model: nn.Module, directory: Path) -> None:
    """The pair of a checkpoint whose pretraining continues (``load_pair``); weights that do not fit are a
    one-line error."""
    try:
        load_pair(family, model, directory)
    except RuntimeError as e:
        first = next((line.strip() for line in str(e).splitlines()[1:] if line.strip()), str(e))
        raise CheckpointError(
            f"{directory}: the generator does not fit electra.generator_size ({first})"
        ) from None


def save_pair(family: Family, tokenizer: Any, model: nn.Module, directory: Path) -> None:
    """The discriminator into ``directory`` (ElectraForPreTraining), the generator into its ``generator/``
    (ElectraForMaskedLM, with the tokenizer's files: a directory of its own)."""
    write_hf_files(family, model.discriminator, directory)
    generator = Path(directory) / GENERATOR
    generator.mkdir(exist_ok=True)
    write_hf_files(family, model.generator, generator)
    tokenizer.save(generator)


def load_pair(family: Family, model: nn.Module, directory: Path) -> None:
    """Read back what ``save_pair`` wrote (the shared embeddings are equal in both)."""
    load_hf_weights(family, model.discriminator, directory)
    load_hf_weights(family, model.generator, Path(directory) / GENERATOR)
