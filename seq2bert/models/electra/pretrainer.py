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
"""

from __future__ import annotations

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
    loss: torch.Tensor  # L_MLM + λ L_Disc
    mlm_loss: torch.Tensor
    disc_loss: torch.Tensor
    generator_logits: torch.Tensor  # (N, V) at the N masked positions, row-major
    discriminator_logits: torch.Tensor  # (B, T): the score of "replaced"
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
    ):
        super().__init__()
        self.config, self.disc_weight, self.balanced = config, disc_weight, balanced
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
        g = self.generator(input_ids, attention_mask, token_type_ids, labels, sparse_prediction=True)
        original, masked = original_tokens(input_ids, labels)  # x, m
        sampled = sample_replacements(g.logits, generator=generator)  # x̂ (N,), no gradient
        corrupted, replaced = corrupt(original, masked, sampled)  # x^corrupt, 1(x^corrupt ≠ x)
        d = self.discriminator(corrupted, attention_mask, token_type_ids)
        disc_loss = replaced_token_detection_loss(d.logits, replaced, attention_mask, balanced=self.balanced)
        return ElectraPretrainerOutput(
            loss=electra_loss(g.loss, disc_loss, self.disc_weight),
            mlm_loss=g.loss,
            disc_loss=disc_loss,
            generator_logits=g.logits,
            discriminator_logits=d.logits,
            corrupted_ids=corrupted,
            replaced=replaced,
        )
