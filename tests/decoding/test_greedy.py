"""Greedy decoding (the one-beam path of generate) on hand-made tables of next-token probabilities."""

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import generate, strip_special

BOS, EOS, PAD = 1, 2, 0  # vocab: 0 pad, 1 bos, 2 eos, 3 a, 4 b


class TableModel:
    """A fake decoder whose next-token log-probabilities come from a hand-made table indexed by step."""

    def __init__(self, table):
        self.table = torch.log(torch.tensor(table, dtype=torch.float))  # (T, V) or (T, B, V)

    def start(self, input_ids, attention_mask):
        return torch.zeros(input_ids.size(0), dtype=torch.long)  # the step counter is the state

    def step(self, tokens, state):
        t = int(state[0])
        logits = self.table[t]
        if logits.dim() == 1:
            logits = logits.expand(tokens.size(0), -1)
        return logits, state + 1

    def reorder(self, state, index):
        return state.index_select(0, index)


def greedy(table, batch, max_new_tokens):
    config = GenerationConfig(
        decoder_start_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, max_new_tokens=max_new_tokens
    )
    out = generate(TableModel(table), torch.zeros(batch, 3, dtype=torch.long) + 7, None, config)
    return out.sequences[:, 1:], torch.tensor([hyps[0].log_prob for hyps in out.hypotheses])


def test_greedy_takes_the_argmax_and_stops_at_eos():
    table = [[0, 0, 0.1, 0.6, 0.3], [0, 0, 0.2, 0.3, 0.5], [0, 0, 0.9, 0.05, 0.05], [0, 0, 0.1, 0.8, 0.1]]
    tokens, scores = greedy(table, 1, max_new_tokens=10)
    assert tokens.tolist() == [[3, 4, 2]]
    torch.testing.assert_close(scores, torch.log(torch.tensor([0.6 * 0.5 * 0.9])))


def test_finished_rows_are_padded_and_scores_frozen():
    table = [
        [[0, 0, 0.9, 0.1, 0], [0, 0, 0.1, 0.9, 0]],
        [[0, 0, 0.1, 0.9, 0], [0, 0, 0.8, 0.2, 0]],
    ]
    tokens, scores = greedy(table, 2, max_new_tokens=5)
    assert tokens.tolist() == [[2, 0], [3, 2]]
    torch.testing.assert_close(scores, torch.log(torch.tensor([0.9, 0.9 * 0.8])))


def test_max_new_tokens_bounds_the_output():
    table = [[0, 0, 0.1, 0.9, 0]] * 4
    tokens, _ = greedy(table, 1, max_new_tokens=3)
    assert tokens.tolist() == [[3, 3, 3]]


def test_strip_special():
    assert strip_special([5, 6, 0, 2, 7], eos_token_id=2, pad_token_id=0) == [5, 6]
