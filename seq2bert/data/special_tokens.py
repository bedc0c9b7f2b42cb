"""The special tokens of the vocabularies seq2bert trains (data/tokenization.py, data/vocab_training.py)
and BERT's template that places them."""

from __future__ import annotations

import tokenizers
from tokenizers import processors

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]"]
"""Special tokens of the vocabularies we train, in id order (0..6)."""


def set_bert_template(backend: tokenizers.Tokenizer) -> None:
    """[CLS] A [SEP] for one text, [CLS] A [SEP] B [SEP] for two; type ids 0 up to the first [SEP], then 1."""
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", backend.token_to_id("[CLS]")), ("[SEP]", backend.token_to_id("[SEP]"))],
    )
