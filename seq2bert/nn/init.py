"""The initialisation BERT and GPT share (Devlin et al. 2018, the released code; Radford et al. 2018, Sect. 4.1:
"a simple weight initialization of N(0, 0.02)"): every Linear and Embedding weight drawn from N(0, std), Linear
biases zero, LayerNorms at the identity (γ = 1, β = 0). A family adds its own departures after it (BERT's zero
padding row, GPT-2's smaller residual projections)."""

from __future__ import annotations

from torch import nn


def normal_init(module: nn.Module, std: float) -> None:
    """Initialise every Linear, Embedding and LayerNorm inside ``module`` (itself included) as above."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
