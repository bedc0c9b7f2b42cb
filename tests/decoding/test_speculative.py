"""Speculative decoding (seq2bert/decoding/speculative.py): greedy outputs token for token equal to the
target's own greedy decoding (GPT-2 and the Transformer, batches, the rules), sampling exact in
distribution (counted on a toy model against the exact probabilities), the caches rewound, the refusals."""

import collections
import itertools
import math

import pytest
import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import generate
from seq2bert.decoding.speculative import Acceptance, speculative_search
from seq2bert.errors import ConfigError
from tests.models.tiny_decoders import V, tiny_gpt2, tiny_transformer


def gpt2(layers, seed, **kw):
    return tiny_gpt2(layers, seed, **kw)


def transformer(layers, seed):
    return tiny_transformer(layers, seed)


def prompts(left: bool):
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(3, V, (4, 7), generator=g)
    mask = torch.ones_like(ids)
    if left:
        mask[1, :3], mask[3, :5] = 0, 0
    else:
        mask[1, 4:], mask[3, 2:] = 0, 0
    return ids.masked_fill(mask == 0, 0), mask


def sharpened(model, scale=6.0):
    """The model with its output layer scaled: confident, so that a similar draft often agrees."""
    with torch.no_grad():
        head = model.lm_head if hasattr(model, "lm_head") else model.output
        head.weight.mul_(scale)
    return model


