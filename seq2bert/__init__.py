"""seq2bert: the lineage of neural sequence models, from Seq2Seq to BERT, as real, fast, tested software."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def from_pretrained(path: str | Path, device: str = "cpu"):
    """Load a seq2bert checkpoint (or a run directory's best checkpoint), or a Hugging Face MarianMT
    directory (as our Transformer), as a model in eval mode."""
    from seq2bert.recipes.translation import load

    model, _, _ = load(path, device=device)
    return model


def translate(
    texts: list[str],
    model: str | Path,
    *,
    num_beams: int = 1,
    length_penalty: float = 1.0,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    batch_size: int = 64,
) -> list[str]:
    """Translate ``texts`` with the checkpoint at ``model``: greedy decoding, or beam search with ``num_beams``;
    at most ⌊max_len_a · |x| + max_len_b⌋ tokens per sentence."""
    from seq2bert.recipes.translation import Decoding
    from seq2bert.recipes.translation import translate as _translate

    decoding = Decoding(num_beams, length_penalty, max_len_a, max_len_b)
    return _translate(model, list(texts), decoding=decoding, batch_size=batch_size)
