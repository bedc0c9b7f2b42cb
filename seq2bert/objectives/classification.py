"""Fine-tuning losses of the classification heads (Devlin et al. 2018, Sect. 3.2 and 4, Figure 4).

Sequence-level, on the pooled [CLS] state C with K outputs z = C Wᵀ (Figure 4 (a), (b)), by problem type
(transformers' ``problem_type`` and its rule when unset: one output is regression, more are single-label):

    single_label_classification   L = −log softmax(z)_y                   y ∈ {0 … K−1}   (GLUE)
    regression                    L = (z − y)²                            y ∈ R            (STS-B, K = 1)
    multi_label_classification    L = −Σ_k [y_k log σ(z_k) + (1 − y_k) log(1 − σ(z_k))] / K    y ∈ {0, 1}^K

each averaged over the batch. Token-level (Figure 4 (d), NER, Sect. 5.3): softmax cross-entropy at each
token, a word labelled at its first sub-token and the other positions IGNORE_INDEX. Multiple choice
(Sect. 4.4, SWAG) is single-label classification over the C choices' scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from seq2bert.errors import ConfigError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")


@dataclass
class ClassifierFields:
    """The config fields of a family's task heads, transformers' (its PretrainedConfig holds them for every
    model): one name per output of the classifier (num_labels = len(id2label)); ``problem_type`` one of
    PROBLEM_TYPES (None: regression for one label, else single-label); dropout before the classifier
    (None: the family's own dropout). A family's config dataclass inherits them."""

    id2label: dict[int, str] = field(default_factory=lambda: {0: "LABEL_0", 1: "LABEL_1"})
    problem_type: str | None = None
    classifier_dropout: float | None = None

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    def validate_classifier(self) -> None:
        if sorted(self.id2label) != list(range(len(self.id2label))) or not self.id2label:
            raise ConfigError(f"id2label: expected labels numbered 0 … n−1, got ids {sorted(self.id2label)}")
        if self.problem_type is not None and self.problem_type not in PROBLEM_TYPES:
            raise ConfigError(f"problem_type: expected one of {PROBLEM_TYPES}, got {self.problem_type!r}")
        if self.classifier_dropout is not None and not 0.0 <= self.classifier_dropout < 1.0:
            raise ConfigError(f"classifier_dropout: must be in [0, 1), got {self.classifier_dropout}")


def labels_from_hf(hf: dict) -> dict[str, dict[int, str]]:
    """{"id2label": …} of a transformers config.json dictionary: its id2label with JSON's string keys made
    ints, else ``num_labels`` names LABEL_0 … (transformers'); {} when it has neither."""
    if "id2label" in hf:
        return {"id2label": {int(i): str(label) for i, label in hf["id2label"].items()}}
    if "num_labels" in hf:
        return {"id2label": {i: f"LABEL_{i}" for i in range(int(hf["num_labels"]))}}
    return {}


def problem_type_of(problem_type: str | None, num_labels: int) -> str:
    """transformers' rule: the given problem type, else regression for one output, else single-label."""
    if problem_type is not None:
        return problem_type
    return "regression" if num_labels == 1 else "single_label_classification"


def sequence_classification_loss(
    logits: torch.Tensor, labels: torch.Tensor, problem_type: str
) -> torch.Tensor:
    """logits (B, K); labels (B,) class ids (single-label), (B,) or (B, K) floats (regression), (B, K) 0/1
    (multi-label). fp32 even under autocast."""
    if problem_type == "regression":
        if logits.size(-1) == 1:  # one score per example: (B, 1) against (B,)
            return F.mse_loss(logits.float().squeeze(-1), labels.float().reshape(-1))
        return F.mse_loss(logits.float(), labels.float())  # (B, K) against (B, K)
    if problem_type == "multi_label_classification":
        return F.binary_cross_entropy_with_logits(logits.float(), labels.float())
    if problem_type == "single_label_classification":
        return F.cross_entropy(logits.float(), labels.reshape(-1))  # −log softmax(z)_y
    raise ConfigError(f"problem_type: expected one of {PROBLEM_TYPES}, got {problem_type!r}")


def token_classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """logits (B, T, K); labels (B, T), IGNORE_INDEX where no tag is predicted. fp32 even under autocast."""
    return F.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)),  # (B·T, K)
        labels.reshape(-1),  # (B·T,)
        ignore_index=IGNORE_INDEX,
    )
