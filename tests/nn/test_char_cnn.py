"""The character CNN (nn/char_cnn.py): its one matrix product equals the filters' own convolutions, the
highway layers their equation; a token's vector depends on its characters only, padding tokens are zero."""

import numpy as np
import torch
import torch.nn.functional as F

from seq2bert.data.characters import PAD_CHAR, word_char_ids
from seq2bert.nn.char_cnn import CharacterCNN, Highway

FILTERS = [(1, 4), (2, 4), (3, 8), (5, 6)]
WORDS = ["cat", "a", "Übermäßig", "internationalisation", "x" * 70, "bank"]


def by_convolutions(cnn, chars):
    """Kim et al.'s character CNN computed with F.conv1d, filter by filter."""
    e = cnn.embedding(chars).transpose(1, 2)  # (N, d, W)
    y = torch.cat([torch.relu(F.conv1d(e, c.weight, c.bias).amax(-1)) for c in cnn.convolutions], -1)
    for transform, gate in zip(cnn.highway.transform, cnn.highway.gate, strict=True):
        g = torch.sigmoid(gate(y))
        y = g * torch.relu(transform(y)) + (1 - g) * y
    return cnn.projection(y)


def spelled(words):
    return torch.from_numpy(np.stack([word_char_ids(w) for w in words]))


def test_the_filter_matrix_equals_the_convolutions():
    torch.manual_seed(0)
    for padding_character in (None, PAD_CHAR):
        cnn = CharacterCNN(262, 6, FILTERS, 2, 10, padding_character=padding_character)
        torch.nn.init.normal_(cnn.embedding.weight)  # the padding character's row matters
        chars = spelled(WORDS)
        torch.testing.assert_close(cnn.encode(chars), by_convolutions(cnn, chars), rtol=0, atol=1e-5)
        # only the starts where a word has characters are computed: a short word alone is the same
        torch.testing.assert_close(
            cnn.encode(chars[1:2]), by_convolutions(cnn, chars[1:2]), rtol=0, atol=1e-5
        )


def test_a_token_is_its_characters_alone_and_padding_is_zero():
    torch.manual_seed(0)
    cnn = CharacterCNN(262, 6, FILTERS, 1, 10, padding_character=PAD_CHAR)
    chars = spelled(WORDS)
    batch = torch.zeros(2, 5, 50, dtype=torch.long)  # padded batch: row 0 has 3 tokens, row 1 has 5
    batch[0, :3] = chars[:3]
    batch[1] = chars[1:6]
    out = cnn(batch)
    assert out.shape == (2, 5, 10)
    assert torch.equal(out[0, 3:], torch.zeros(2, 10))  # padding tokens
    alone = cnn(chars[1:2][None])[0, 0]
    for vector in (out[0, 1], out[1, 0]):  # "a" in either row, next to padding or not
        torch.testing.assert_close(vector, alone, rtol=0, atol=1e-6)
    torch.testing.assert_close(out[1, 4], cnn(chars[5:6][None])[0, 0], rtol=0, atol=1e-6)


def test_highway_is_its_equation():
    torch.manual_seed(0)
    h = Highway(4, 1)
    assert torch.equal(h.gate[0].bias, torch.full((4,), -2.0))  # mostly carried at the start
    y = torch.randn(3, 4)
    g = torch.sigmoid(y @ h.gate[0].weight.T + h.gate[0].bias)
    expected = g * torch.relu(y @ h.transform[0].weight.T + h.transform[0].bias) + (1 - g) * y
    torch.testing.assert_close(h(y), expected)