SETTINGS = {
    "greedy": dict(max_new_tokens=20),
    "no repeated bigram, at least 5 tokens": dict(
        max_new_tokens=20, no_repeat_ngram_size=2, min_new_tokens=5
    ),
    "repetition penalty 1.3": dict(max_new_tokens=16, repetition_penalty=1.3),
    "one draft token": dict(max_new_tokens=12, num_draft_tokens=1),
    "eight draft tokens": dict(max_new_tokens=25, num_draft_tokens=8),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("family", ["gpt2", "transformer"])
def test_greedy_speculative_decoding_gives_the_targets_greedy_tokens(family, setting):
    make = gpt2 if family == "gpt2" else transformer
    target = sharpened(make(2, 0))
    ids, mask = prompts(left=family == "gpt2")
    reference = target.generate(ids, mask, **SETTINGS[setting])
    for draft in (target, sharpened(make(1, 1)), make(1, 2)):  # itself, a similar one, a random one
        assert torch.equal(target.generate(ids, mask, draft=draft, **SETTINGS[setting]), reference)


def test_the_draft_itself_is_always_kept_and_another_sometimes():
    target = sharpened(gpt2(2, 0))
    ids, mask = prompts(left=True)
    config = target.generation_config(max_new_tokens=20, num_draft_tokens=4)
    counts = {}
    for name, draft in (("self", target), ("other", gpt2(1, 3))):
        acceptance = Acceptance()
        speculative_search(target, ids, mask, config, draft=draft, acceptance=acceptance)
        counts[name] = acceptance
    assert counts["self"].rate == 1.0 and counts["self"].tokens_per_pass > 4
    assert counts["other"].rate < 1.0 and counts["other"].tokens_per_pass >= 1.0


def test_the_caches_are_rewound_to_the_kept_tokens():
    """After a rewind, decoding on gives the logits of a model that never saw the dropped tokens."""
    model = gpt2(2, 0)
    ids = torch.randint(3, V, (2, 6))
    config = model.generation_config(max_new_tokens=5)
    from seq2bert.decoding.protocol import begin

    start = begin(model, ids, torch.ones_like(ids), config)
    logits, state = model.step_many(torch.stack([start.tokens, ids[:, 0], ids[:, 1]], 1), start.state)
    state = model.rewind(state, 2)  # keep the first of the three
    after, _ = model.step(ids[:, 2], state)
    full = model(torch.cat([ids, ids[:, 2:3]], 1)).logits[:, -1]
    assert torch.allclose(after, full, atol=1e-5)
    assert torch.allclose(logits[:, 0], model(ids).logits[:, -1], atol=1e-5)


class TableLM:
    """p(y_t | y_{t−1}) = P[y_{t−1}, y_t] with step_many and rewind: the state is each row's history."""

    def __init__(self, logits):
        self.log_p = logits.log_softmax(-1)  # (V, V)

    def start(self, input_ids, attention_mask):
        return input_ids.clone()

    def step(self, tokens, state):
        return self.log_p[tokens], torch.cat([state, tokens[:, None]], 1)

    def step_many(self, tokens, state):
        return self.log_p[tokens], torch.cat([state, tokens], 1)  # (N, k, V)

    def rewind(self, state, n):
        return state[:, : state.size(1) - n]

    def reorder(self, state, index):
        return state.index_select(0, index)


def exact(log_p, last, n):
    """The probability of every continuation of n tokens after ``last``."""
    p = log_p.exp()
    return {
        seq: math.prod(float(p[a, b]) for a, b in zip((last, *seq), seq, strict=False))
        for seq in itertools.product(range(p.size(0)), repeat=n)
    }


def counted(model, draft, n, rows, **settings):
    config = GenerationConfig(
        eos_token_id=None, pad_token_id=0, do_sample=True, seed=7, max_new_tokens=n, **settings
    )
    ids = torch.full((rows, 2), 1)
    out = generate(model, ids, None, config, draft=draft).sequences[:, 2:]
    return collections.Counter(tuple(r) for r in out.tolist())


def chi_square(counts, probs, rows):
    return sum((counts.get(s, 0) - rows * p) ** 2 / (rows * p) for s, p in probs.items() if p > 0)


def test_speculative_sampling_draws_from_the_targets_distribution():
    g = torch.Generator().manual_seed(0)
    target = TableLM(torch.randn(4, 4, generator=g) * 1.5)
    draft = TableLM(torch.randn(4, 4, generator=g) * 1.5)  # a different distribution
    rows, n = 6000, 3
    counts = counted(target, draft, n, rows, num_draft_tokens=2)
    probs = exact(target.log_p, 1, n)
    # 64 outcomes, 63 degrees of freedom: the 99.9 % quantile of χ²(63) is about 104
    assert chi_square(counts, probs, rows) < 104
    # the test can fail: the draft's own distribution is far from the target's
    assert chi_square(counts, exact(draft.log_p, 1, n), rows) > 1000


def test_speculative_sampling_keeps_temperature_and_top_k():
    g = torch.Generator().manual_seed(1)
    target = TableLM(torch.randn(4, 4, generator=g))
    draft = TableLM(torch.randn(4, 4, generator=g))
    rows, n = 4000, 2
    counts = counted(target, draft, n, rows, temperature=0.7, top_k=2)
    warped = target.log_p / 0.7
    kth = warped.topk(2, dim=-1).values[:, -1:]
    filtered = TableLM(warped.masked_fill(warped < kth, -math.inf))
    probs = exact(filtered.log_p, 1, n)
    assert set(counts) <= {s for s, p in probs.items() if p > 0}
    dof = sum(p > 0 for p in probs.values()) - 1
    assert chi_square(counts, probs, rows) < 3 * dof + 20


def test_refusals():
    target = gpt2(2, 0)
    ids, mask = prompts(left=True)
    with pytest.raises(ConfigError, match="not beam search"):
        target.generate(ids, mask, draft=gpt2(1, 1), num_beams=2)
    with pytest.raises(ConfigError, match="vocabulary"):
        target.generate(ids, mask, draft=tiny_gpt2(1, 0, vocab=V + 3))
    with pytest.raises(ConfigError, match="decodes with a draft model"):
        target.generate(ids, mask, strategy="speculative")
    with pytest.raises(ConfigError, match="step_many and rewind"):
        from tests.decoding.test_generation import BigramLM

        generate(BigramLM(), ids, mask, target.generation_config(max_new_tokens=3), draft=target)
