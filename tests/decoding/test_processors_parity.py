"""The rules and sampling filters of seq2bert/decoding against transformers' logits processors and warpers on
random logits and histories: the same tokens kept, the same probabilities — the repetition penalty, no-repeat
n-grams, temperature, top-k and top-p alone, and all of them in transformers' order as greedy decoding and
sampling apply them (penalty on the logits, then the log-softmax, the −∞ rules, the filters)."""

import math

import pytest
import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.rules import apply_rules, penalize_repetitions, repeated_ngrams
from seq2bert.decoding.sampling import filtered_scores

lp = pytest.importorskip("transformers.generation.logits_process")

N, V, T = 12, 40, 15


def random_case(seed: int, alphabet: int = 8):
    """Logits of both signs (the penalty divides some, multiplies others), histories drawn from a small part
    of the vocabulary (so that tokens and n-grams repeat), and left padding of 0 to 5 tokens per row."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(N, V, generator=g) * 3
    history = torch.randint(0, alphabet, (N, T), generator=g)
    pads = torch.randint(0, 6, (N,), generator=g)
    mask = torch.arange(T)[None, :] >= pads[:, None]  # (N, T) False on the left padding
    return logits, history.masked_fill(~mask, V - 1), mask, pads


@pytest.mark.parametrize("penalty", [1.3, 2.0, 0.7])
@pytest.mark.parametrize("seed", range(3))
def test_repetition_penalty_equals_transformers(seed, penalty):
    logits, history, mask, pads = random_case(seed)
    expected = lp.RepetitionPenaltyLogitsProcessor(penalty, prompt_ignore_length=pads)(
        history, logits.clone()
    )
    assert torch.equal(penalize_repetitions(logits, history, mask, penalty), expected)
    # the padding token (V − 1) is not penalised where it is only padding
    unpadded = lp.RepetitionPenaltyLogitsProcessor(penalty)(history, logits.clone())
    assert torch.equal(penalize_repetitions(logits, history, None, penalty), unpadded)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_no_repeat_ngrams_equal_transformers(seed, n):
    logits, history, _, _ = random_case(seed, alphabet=3)
    expected = lp.NoRepeatNGramLogitsProcessor(n)(history, logits.clone())
    banned = repeated_ngrams(history, n, V)
    assert banned.any()
    assert torch.equal(expected.isinf(), banned)


FILTERS = [
    dict(temperature=0.7, top_k=0, top_p=1.0),
    dict(temperature=1.0, top_k=5, top_p=1.0),
    dict(temperature=1.0, top_k=0, top_p=0.8),
    dict(temperature=1.3, top_k=10, top_p=0.9),
    dict(temperature=0.5, top_k=3, top_p=0.3),
]


def warpers(temperature, top_k, top_p):
    """transformers' warpers in its order, as _get_logits_processor builds them."""
    out = []
    if temperature != 1.0:
        out.append(lp.TemperatureLogitsWarper(temperature))
    if top_k:
        out.append(lp.TopKLogitsWarper(top_k))
    if top_p < 1.0:
        out.append(lp.TopPLogitsWarper(top_p))
    return out


@pytest.mark.parametrize("settings", FILTERS, ids=str)
@pytest.mark.parametrize("seed", range(4))
def test_sampling_filters_keep_what_transformers_keeps(seed, settings):
    logits, history, _, _ = random_case(seed)
    expected = lp.LogitsProcessorList(warpers(**settings))(history, logits.clone())
    ours = filtered_scores(logits.log_softmax(-1), **settings)  # greedy.py samples from log-probabilities
    assert torch.equal(ours.isfinite(), expected.isfinite())
    torch.testing.assert_close(ours.softmax(-1), expected.softmax(-1), rtol=0, atol=1e-6)


@pytest.mark.parametrize("settings", FILTERS[3:], ids=str)
@pytest.mark.parametrize("seed", range(4))
def test_the_whole_chain_in_transformers_order(seed, settings):
    """Repetition penalty, no-repeat bigrams, min_new_tokens, then the warpers: the distribution drawn from."""
    logits, history, mask, pads = random_case(seed)
    eos = 3
    config = GenerationConfig(eos_token_id=eos, pad_token_id=V - 1, max_new_tokens=5, min_new_tokens=2,
                              no_repeat_ngram_size=2, repetition_penalty=1.4, do_sample=True, **settings)  # fmt: skip
    chain = lp.LogitsProcessorList(
        [
            lp.RepetitionPenaltyLogitsProcessor(1.4, prompt_ignore_length=pads),
            lp.NoRepeatNGramLogitsProcessor(2),
            lp.MinNewTokensLengthLogitsProcessor(T, 2, eos),
            *warpers(**settings),
        ]
    )
    expected = chain(history, logits.clone()).softmax(-1)
    # greedy.py at step t = 0: the penalty on the logits, the log-softmax, the rules, the filters
    scores = penalize_repetitions(logits, history, mask, 1.4).log_softmax(-1)
    scores = apply_rules(scores, 0, history, None, config)
    ours = filtered_scores(scores, config.temperature, config.top_k, config.top_p).softmax(-1)
    assert torch.equal(ours > 0, expected > 0) and float(ours[:, eos].max()) == 0.0
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-6)


def test_invalid_settings_are_value_errors_naming_the_setting():
    for field, value in (("top_p", 0.0), ("top_p", 1.5), ("temperature", 0.0), ("temperature", -1.0),
                         ("top_k", -1), ("repetition_penalty", 0.0), ("repetition_penalty", -2.0),
                         ("temperature", math.nan)):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            GenerationConfig(eos_token_id=1, pad_token_id=0, max_new_tokens=3, **{field: value})
