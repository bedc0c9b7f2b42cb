"""seq2bert: the lineage of neural sequence models, from Seq2Seq to BERT, as real, fast, tested software."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def from_pretrained(path: str | Path, device: str = "cpu"):
    """Load a seq2bert checkpoint (or a run directory's best checkpoint) as a model in eval mode."""
    from seq2bert.recipes.translation import load

    model, _, _ = load(path, device=device)
    return model


def translate(
    texts: list[str], model: str | Path, *, num_beams: int = 1, length_penalty: float = 1.0, **kwargs
) -> list[str]:
    """Translate ``texts`` with the checkpoint at ``model``: greedy decoding, or beam search with ``num_beams``."""
    from seq2bert.recipes.translation import Decoding
    from seq2bert.recipes.translation import translate as _translate

    decoding = Decoding(num_beams=num_beams, length_penalty=length_penalty)
    return _translate(model, list(texts), decoding=decoding, **kwargs)
