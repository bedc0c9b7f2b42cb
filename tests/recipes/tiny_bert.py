"""A tiny, randomly initialised BERT for the recipes' end-to-end tests."""

from pathlib import Path

import torch

from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertForPreTraining
from seq2bert.models.bert.pretrained import save_bert


def tiny_bert(root: Path, words: list[str]) -> Path:
    """root/bert: a BertForPreTraining directory (hidden 32, 2 layers, 64 positions) with a WordPiece
    vocabulary trained on every rotation of ``words``, the same weights for the same words."""
    corpus = root / "words.txt"
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))) + "\n")
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=120, lowercase=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)  # fmt: skip
    save_bert(BertForPreTraining(cfg), root / "bert", tok)
    return root / "bert"
