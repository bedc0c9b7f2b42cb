"""A checkpoint's tokenizer files as transformers' tokenizer classes read them: tokenizer.json (the pipeline,
data/tokenization.py), a BPE's vocab.json + merges.txt, and the tokenizer_config.json that names the class,
its special tokens by role and its options. The families' ``save_tokenizer`` (RoBERTa's, ALBERT's, GPT's) are
this writer with their class and specials.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seq2bert.io import atomic_write_text


def save_with_config(
    tokenizer: Any, directory: Path, tokenizer_class: str, specials: dict[str, str], **settings: Any
) -> None:
    """``tokenizer.save(directory)`` and a tokenizer_config.json of ``tokenizer_class``: ``specials`` by role
    ({"pad": "<pad>", …} → "pad_token": "<pad>", …), then ``settings`` (do_lower_case, model_max_length, …)."""
    tokenizer.save(directory)
    config: dict[str, Any] = {"tokenizer_class": tokenizer_class}
    config.update({f"{role}_token": token for role, token in specials.items()})
    config.update(settings)
    atomic_write_text(Path(directory) / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
