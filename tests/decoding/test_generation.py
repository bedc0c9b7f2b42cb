"""generate(): the one decoding path — its config, greedy as one beam, the rules (min_new_tokens, forced token,
n-best, early stopping), per-input limits and clean token lists, over encoder-decoders and over a decoder-only
toy model that implements nothing but the protocol."""

import itertools
import math

import pytest
import torch

from seq2bert.decoding.beam import beam_search
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import generate, strip_special
from seq2bert.decoding.greedy import greedy_search
from seq2bert.decoding.protocol import IncrementalDecoder
from seq2bert.errors import ConfigError
from seq2bert.models.seq2seq.config import Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq

SPECIAL = dict(decoder_start_token_id=5, eos_token_id=6, pad_token_id=0)


def tiny_model(eos_bias=1.0):
    """Weights drawn wide (init_range 1) and [EOS] favoured by ``eos_bias``: with the default, some hypotheses
    end early and others reach their limit."""
    torch.manual_seed(2)
    cfg = Seq2SeqConfig(
        src_vocab_size=20,
        tgt_vocab_size=20,
        embedding_dim=8,
        hidden_size=16,
        num_layers=2,
        init_range=1.0,
        dropout=0.0,
    )
    model = Seq2Seq(cfg).eval()
    with torch.no_grad():
        model.output.bias[6] += eos_bias
    return model


def batch():
    x = torch.tensor([[7, 8, 9, 10], [11, 12, 0, 0], [13, 0, 0, 0], [9, 14, 15, 0]])
    return x, x.ne(0).long()


def settings(**kw):
    return GenerationConfig(**{**SPECIAL, **kw})


# --- the config


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(num_beams=0, max_new_tokens=5), "num_beams"),
        (dict(num_beams=2, num_return_sequences=3, max_new_tokens=5), "num_return_sequences"),
        (dict(length_penalty_form="gnmt", max_new_tokens=5), "length_penalty_form"),
        (dict(min_new_tokens=-1, max_new_tokens=5), "min_new_tokens"),
        (dict(no_repeat_ngram_size=-2, max_new_tokens=5), "no_repeat_ngram_size"),
        (dict(), "set exactly one limit"),
        (dict(max_new_tokens=5, max_len_b=3), "set exactly one limit"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(max_len_a=1.5), "needs max_len_b"),
        (dict(max_len_a=-1.0, max_len_b=2), "max_len_a"),
        (dict(max_new_tokens=5, forced_eos_token_id=-1), "forced_eos_token_id"),
        (dict(max_new_tokens=5, eos_token_id=-1), "eos_token_id"),
    ],
)
def test_config_errors_name_the_field(bad, message):
    with pytest.raises(ConfigError, match=message):
        settings(**bad)


def test_config_limits():
    assert settings(max_new_tokens=7).max_lengths([1, 10]) == [7, 7]
    assert settings(max_len_a=1.5, max_len_b=2).max_lengths([1, 3, 0]) == [3, 6, 2]
    assert settings(max_len_b=4).max_lengths([9]) == [4]
    assert settings(max_new_tokens=3).length_penalty_form == "power"  # transformers' form by default


# --- greedy is beam search with one beam


@pytest.mark.parametrize(
    "rules",
    [
        dict(max_new_tokens=9),
        dict(max_len_a=1.5, max_len_b=1),
        dict(max_new_tokens=6, min_new_tokens=4, no_repeat_ngram_size=2),
        dict(max_len_a=1.0, max_len_b=2, forced_eos_token_id=6),
        dict(max_new_tokens=4, forced_eos_token_id=3, length_penalty_form="wu"),
        dict(max_new_tokens=6, bad_words_ids=[[7], [8, 9]]),
    ],
)
def test_greedy_through_generate_equals_beam_search_with_one_beam(rules):
    model, (x, mask) = tiny_model(), batch()
    config = settings(**rules)
    greedy = generate(model, x, mask, config)
    beam = beam_search(model, x, mask, config)
    assert greedy.hypotheses == greedy_search(model, x, mask, config)
    for g, b in zip(greedy.hypotheses, beam, strict=True):
        assert [h.tokens for h in g] == [h.tokens for h in b]
        assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-5)
        assert g[0].score == pytest.approx(b[0].score, abs=1e-5)


# --- the rules


def test_min_new_tokens_delays_eos():
    model, (x, mask) = tiny_model(eos_bias=3.0), batch()  # [EOS] first, unless forbidden
    for beams in (1, 3):
        free = generate(model, x, mask, settings(num_beams=beams, max_new_tokens=8))
        assert [hyps[0].tokens for hyps in free.hypotheses] == [[6]] * 4
        held = generate(model, x, mask, settings(num_beams=beams, max_new_tokens=8, min_new_tokens=3))
        for hyps in held.hypotheses:
            assert all(len(h.tokens) >= 4 and 6 not in h.tokens[:3] for h in hyps)


