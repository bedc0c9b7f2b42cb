"""Knowledge distillation: a small student trained on what a large teacher outputs (Hinton et al. 2015).

DistilBERT (Sanh et al. 2019, Sect. 2): "a linear combination of the distillation loss L_ce with the
supervised training loss, in our case the masked language modeling loss L_mlm … [and] a cosine embedding
loss (L_cos) which will tend to align the directions of the student and teacher hidden states vectors":

    L_ce  = − Σ_i t_i · log(s_i),   t_i = softmax(z^t / T)_i,  s_i = softmax(z^s / T)_i        soft targets
    L_cos = 1 − cos(h^s, h^t)                                                    last hidden states, per token
    L     = α_ce · T² · L_ce + α_mlm · L_mlm + α_cos · L_cos     (T²: Hinton et al. Sect. 2, the soft targets'
                                                                gradients scale as 1/T²; DistilBERT's code)

TinyBERT (Jiao et al. 2019, Sect. 3.1): student layer m learns from teacher layer n = g(m), with g(0) = 0
(the embeddings) and g(M + 1) = N + 1 (the prediction layer):

    L_attn = 1/h Σ_i MSE(A_i^S, A_i^T)          Eq. 7   A_i the i-th head's scores *before* the softmax
    L_hidn = MSE(H^S W_h, H^T)                  Eq. 8   W_h ∈ R^{d'×d}: a learned projection of the student's
    L_embd = MSE(E^S W_e, E^T)                  Eq. 9   hidden states to the teacher's width
    L_pred = CE(z^T / t, z^S / t)               Eq. 10  soft cross-entropy at temperature t
    layer_map: g(m) = m · N / M                 Sect. 4.3, "uniform strategy"

MobileBERT (Sun et al. 2020, Sect. 3.5): a student whose feature maps (the layer outputs, at the width
between its blocks) have the teacher's width learns layer ℓ of the teacher's

    L_FMT^ℓ = 1/(TN) Σ_t Σ_n (H^tr_{t,ℓ,n} − H^st_{t,ℓ,n})²      feature map transfer: L_hidn with W_h = I
    L_AT^ℓ  = 1/(TA) Σ_t Σ_a D_KL(a^tr_{t,ℓ,a} ‖ a^st_{t,ℓ,a})   attention transfer: a the attention
                                                                  distribution of head a at query t

one layer at a time (progressive knowledge transfer, recipes/distill_mobilebert.py), then its predictions
(pre-training distillation: α L_task + (1 − α) L_KD).

Shapes: hidden states (B, T, d), attention scores (B, h, T, T), token masks (B, T) with 1 on real tokens;
every mean runs over real tokens only (and for attention over pairs of real tokens), so that padding — whose
teacher scores are never used — adds nothing.

Marked departures: where the student has fewer heads than the teacher (h^T a multiple of h^S), each student
head learns the mean of a group of h^T / h^S teacher heads' scores (TinyBERT's students keep the teacher's
head count); where the widths are equal, W_h and W_e are the identity (TinyBERT's code learns one anyway).
``Distiller`` puts the pieces together: the frozen teacher, the student, W_h / W_e, and the weighted sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def layer_map(student_layers: int, teacher_layers: int) -> list[int]:
    """g(m) = m · N / M for m = 1 … M (Sect. 4.3, uniform): the teacher layer (1-based, as hidden_states
    counts them after the embeddings) each student layer learns from; rounded down when M does not divide N,
    so that g(M) = N always. DistilBERT's "one layer out of two" is the same map for M = N / 2."""
    if not 1 <= student_layers <= teacher_layers:
        raise ValueError(f"a student of {student_layers} layers for a teacher of {teacher_layers}")
    return [m * teacher_layers // student_layers for m in range(1, student_layers + 1)]


def _rows(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The rows of x (B, T, d) at real tokens → (n, d); x itself, flattened, without a mask."""
    return x.reshape(-1, x.size(-1)) if mask is None else x[mask.bool()]


def soft_cross_entropy(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """T² · mean over rows of −Σ_k softmax(z^t/T)_k · log softmax(z^s/T)_k. Logits (..., K); ``mask`` (B, T)
    selects the rows of (B, T, K) logits (per-token predictions); T² keeps the gradients' size as T varies
    (TinyBERT's Eq. 10 at t = 1 is the same loss)."""
    s = _rows(student_logits, mask).float() / temperature
    t = _rows(teacher_logits, mask).float() / temperature
    per_row = -(torch.softmax(t, -1) * torch.log_softmax(s, -1)).sum(-1)  # (n,)
    return temperature**2 * per_row.mean()


def cosine_embedding_loss(
    student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """mean over real tokens of 1 − cos(h^s, h^t): (B, T, d) each, the same width (DistilBERT's L_cos)."""
    s, t = _rows(student_hidden, mask).float(), _rows(teacher_hidden, mask).float()
    return (1.0 - F.cosine_similarity(s, t, dim=-1)).mean()


def hidden_mse(
    student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """MSE(H^S W_h, H^T) (Eq. 8; Eq. 9 for the embeddings) over the real tokens' elements: (B, T, d) each,
    the student's already projected."""
    return F.mse_loss(_rows(student_hidden, mask).float(), _rows(teacher_hidden, mask).float())


def pool_heads(scores: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, h, T, T) → (B, heads, T, T), each the mean of h / heads consecutive heads (a departure: see the
    module docstring)."""
    h = scores.size(1)
    if h == heads:
        return scores
    if h % heads:
        raise ValueError(f"the teacher's {h} heads do not group into the student's {heads}")
    return scores.unflatten(1, (heads, h // heads)).mean(2)


def attention_mse(
    student_scores: torch.Tensor, teacher_scores: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """1/h Σ_i MSE(A_i^S, A_i^T) (Eq. 7) over the pairs of real tokens: scores (B, h, T, T) before the
    softmax; the teacher's heads pooled to the student's count."""
    t = pool_heads(teacher_scores, student_scores.size(1)).float()
    s = student_scores.float()
    if mask is None:
        return F.mse_loss(s, t)
    m = mask.bool()
    pairs = (m[:, :, None] & m[:, None, :]).unsqueeze(1).expand_as(s)  # (B, h, T, T)
    return F.mse_loss(s[pairs], t[pairs])


def attention_kl(
    student_scores: torch.Tensor, teacher_scores: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """1/(TA) Σ_t Σ_a D_KL(a^T_{t,a} ‖ a^S_{t,a}) (MobileBERT's L_AT): scores (B, h, T, T) before the softmax,
    each query's distribution over the real keys; the mean over heads and real queries. With fewer student
    heads, each learns the mean of a group of the teacher's distributions (``pool_heads``)."""
    s, t = student_scores.float(), teacher_scores.float()
    if mask is not None:  # padding keys: out of both distributions
        hidden = ~mask.bool()[:, None, None, :]  # (B, 1, 1, T)
        s, t = s.masked_fill(hidden, -1e9), t.masked_fill(hidden, -1e9)
    p = pool_heads(torch.softmax(t, -1), s.size(1))  # a^T (B, h_s, T, T)
    kl = (torch.xlogy(p, p) - p * torch.log_softmax(s, -1)).sum(-1)  # Σ_k p_k (log p_k − log q_k): (B, h, T)
    if mask is None:
        return kl.mean()
    return kl.transpose(1, 2)[mask.bool()].mean()  # (n, h) at the real queries


@dataclass
class DistillWeights:
    """The weight of each term (0: not computed). DistilBERT's: soft 5, hard 2, cos 1 at T = 2 (its
    training script); TinyBERT's two stages: attention + hidden (+ embedding), then prediction alone at
    T = 1."""

    soft: float = 0.0  # L_ce / L_pred: the teacher's predictions as soft targets
    hard: float = 0.0  # the student's own loss on the batch's labels (L_mlm, or the task's)
    cos: float = 0.0  # L_cos on the last hidden states
    attention: float = 0.0  # L_attn, every mapped layer
    hidden: float = 0.0  # L_hidn at every mapped layer and L_embd at the embeddings (MobileBERT's L_FMT)
    attention_kl: float = 0.0  # MobileBERT's L_AT, every mapped layer
    temperature: float = 1.0

    def validate(self) -> None:
        terms = (self.soft, self.hard, self.cos, self.attention, self.hidden, self.attention_kl)
        if any(w < 0 for w in terms) or not any(terms):
            raise ValueError(f"the loss weights must be >= 0 and not all 0, got {terms}")
        if not self.temperature > 0:
            raise ValueError(f"temperature: must be > 0, got {self.temperature}")

    @property
    def teacher(self) -> bool:
        """Whether any term reads the teacher."""
        return bool(self.soft or self.cos or self.attention or self.hidden or self.attention_kl)

    @property
    def layers(self) -> bool:
        """Whether the terms read the hidden states of every layer."""
        return bool(self.cos or self.attention or self.hidden or self.attention_kl)


def prediction_loss(student_out, teacher_out, temperature: float, mask: torch.Tensor | None) -> torch.Tensor:
    """The soft-target term over what the two models predict: a classifier's ``logits`` (B, K), per token
    (B, T, K) at the real tokens of ``mask``; a masked LM's ``logits`` / ``prediction_logits`` ((N, V) at
    the predicted positions, or (B, T, V) at the real tokens); span QA's start and end distributions over
    the real positions (B, T) each, the two terms added."""
    if getattr(student_out, "start_logits", None) is not None:
        loss = 0.0
        for name in ("start_logits", "end_logits"):
            zs, zt = getattr(student_out, name), getattr(teacher_out, name)  # (B, T)
            if mask is not None:  # padding is no answer: out of both distributions
                zs, zt = (z.float().masked_fill(~mask.bool(), -1e4) for z in (zs, zt))
            loss = loss + soft_cross_entropy(zs, zt, temperature)
        return loss
    zs, zt = (getattr(o, "prediction_logits", None) for o in (student_out, teacher_out))
    if zs is None:
        zs, zt = student_out.logits, teacher_out.logits
    return soft_cross_entropy(zs, zt, temperature, mask if zs.dim() == 3 else None)


class Distiller(nn.Module):
    """The student, the frozen teacher and TinyBERT's projections, trained as one module: forward(**batch)
    returns the weighted sum of the terms ``weights`` asks for, and ``parts`` the last batch's terms.

    ``student_stack`` / ``teacher_stack``: the TransformerStacks of the two (their ``layer(i)`` give the
    attention scores); ``mapping``: g(m) for m = 1 … M (layer_map); ``options``: forward options both
    models take (a masked LM's sparse prediction, which then predicts the same labelled rows in both);
    ``depths``: the student depths (0: the embeddings, m: layer m) whose layer terms count — every one by
    default, layer ℓ alone (and the embeddings at ℓ = 1) in MobileBERT's progressive stage ℓ. The
    teacher stays in evaluation mode and receives no gradient; the student's and W_h's parameters are the trainable ones."""

    def __init__(
        self,
        student: nn.Module,
        teacher: nn.Module,
        student_stack: nn.Module,
        teacher_stack: nn.Module,
        weights: DistillWeights,
        mapping: list[int] | None = None,
        options: dict | None = None,
        depths: set[int] | None = None,
    ):
        super().__init__()
        weights.validate()
        self.student, self.teacher, self.weights = student, teacher, weights
        self._stacks = (student_stack, teacher_stack)  # not registered twice: they live in the two models
        self.mapping = mapping or layer_map(student_stack.num_layers, teacher_stack.num_layers)
        if len(self.mapping) != student_stack.num_layers:
            raise ValueError(
                f"a map of {len(self.mapping)} layers for a student of {student_stack.num_layers}"
            )
        d_s, d_t = student.config.hidden_size, teacher.config.hidden_size
        if weights.cos and d_s != d_t:
            raise ValueError(f"L_cos compares hidden states of one width: student {d_s}, teacher {d_t}")
        wide = weights.hidden and d_s != d_t
        self.W_h = nn.Linear(d_s, d_t) if wide else nn.Identity()  # Eq. 8
        self.W_e = nn.Linear(d_s, d_t) if wide else nn.Identity()  # Eq. 9
        teacher.requires_grad_(False)
        teacher.eval()
        self.options = options or {}  # forward options of both models (a masked LM's sparse prediction)
        self.depths = set(range(student_stack.num_layers + 1)) if depths is None else set(depths)
        self.parts: dict[str, float] = {}

    def train(self, mode: bool = True) -> Distiller:
        super().train(mode)
        self.teacher.eval()  # the teacher's outputs are targets: no dropout
        return self

    def forward(self, **batch) -> torch.Tensor:
        """The weighted loss of one batch (the student's inputs and labels; the teacher reads the same)."""
        w = self.weights
        s = self.student(**batch, **self.options, output_hidden_states=w.layers)
        if not w.teacher:  # the student's own loss alone: no teacher to run
            self.parts = {"hard": float(s.loss.detach())}
            return s.loss
        with torch.no_grad():
            t = self.teacher(**batch, **self.options, output_hidden_states=w.layers)
        mask = batch.get("attention_mask")
        parts: dict[str, torch.Tensor] = {}
        if w.soft:
            parts["soft"] = prediction_loss(s, t, w.temperature, mask)
        if w.hard:
            if s.loss is None:
                raise ValueError("the hard term needs labels in the batch")
            parts["hard"] = s.loss
        if w.cos:
            parts["cos"] = cosine_embedding_loss(s.hidden_states[-1], t.hidden_states[-1], mask)
        pairs = [(m, n) for m, n in enumerate(self.mapping, 1) if m in self.depths]  # (student, teacher)
        if w.hidden:
            parts["hidden"] = sum(
                hidden_mse(self.W_h(s.hidden_states[m]), t.hidden_states[n], mask) for m, n in pairs
            )
            if 0 in self.depths:
                parts["hidden"] += hidden_mse(self.W_e(s.hidden_states[0]), t.hidden_states[0], mask)
        for term, loss in (("attention", attention_mse), ("attention_kl", attention_kl)):
            if getattr(w, term):
                student_stack, teacher_stack = self._stacks
                with torch.no_grad():
                    teacher_scores = [
                        teacher_stack.layer(n - 1).attention_scores(t.hidden_states[n - 1]) for _, n in pairs
                    ]
                parts[term] = sum(
                    loss(student_stack.layer(m - 1).attention_scores(s.hidden_states[m - 1]), a_t, mask)
                    for (m, _), a_t in zip(pairs, teacher_scores, strict=True)
                )
        self.parts = {k: float(v.detach()) for k, v in parts.items()}
        return sum(getattr(w, k) * v for k, v in parts.items())


class NextTokenDistiller(nn.Module):
    """Word-level knowledge distillation of a decoder (Kim & Rush 2016, Sect. 3.1; Hinton et al. 2015): at each
    target position the student learns the teacher's next-token distribution as soft targets, beside the
    data's own next token,

        L = α_soft · T² · Σ_t CE(softmax(z^t_t / T), softmax(z^s_t / T)) / n + α_hard · NLL(y)

    the mean over the n positions that have a label. The student of a GPT (a causal LM, ``shift``: the logits
    at t predict the label at t + 1, as transformers shifts them) or of a Transformer (the logits at t predict
    label t). The teacher stays frozen in evaluation mode; the student's parameters are the trainable ones.
    What speculative decoding asks of a draft (decoding/speculative.py) is exactly this: the teacher's next
    token, as often as possible."""

    def __init__(self, student: nn.Module, teacher: nn.Module, weights: DistillWeights, *, shift: bool):
        super().__init__()
        weights.validate()
        if weights.cos or weights.attention or weights.hidden:
            raise ValueError("a decoder's student learns the soft and hard terms only")
        self.student, self.teacher, self.weights, self.shift = student, teacher, weights, shift
        teacher.requires_grad_(False)
        teacher.eval()
        self.parts: dict[str, float] = {}

    def train(self, mode: bool = True) -> NextTokenDistiller:
        super().train(mode)
        self.teacher.eval()
        return self

    def forward(self, **batch) -> torch.Tensor:
        """The weighted loss of one batch (the student's inputs with ``labels``; the teacher reads the same)."""
        w = self.weights
        s = self.student(**batch)  # logits (B, T, V) and the hard term, the student's own loss
        parts = {"hard": s.loss} if w.hard else {}
        if w.soft:
            with torch.no_grad():
                teacher_logits = self.teacher(**batch).logits
            labels, zs, zt = batch["labels"], s.logits, teacher_logits
            if self.shift:  # position t predicts label t + 1
                labels, zs, zt = labels[:, 1:], zs[:, :-1], zt[:, :-1]
            parts["soft"] = soft_cross_entropy(zs, zt, w.temperature, labels.ne(IGNORE_INDEX))
        self.parts = {k: float(v.detach()) for k, v in parts.items()}
        return sum(getattr(w, k) * v for k, v in parts.items())
