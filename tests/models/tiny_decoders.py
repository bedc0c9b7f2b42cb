"""Tiny random decoders of a shared vocabulary for the decoding tests: a GPT-2 and a Transformer of any
depth (a target and its draft), in eval mode."""

import torch

from seq2bert.models.gpt.config import GPT2Config
from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.model import Transformer

V = 29  # [PAD] 0 (the Transformer's), [BOS] 1, [EOS] 2


def tiny_gpt2(layers: int = 2, seed: int = 0, vocab: int = V) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab, n_positions=96, n_embd=32, n_layer=layers, n_head=4, eos_token_id=2)
    return GPT2LMHeadModel(config).eval()


def tiny_transformer(layers: int = 2, seed: int = 0, vocab: int = V) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=32, encoder_layers=layers,
                               decoder_layers=layers, encoder_attention_heads=4, decoder_attention_heads=4,
                               encoder_ffn_dim=48, decoder_ffn_dim=48, pad_token_id=0, bos_token_id=1,
                               eos_token_id=2)  # fmt: skip
    return Transformer(config).eval()