def test_forced_token_other_than_eos_ends_the_hypotheses_that_reach_the_limit():
    """forced_eos_token_id ≠ eos_token_id (transformers allows it): the forced token is the last of every
    hypothesis cut at the limit, with log-probability 0, and it does not finish a hypothesis early."""
    model, (x, mask) = tiny_model(), batch()
    forced_token = 4
    for beams in (1, 3):
        free = generate(model, x, mask, settings(num_beams=beams, max_new_tokens=5))
        forced = generate(model, x, mask, settings(num_beams=beams, max_new_tokens=5, forced_eos_token_id=4))
        for f, g in zip(free.hypotheses, forced.hypotheses, strict=True):
            for h in g:
                assert 6 in h.tokens or (len(h.tokens) == 5 and h.tokens[-1] == forced_token)
            if beams == 1 and 6 not in f[0].tokens:  # greedy: the same tokens, the last one replaced
                assert g[0].tokens == f[0].tokens[:4] + [forced_token]
        assert any(len(hyps[0].tokens) == 5 for hyps in forced.hypotheses)  # the limit is reached
        assert forced.sequences.size(1) == 1 + 5


def test_n_best_sequences_and_early_stopping():
    model, (x, mask) = tiny_model(), batch()
    out = generate(model, x, mask, settings(num_beams=4, num_return_sequences=3, max_new_tokens=6))
    assert out.sequences.shape[0] == 12 and (out.sequences[:, 0] == 5).all()
    for b, hyps in enumerate(out.hypotheses):
        assert len(hyps) == 3 and [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for i, h in enumerate(hyps):
            row = out.sequences[b * 3 + i, 1:].tolist()
            assert row[: len(h.tokens)] == h.tokens and set(row[len(h.tokens) :]) <= {0}
    early = generate(
        model, x, mask, settings(num_beams=4, num_return_sequences=3, max_new_tokens=6, early_stopping=True)
    )
    # early stopping can only keep hypotheses found no later, and never a better best one
    for e, h in zip(early.hypotheses, out.hypotheses, strict=True):
        assert e[0].score <= h[0].score + 1e-6


def test_token_ids_are_clean_and_per_input_limits_hold():
    """Each row gets its own maximum ⌊1.5 · |x| + b⌋, as if it were decoded alone (the recipes' settings)."""
    model, (x, mask) = tiny_model(eos_bias=0.0), batch()
    config = settings(max_len_a=1.5, max_len_b=2)
    rows = generate(model, x, mask, config).token_ids()
    for row, xi, m in zip(rows, x, mask, strict=True):
        n = int(m.sum())
        alone = generate(model, xi[None, :n], None, config)
        tokens = alone.hypotheses[0][0].tokens
        assert row == strip_special(tokens, eos_token_id=6, pad_token_id=0)
        assert len(tokens) <= int(1.5 * n) + 2
        assert 6 not in row and 0 not in row
    assert any(len(r) == int(1.5 * int(m.sum())) + 2 for r, m in zip(rows, mask, strict=True))  # limits bind
    beams = generate(model, x, mask, settings(num_beams=4, max_len_a=0.0, max_len_b=2))
    assert all(len(r) <= 2 for r in beams.token_ids())


def test_model_generate_is_generate_with_the_model_s_special_ids():
    model, (x, mask) = tiny_model(), batch()
    ids = model.generate(x, mask, num_beams=3, max_new_tokens=5, num_return_sequences=2)
    config = model.generation_config(num_beams=3, max_new_tokens=5, num_return_sequences=2)
    assert (config.decoder_start_token_id, config.forced_eos_token_id) == (5, None)
    assert torch.equal(ids, generate(model, x, mask, config).sequences)


# --- a decoder-only model: the search needs nothing but the protocol

LM_PAD, LM_EOS, LM_V = 0, 1, 6  # tokens 2 … 5 are words


class BigramLM:
    """p(y_t | y_<t) = P[y_{t−1}, y_t]: a language model with no encoder, implementing start / step / reorder
    only. The state is the number of tokens each row has been fed (so a wrong reorder is seen)."""

    def __init__(self, seed=0):
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(LM_V, LM_V, generator=g) * 2
        logits[:, LM_PAD] = -math.inf  # never [PAD]
        self.log_p = logits.log_softmax(-1)  # (V, V)
        self.prompts = []

    def start(self, input_ids, attention_mask):
        self.prompts.append(input_ids)  # the prompt but its last token: a bigram needs none of it
        return torch.zeros(input_ids.size(0), dtype=torch.long)

    def step(self, tokens, state):
        return self.log_p[tokens], state + 1  # (N, V)

    def reorder(self, state, index):
        return state.index_select(0, index)


def lm_settings(**kw):
    return GenerationConfig(eos_token_id=LM_EOS, pad_token_id=LM_PAD, decoder_start_token_id=None, **kw)


def brute_force(lm, last, max_new_tokens, alpha):
    """Every continuation of at most max_new_tokens tokens after token ``last``, best first."""
    found = []
    for n in range(1, max_new_tokens + 1):
        for body in itertools.product(range(2, LM_V), repeat=n - 1):
            for end in [LM_EOS, *range(2, LM_V)] if n == max_new_tokens else [LM_EOS]:
                tokens = [*body, end]
                log_p = sum(float(lm.log_p[a, b]) for a, b in zip([last, *tokens], tokens, strict=False))
                found.append((tokens, log_p / n**alpha))
    return sorted(found, key=lambda f: -f[1])


def test_search_serves_a_decoder_only_model_through_the_protocol():
    lm = BigramLM()
    assert isinstance(lm, IncrementalDecoder) and not hasattr(lm, "encode")
    prompts = torch.tensor([[LM_PAD, 3, 4], [2, 5, 3]])  # left-padded, as transformers wants
    mask = prompts.ne(LM_PAD).long()
    out = generate(lm, prompts, mask, lm_settings(num_beams=100, num_return_sequences=5, max_new_tokens=3))
    assert torch.equal(lm.prompts[-1], prompts[:, :-1])  # start consumed the prompt but its last token
    # 100 beams hold all 85 hypotheses of at most 3 tokens: nothing is pruned, the n-best list is exact
    for b, last in enumerate((4, 3)):  # the first token fed is the prompt's last
        expected = brute_force(lm, last, 3, alpha=1.0)[:5]
        assert [h.tokens for h in out.hypotheses[b]] == [tokens for tokens, _ in expected]
        assert [h.score for h in out.hypotheses[b]] == pytest.approx([s for _, s in expected], abs=1e-5)
        # sequences: the prompt, then the new tokens (transformers' decoder-only convention)
        assert out.sequences[b * 5, :3].tolist() == prompts[b].tolist()
    greedy = generate(lm, prompts, mask, lm_settings(max_new_tokens=4))
    for b, last in enumerate((4, 3)):
        tokens = greedy.hypotheses[b][0].tokens
        for prev, y in zip([last, *tokens], tokens, strict=False):
            assert y == int(lm.log_p[prev].argmax())


def test_decoder_only_no_repeat_counts_the_prompt_and_limits_follow_the_prompt_length():
    lm = BigramLM()
    lm.log_p[:, LM_EOS] = -20.0  # never ends: only the rules decide
    prompt = torch.tensor([[2, 3, 2]])
    blocked = generate(lm, prompt, None, lm_settings(max_new_tokens=4, no_repeat_ngram_size=2))
    tokens = blocked.hypotheses[0][0].tokens
    full = [2, 3, 2, *tokens]
    assert len(set(zip(full, full[1:], strict=False))) == len(full) - 1  # no bigram twice, prompt included
    assert tokens[0] != 3  # "2 3" is in the prompt
    by_length = generate(
        lm, torch.tensor([[0, 0, 4], [2, 3, 4]]), None, lm_settings(max_len_a=1.0, max_len_b=1)
    )
    assert [len(h[0].tokens) for h in by_length.hypotheses] == [2, 4]  # |x| = 1 and 3 real prompt tokens


@pytest.mark.parametrize("num_beams", [1, 3])
def test_without_an_end_token_every_hypothesis_runs_to_its_maximum_length(num_beams):
    """eos_token_id None (GPT-1 has no end token): the token that would end a hypothesis is just a token."""
    lm = BigramLM()
    lm.log_p[:, LM_EOS] = 5.0  # the most probable token after every token
    prompt = torch.tensor([[2, 3, 4]])
    settings = dict(decoder_start_token_id=None, num_beams=num_beams, max_new_tokens=4, min_new_tokens=2)
    out = generate(lm, prompt, None, GenerationConfig(eos_token_id=None, pad_token_id=LM_PAD, **settings))
    assert out.hypotheses[0][0].tokens == [LM_EOS] * 4
    assert out.sequences.tolist() == [[2, 3, 4, LM_EOS, LM_EOS, LM_EOS, LM_EOS]]


@pytest.mark.parametrize("num_beams", [1, 3])
def test_bad_words_are_never_generated(num_beams):
    """A banned token never appears; a banned pair never appears in a row, its first token still may."""
    model = tiny_model(eos_bias=-5.0)
    x, mask = batch()
    plain = generate(model, x, mask, settings(num_beams=num_beams, max_new_tokens=8)).sequences[:, 1:]
    token = int(plain.flatten().mode().values)  # the most generated token
    pairs = list(zip(plain[:, :-1].flatten().tolist(), plain[:, 1:].flatten().tolist(), strict=True))
    a, b = max(set(pairs), key=pairs.count)  # the most generated pair
    banned = generate(
        model, x, mask, settings(num_beams=num_beams, max_new_tokens=8, bad_words_ids=[[token]])
    )
    assert token in plain and token not in banned.sequences[:, 1:]
    out = generate(model, x, mask, settings(num_beams=num_beams, max_new_tokens=8, bad_words_ids=[[a, b]]))
    rows = out.sequences[:, 1:].tolist()
    assert all((a, b) not in zip(r[:-1], r[1:], strict=True) for r in rows)
    with pytest.raises(ConfigError, match="bad_words_ids"):
        settings(max_new_tokens=8, bad_words_ids=[[]])
