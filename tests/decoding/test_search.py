"""generate(): one entry point for greedy decoding and beam search, returning clean ids."""

import torch

from seq2bert.decoding.beam import beam_search
from seq2bert.decoding.greedy import greedy_decode, strip_special
from seq2bert.decoding.search import generate
from seq2bert.models.seq2seq.config import Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq

SPECIAL = dict(bos_token_id=5, eos_token_id=6, pad_token_id=0)


def tiny_model():
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(src_vocab_size=20, tgt_vocab_size=20, embedding_dim=8, hidden_size=16, num_layers=1)
    return Seq2Seq(cfg).eval()


def batch():
    x = torch.tensor([[7, 8, 9, 10], [11, 12, 0, 0], [13, 0, 0, 0]])
    return x, x.ne(0).long()


def test_one_beam_is_greedy_decoding_of_each_sentence_alone():
    """Each row gets its own maximum ⌊1.5 · |x| + b⌋, as if it were decoded alone."""
    model, (x, mask) = tiny_model(), batch()
    expected = []
    for row, m in zip(x, mask, strict=True):
        n = int(m.sum())
        tokens, _ = greedy_decode(model, row[None, :n], m[None, :n], **SPECIAL, max_len=int(1.5 * n) + 2)
        expected.append(strip_special(tokens[0].tolist(), eos_token_id=6, pad_token_id=0))
    assert generate(model, x, mask, **SPECIAL, max_len_b=2) == expected
    assert any(
        len(r) == int(1.5 * int(m.sum())) + 2 for r, m in zip(expected, mask, strict=True)
    )  # limits bind
    for row in expected:
        assert 6 not in row and 0 not in row and 5 not in row


def test_beams_give_the_best_beam_search_hypothesis():
    model, (x, mask) = tiny_model(), batch()
    out = beam_search(model, x, mask, **SPECIAL, num_beams=4, max_len_a=1.5, max_len_b=10, length_penalty=0.6)
    expected = [[t for t in hyps[0].tokens if t != 6] for hyps in out.hypotheses]
    assert generate(model, x, mask, **SPECIAL, num_beams=4, length_penalty=0.6) == expected


def test_maximum_length_is_respected():
    model, (x, mask) = tiny_model(), batch()
    for beams in (1, 3):
        rows = generate(model, x, mask, **SPECIAL, num_beams=beams, max_len_a=0.0, max_len_b=2)
        assert all(len(r) <= 2 for r in rows)
