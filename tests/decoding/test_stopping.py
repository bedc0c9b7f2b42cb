"""Stopping criteria and streamers (decoding/stopping.py): StopStrings on decoded text — a match must end in
the last token, may start in earlier ones or the prompt, may overhang, and a string already there does not
stop a row again; the searches end a row that meets a criterion with its token kept, and stream each step."""

import pytest
import torch

from seq2bert.data.tokenization import Tokenizer
from seq2bert.decoding.generation import generate
from seq2bert.decoding.stopping import StopStrings
from seq2bert.errors import ConfigError
from tests.decoding.test_generation import LM_EOS, LM_PAD, BigramLM, lm_settings


@pytest.fixture(scope="module")
def tok():
    texts = ["the stop sign stopped a stopper; las topper 🙂 naïve"] * 10
    return Tokenizer.train(texts, kind="bytelevel-bpe", vocab_size=300, min_frequency=1)


def pieces(tok, *texts):
    """Token ids that spell ``texts`` piece by piece (each piece encoded on its own)."""
    return [i for text in texts for i in tok.encode(text).ids]


class Spelled:
    """A tokenizer whose token i is the string ``vocab[i]``: the matching logic alone, one piece a token."""

    def __init__(self, vocab):
        self.vocab = vocab

    def decode_batch(self, rows, skip_special_tokens=True):
        return ["".join(self.vocab[i] for i in row) for row in rows]

    def ids(self, *split):
        return torch.tensor([[self.vocab.index(piece) for piece in split]])


SPELLED = Spelled(["x", "st", "op", "stop", "opera", "sto", "pper", "las", "topper", "s", "to", "pped", "at",
                   "tion"])  # fmt: skip


@pytest.mark.parametrize(
    "split",
    [("st", "op"), ("stop",), ("st", "opera"), ("sto", "pper"), ("las", "topper"), ("s", "to", "pped")],
)
def test_a_stop_string_ending_in_the_last_token_stops(split):
    """transformers' StopStringCriteria examples: every one of them matches "stop"."""
    assert StopStrings(SPELLED, ["stop"])(SPELLED.ids("x", *split)).tolist() == [True]


@pytest.mark.parametrize("split", [("stop", "at"), ("st", "op", "at"), ("st", "opera", "tion")])
def test_a_stop_string_that_ended_earlier_does_not_stop(split):
    assert StopStrings(SPELLED, ["stop"])(SPELLED.ids(*split)).tolist() == [False]


def test_rows_are_read_apart_and_padding_is_no_text(tok):
    eot = tok.eos_token_id
    rows = [[eot, eot, *pieces(tok, "a st", "op")], pieces(tok, "a stop", " ", "now", "!")]
    n = max(map(len, rows))
    ids = torch.tensor([[eot] * (n - len(r)) + r for r in rows])  # left-padded with <|endoftext|>
    assert StopStrings(tok, ["stop", "now!"])(ids).tolist() == [True, True]
    assert StopStrings(tok, ["top n"])(ids).tolist() == [False, False]


def test_a_token_that_completes_a_character_can_complete_a_stop_string(tok):
    """🙂 is four bytes; in bytes alone (one byte-level token each) the first three decode to U+FFFD."""
    ids = pieces(tok, "ok") + [tok.token_to_id(piece) for piece in tok.backend.pre_tokenizer.pre_tokenize_str(
        "🙂")[0][0]]  # fmt: skip
    assert len(ids) == len(pieces(tok, "ok")) + 4
    criterion = StopStrings(tok, ["ok🙂"])
    assert criterion(torch.tensor([ids])).tolist() == [True]
    assert criterion(torch.tensor([ids[:-1]])).tolist() == [False]


def test_stop_strings_are_checked(tok):
    for bad in ([], [""], [3]):
        with pytest.raises(ConfigError, match="stop_strings"):
            StopStrings(tok, bad)
    with pytest.raises(ConfigError, match="tokenizer"):
        StopStrings(None, ["x"])
    assert StopStrings(tok, "stop").strings == ["stop"]


class EndsAfter:
    """A criterion: the row's last token is ``token``."""

    def __init__(self, token):
        self.token = token
        self.calls = []

    def __call__(self, sequences):
        self.calls.append(sequences.shape)
        return sequences[:, -1].eq(self.token)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_a_row_that_meets_the_criterion_ends_with_its_token(num_beams):
    lm = BigramLM()
    lm.log_p[:, LM_EOS] = -20.0  # only the criterion and the limit end a row
    prompts = torch.tensor([[LM_PAD, 3, 4], [2, 5, 3]])
    mask = prompts.ne(LM_PAD).long()
    settings = lm_settings(num_beams=num_beams, max_new_tokens=8)
    plain = generate(lm, prompts, mask, settings).hypotheses
    word = plain[0][0].tokens[2]  # a token the best hypothesis of input 0 takes third
    criterion = EndsAfter(word)
    out = generate(lm, prompts, mask, settings, stopping=criterion)
    for hyps in out.hypotheses:
        tokens = hyps[0].tokens
        assert (tokens[-1] == word and word not in tokens[:-1]) or (len(tokens) == 8 and word not in tokens)
    assert out.hypotheses[0][0].tokens[-1] == word and len(out.hypotheses[0][0].tokens) <= 3
    assert all(shape[1] > prompts.size(1) for shape in criterion.calls)  # the prompt and the new tokens


def test_greedy_streams_every_step_and_beam_search_refuses_to():
    lm = BigramLM()
    prompts = torch.tensor([[2, 5, 3]])
    seen = []
    out = generate(
        lm, prompts, None, lm_settings(max_new_tokens=6), streamer=lambda t: seen.append(t.tolist())
    )
    assert [t for (t,) in seen] == out.sequences[0, 3:].tolist()
    with pytest.raises(ConfigError, match="streamer"):
        generate(lm, prompts, None, lm_settings(num_beams=2, max_new_tokens=6), streamer=print)
