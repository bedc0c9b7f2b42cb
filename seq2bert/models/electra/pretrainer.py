"""ELECTRA's pretraining: a generator and a discriminator trained together (Clark et al. 2020, Sect. 2 and
3.2, Figure 2).

    x^masked      the input with 15 % of its tokens masked (data/masking.py); labels: the originals there
    generator     ElectraForMaskedLM, ``generator_size`` × the discriminator's width (Sect. 3.2: 1/4 to 1/2
                  works best), L_MLM at the masked positions
    sample        x̂_i ~ p_G(x_i | x^masked) at the masked positions, no gradient (objectives/
                  replaced_token_detection.py); x^corrupt = REPLACE(x, m, x̂)
    discriminator ElectraForPreTraining on x^corrupt, L_Disc over every real position
    loss          L_MLM + λ L_Disc, λ = 50

"We therefore propose tying the embeddings of the generator and discriminator" (Sect. 3.1): the token,
position and segment embeddings and their LayerNorm are one module shared by both networks (its weights
are the discriminator's, and the generator's output layer is tied to them); each network keeps its own
projection to its width. After pretraining "we throw out the generator and only fine-tune the
discriminator": ``discriminator`` is an ElectraForPreTraining that saves and loads as transformers does.

Two-stage ELECTRA (Sect. 3.2), ``two_stage_steps`` = n > 0: "train only the generator with L_MLM for n
steps. Initialize the weights of the discriminator with the weights of the generator. Then train the
discriminator with L_Disc [...], keeping the generator's weights frozen." The generator is as wide as the
discriminator (the weights must fit). ``begin_step(step)``, called before every training step, moves the
pair from one stage to the other; at step n exactly it copies the generator's encoder into the
discriminator's (a run resumed at step n copies too, one resumed later reads the copy back). The shared
embeddings go on training with the discriminator in the second stage: they are the discriminator's.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.electra.config import ElectraConfig, generator_config
from seq2bert.models.electra.model import ElectraForMaskedLM, ElectraForPreTraining
from seq2bert.objectives.replaced_token_detection import (
    LAMBDA,
    corrupt,
    electra_loss,
    original_tokens,
    replaced_token_detection_loss,
    sample_replacements,
)

SHARED = ("word_embeddings", "position_embeddings", "token_type_embeddings", "norm")


@dataclass
class ElectraPretrainerOutput:
    loss: torch.Tensor  # L_MLM + λ L_Disc (the generator's stage of two: L_MLM)
    mlm_loss: torch.Tensor
    disc_loss: torch.Tensor | None  # None: the generator's stage, in training (the discriminator not run)
    generator_logits: torch.Tensor  # (N, V) at the N masked positions, row-major
    discriminator_logits: torch.Tensor | None  # (B, T): the score of "replaced"
    corrupted_ids: torch.Tensor  # (B, T): x^corrupt
    replaced: torch.Tensor  # (B, T) long: the discriminator's labels


class ElectraPretrainer(nn.Module):
    """The generator and the discriminator of Figure 2, their embeddings shared."""

    def __init__(
        self,
        config: ElectraConfig,
        *,
        generator_size: float = 0.25,
        disc_weight: float = LAMBDA,
        balanced: bool = False,
        tie_weights: str = "embeddings",
        two_stage_steps: int = 0,
    ):
        super().__init__()
        self.config, self.disc_weight, self.balanced = config, disc_weight, balanced
        if two_stage_steps and (generator_size != 1.0 or tie_weights != "embeddings"):
            raise ValueError(
                "two-stage training needs a generator as wide as the discriminator, apart from it"
            )
        # the stage a training step trains: "joint", or "generator" then "discriminator" (two-stage)
        self.two_stage_steps, self.stage, self.copied = two_stage_steps, "joint", False
        self.discriminator = ElectraForPreTraining(config)
        self.generator = ElectraForMaskedLM(generator_config(config, generator_size))
        if tie_weights == "all":  # "tying all encoder weights" (Sect. 3.1): one encoder, two heads
            if generator_size != 1.0:
                raise ValueError("tying all weights needs a generator as wide as the discriminator")
            self.generator.electra = self.discriminator.electra
        shared, own = self.discriminator.electra.embeddings, self.generator.electra.embeddings
        for name in SHARED:  # one module in both networks (Sect. 3.1)
            setattr(own, name, getattr(shared, name))
        self.generator.mlm.decoder.weight = shared.word_embeddings.weight  # tied, as before

    def begin_step(self, step: int) -> None:
        """Two-stage training: the stage of the training step ``step`` (0-based), the discriminator started
        from the generator at step n; the generator frozen from then on. Joint training: nothing."""
        n = self.two_stage_steps
        if not n:
            return
        if step < n:
            self.stage = "generator"
            return
        # "initialize the weights of the discriminator with the weights of the generator" (once, at step n)
        if step == n and not self.copied:
            self.discriminator.electra.load_state_dict(self.generator.electra.state_dict())  # in place
            self.copied = True
        self.stage = "discriminator"
        self.generator.requires_grad_(False)
        self.discriminator.requires_grad_(True)  # the shared embeddings train with the discriminator

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        *,
        generator: torch.Generator | None = None,
    ) -> ElectraPretrainerOutput:
        """input_ids (B, T): x^masked; labels (B, T): the original token at the masked positions, −100
        elsewhere; ``generator``: the random numbers of the sampling (seeded: reproducible)."""
        frozen = self.stage == "discriminator"
        with torch.no_grad() if frozen else contextlib.nullcontext():
            g = self.generator(input_ids, attention_mask, token_type_ids, labels, sparse_prediction=True)
        original, masked = original_tokens(input_ids, labels)  # x, m
        sampled = sample_replacements(g.logits, generator=generator)  # x̂ (N,), no gradient
        corrupted, replaced = corrupt(original, masked, sampled)  # x^corrupt, 1(x^corrupt ≠ x)
        if self.stage == "generator" and self.training:  # L_MLM alone: the discriminator waits
            return ElectraPretrainerOutput(g.loss, g.loss, None, g.logits, None, corrupted, replaced)
        d = self.discriminator(corrupted, attention_mask, token_type_ids)
        disc_loss = replaced_token_detection_loss(d.logits, replaced, attention_mask, balanced=self.balanced)
        return ElectraPretrainerOutput(
            loss=electra_loss(g.loss, disc_loss, self.disc_weight),  # frozen: L_MLM a constant
            mlm_loss=g.loss,
            disc_loss=disc_loss,
            generator_logits=g.logits,
            discriminator_logits=d.logits,
            corrupted_ids=corrupted,
            replaced=replaced,
        )
