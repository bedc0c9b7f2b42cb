import torch

from seq2bert.decoding.greedy import greedy_decode, strip_special


class TableModel:
    """A fake decoder whose next-token log-probabilities come from a hand-made table indexed by step."""

    def __init__(self, table):
        self.table = torch.log(torch.tensor(table, dtype=torch.float))  # (T, V) or (T, B, V)

    def encode(self, input_ids, attention_mask):
        return torch.zeros(input_ids.size(0), dtype=torch.long)  # the step counter is the state

    def decode_step(self, tokens, state):
        t = int(state[0])
        logits = self.table[t]
        if logits.dim() == 1:
            logits = logits.expand(tokens.size(0), -1)
        return logits, state + 1


def test_greedy_takes_the_argmax_and_stops_at_eos():
    # vocab: 0 pad, 1 bos, 2 eos, 3 a, 4 b
    table = [[0, 0, 0.1, 0.6, 0.3], [0, 0, 0.2, 0.3, 0.5], [0, 0, 0.9, 0.05, 0.05], [0, 0, 0.1, 0.8, 0.1]]
    tokens, scores = greedy_decode(
        TableModel(table), torch.zeros(1, 3, dtype=torch.long), bos_token_id=1, eos_token_id=2, max_len=10
    )
    assert tokens.tolist() == [[3, 4, 2]]
    torch.testing.assert_close(scores, torch.log(torch.tensor([0.6 * 0.5 * 0.9])))


def test_finished_rows_are_padded_and_scores_frozen():
    table = [
        [[0, 0, 0.9, 0.1, 0], [0, 0, 0.1, 0.9, 0]],
        [[0, 0, 0.1, 0.9, 0], [0, 0, 0.8, 0.2, 0]],
    ]
    tokens, scores = greedy_decode(
        TableModel(table), torch.zeros(2, 1, dtype=torch.long), bos_token_id=1, eos_token_id=2, max_len=5
    )
    assert tokens.tolist() == [[2, 0], [3, 2]]
    torch.testing.assert_close(scores, torch.log(torch.tensor([0.9, 0.9 * 0.8])))


def test_max_len_bounds_the_output():
    table = [[0, 0, 0.1, 0.9, 0]] * 4
    tokens, _ = greedy_decode(
        TableModel(table), torch.zeros(1, 1, dtype=torch.long), bos_token_id=1, eos_token_id=2, max_len=3
    )
    assert tokens.tolist() == [[3, 3, 3]]


def test_strip_special():
    assert strip_special([5, 6, 0, 2, 7], eos_token_id=2, pad_token_id=0) == [5, 6]
