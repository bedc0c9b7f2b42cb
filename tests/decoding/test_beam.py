import itertools
import math
import random

import pytest
import torch

from seq2bert.decoding.beam import _topk, _topk_exact, beam_search
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import generate, pad_hypotheses
from seq2bert.decoding.greedy import greedy_search
from seq2bert.decoding.rules import Hypothesis
from seq2bert.models.seq2seq.config import Seq2SeqConfig
from seq2bert.models.seq2seq.model import Seq2Seq

# vocabulary of the hand-made tables: 0 pad, 1 bos, 2 eos, 3 a, 4 b, 5 c
PAD, BOS, EOS, A, B_, C = range(6)
V = 6


def dist(eos=0.0, a=0.0, b=0.0, c=0.0):
    return [0.0, 0.0, eos, a, b, c]


EOS_ONLY = dist(eos=1.0)


class PrefixTableModel:
    """A fake encoder-decoder, implementing only the decoding protocol, whose next-token probabilities depend on
    the source and the whole prefix.

    ``next_probs(source, prefix)`` gives the probabilities over the vocabulary after the generated tokens
    ``prefix`` (a tuple, [BOS] excluded) for an input whose first source token is ``source``. The state is
    the (N, 1 + steps) tensor [source, fed tokens …], so a search that reorders it wrongly sees wrong prefixes.
    """

    def __init__(self, next_probs):
        self.next_probs = next_probs

    def start(self, input_ids, attention_mask):
        return input_ids[:, :1].clone()  # (B, 1)

    def step(self, tokens, state):
        state = torch.cat([state, tokens[:, None]], dim=1)  # (N, 2 + t): source, [BOS], y_1 … y_t
        probs = [self.next_probs(row[0], tuple(row[2:])) for row in state.tolist()]
        return torch.tensor(probs).log(), state  # (N, V)

    @staticmethod
    def reorder(state, index):
        return state.index_select(0, index)


def table_model(table, default=EOS_ONLY):
    return PrefixTableModel(lambda source, prefix: table.get(prefix, default))


def config(**settings):
    """A GenerationConfig with this file's special ids; by default 5 beams, GNMT's length penalty and a
    limit of 200 new tokens."""
    special = dict(decoder_start_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
    defaults = dict(num_beams=5, length_penalty_form="wu")
    if "max_new_tokens" not in settings:
        defaults["max_len_b"] = 200
    return GenerationConfig(**special, **{**defaults, **settings})


def search(model, input_ids=None, attention_mask=None, **settings):
    """generate() (greedy for one beam, beam search otherwise) on one source [7] unless told."""
    if input_ids is None:
        input_ids = torch.tensor([[7]])
    return generate(model, input_ids, attention_mask, config(**settings))


def summary(output):
    """[[(tokens, score, log_prob), …] per input] for comparisons."""
    return [[(h.tokens, h.score, h.log_prob) for h in hyps] for hyps in output.hypotheses]


def assert_hypotheses(hyps, expected):
    """expected: [(tokens, score, log_prob), …] best first."""
    assert [h.tokens for h in hyps] == [tokens for tokens, _, _ in expected]
    for h, (_, score, log_prob) in zip(hyps, expected, strict=True):
        assert h.score == pytest.approx(score, rel=1e-6)
        assert h.log_prob == pytest.approx(log_prob, rel=1e-6)


# Greedy takes a (0.6) and then [EOS] (0.4): P = 0.24; b (0.4) then [EOS] (0.9) has P = 0.36.
GREEDY_TRAP = {
    (): dist(a=0.6, b=0.4),
    (A,): dist(eos=0.4, a=0.3, c=0.3),
    (B_,): dist(eos=0.9, a=0.1),
}


def test_beam_finds_the_sequence_greedy_misses():
    model = table_model(GREEDY_TRAP)
    assert search(model, num_beams=1, max_new_tokens=5).sequences.tolist() == [[BOS, A, EOS]]
    out = search(model, num_beams=2, num_return_sequences=2, length_penalty=0.0)
    assert_hypotheses(
        out.hypotheses[0],
        [([B_, EOS], math.log(0.36), math.log(0.36)), ([A, EOS], math.log(0.24), math.log(0.24))],
    )


def test_state_follows_its_beam_through_reorder():
    # Step 2 keeps b a and b c, both extensions of beam 1 (b): the decoder state of row 0 must be
    # replaced by that of row 1, or row 0 would go on from the prefix a.
    table = {
        (): dist(a=0.6, b=0.4),
        (A,): dist(eos=0.34, a=0.33, c=0.33),  # a [EOS] = 0.204 finishes; a a, a c = 0.198 fall behind
        (B_,): dist(a=0.5, c=0.5),  # b a, b c = 0.2
        (B_, A): dist(eos=0.9, c=0.1),
        (B_, C): dist(eos=0.5, b=0.5),
    }
    out = search(table_model(table), num_beams=2, num_return_sequences=2, length_penalty=0.0)
    log_p1, log_p2 = math.log(0.6 * 0.34), math.log(0.4 * 0.5 * 0.9)
    assert_hypotheses(out.hypotheses[0], [([A, EOS], log_p1, log_p1), ([B_, A, EOS], log_p2, log_p2)])


def test_ties_prefer_the_lower_token_id():
    table = {(): dist(a=0.4, b=0.4, eos=0.2)}  # a and b tie; after either, [EOS] is certain
    out = search(table_model(table), num_beams=1)
    assert [h.tokens for h in out.hypotheses[0]] == [[A, EOS]]
    out = search(table_model(table), num_beams=2, num_return_sequences=2, length_penalty=0.0)
    assert [h.tokens for h in out.hypotheses[0]] == [[A, EOS], [B_, EOS]]


def test_ties_prefer_the_lower_beam_index_over_the_lower_token_id():
    # Beams after step 1: a (beam 0), b (beam 1). Step 2 has four candidates of probability 0.25; the two
    # kept are both extensions of beam 0, although b → a has the lowest token id.
    table = {(): dist(a=0.5, b=0.5), (A,): dist(b=0.5, c=0.5), (B_,): dist(a=0.5, c=0.5)}
    out = search(table_model(table), num_beams=2, num_return_sequences=2, length_penalty=0.0)
    log_p = math.log(0.25)
    assert_hypotheses(out.hypotheses[0], [([A, B_, EOS], log_p, log_p), ([A, C, EOS], log_p, log_p)])


def test_topk_breaks_ties_by_index():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0, 3.0], [0.0, 0.0, 0.0, 0.0, 0.0, -math.inf]])
    values, indices = _topk(x, 3)
    assert indices.tolist() == [[1, 2, 4], [0, 1, 2]]
    assert values.tolist() == [[3.0, 3.0, 3.0], [0.0, 0.0, 0.0]]
    x = torch.tensor([[-math.inf, 5.0, -math.inf, -math.inf]])  # −∞ fills the rest, in no promised order
    values, indices = _topk(x, 3)
    assert values.tolist() == [[5.0, -math.inf, -math.inf]]
    assert indices[0, 0] == 1 and sorted(indices[0, 1:].tolist()) in ([0, 2], [0, 3], [2, 3])


def test_topk_fast_path_equals_the_counting_rule():
    """Small integer scores tie everywhere: inside the top k, across its boundary and at −inf; the fast path
    (one topk, exact recount only for rows tied at a finite boundary) must give what the counting rule gives
    — the same values, and the same indices wherever the value is finite."""
    g = torch.Generator().manual_seed(0)
    for k in (1, 2, 5, 9, 10):
        x = torch.randint(0, 6, (64, 10), generator=g).float()
        x[x.eq(0)] = -math.inf
        values, indices = _topk(x, k)
        expected_values, expected_indices = _topk_exact(x, k)
        assert values.tolist() == expected_values.tolist()
        finite = values.isfinite()
        assert indices[finite].tolist() == expected_indices[finite].tolist()
        assert all(len(set(row)) == k for row in indices.tolist())  # k distinct candidates
    x = torch.randn(8, 1000, generator=g)  # no ties: the set and order of torch.topk
    values, indices = _topk(x, 10)
    assert indices.tolist() == x.topk(10, dim=1).indices.tolist()


# [EOS] at step 1 has P = 0.5 (|Y| = 1); a b [EOS] has P = 0.5 · 1 · 0.8 = 0.4 (|Y| = 3).
EARLY_EOS = {(): dist(eos=0.5, a=0.5), (A,): dist(b=1.0), (A, B_): dist(eos=0.8, c=0.2)}


@pytest.mark.parametrize(
    "alpha, form, lp_short, lp_long, long_wins",
    [
        (0.0, "wu", 1.0, 1.0, False),  # no normalisation: the short hypothesis is more probable
        (1.0, "power", 1.0, 3.0, True),  # −0.916 / 3 = −0.305 > −0.693
        (1.0, "wu", (5 + 1) / 6, (5 + 3) / 6, True),  # −0.916 / (8/6) = −0.687 > −0.693
        (0.5, "wu", 1.0, ((5 + 3) / 6) ** 0.5, False),  # −0.916 / 1.155 = −0.794 < −0.693
        (2.0, "wu", 1.0, ((5 + 3) / 6) ** 2, True),  # −0.916 / 1.78 = −0.515 > −0.693
    ],
)
def test_early_eos_is_kept_and_compared_under_each_length_penalty(alpha, form, lp_short, lp_long, long_wins):
    out = search(
        table_model(EARLY_EOS),
        num_beams=2,
        num_return_sequences=2,
        length_penalty=alpha,
        length_penalty_form=form,
    )
    short = ([EOS], math.log(0.5) / lp_short, math.log(0.5))
    long = ([A, B_, EOS], math.log(0.4) / lp_long, math.log(0.4))
    assert_hypotheses(out.hypotheses[0], [long, short] if long_wins else [short, long])


def test_early_stopping_stops_at_num_beams_finished():
    # Step 1 finishes [EOS] (0.5); step 2 finishes a [EOS] (0.2) — two finished. a b (0.3) is still live:
    # 0.3 scored at length 2 (log 0.3 / 2 = −0.602) beats the worst finished (log 0.2 / 2 = −0.805), so
    # without early stopping the search goes on and finds a b [EOS] (log 0.3 / 3 = −0.401).
    table = {(): dist(eos=0.5, a=0.5), (A,): dist(eos=0.4, b=0.6), (A, B_): EOS_ONLY}
    kwargs = dict(num_beams=2, num_return_sequences=2, length_penalty=1.0, length_penalty_form="power")
    out = search(table_model(table), early_stopping=True, **kwargs)
    assert_hypotheses(
        out.hypotheses[0],
        [([EOS], math.log(0.5), math.log(0.5)), ([A, EOS], math.log(0.2) / 2, math.log(0.2))],
    )
    out = search(table_model(table), early_stopping=False, **kwargs)
    assert_hypotheses(
        out.hypotheses[0],
        [([A, B_, EOS], math.log(0.3) / 3, math.log(0.3)), ([EOS], math.log(0.5), math.log(0.5))],
    )


def test_min_new_tokens_forbids_eos_before_n_tokens():
    model = PrefixTableModel(lambda source, prefix: dist(eos=0.9, a=0.1))
    out = search(model, num_beams=1, min_new_tokens=0)
    assert [h.tokens for h in out.hypotheses[0]] == [[EOS]]
    out = search(model, num_beams=2, num_return_sequences=2, min_new_tokens=2, length_penalty=0.0)
    # [EOS] is masked, not renormalised: log_prob stays the model's.
    log_p1, log_p2 = math.log(0.1 * 0.1 * 0.9), math.log(0.1 * 0.1 * 0.1 * 0.9)
    assert_hypotheses(out.hypotheses[0], [([A, A, EOS], log_p1, log_p1), ([A, A, A, EOS], log_p2, log_p2)])


def test_no_repeat_ngram_blocks_a_repeated_bigram():
    # After a: b (0.6) or [EOS] (0.4); after b: a (0.6) or [EOS] (0.4). Unblocked, a b a b … runs to max length.
    def next_probs(source, prefix):
        if prefix and prefix[-1] == A:
            return dist(b=0.6, eos=0.4)
        return dist(a=0.6, eos=0.4)

    model = PrefixTableModel(next_probs)
    out = search(model, num_beams=1, max_len_b=6)
    assert [h.tokens for h in out.hypotheses[0]] == [[A, B_, A, B_, A, B_]]
    out = search(model, num_beams=1, max_len_b=6, no_repeat_ngram_size=2)
    log_p = math.log(0.6**3 * 0.4)  # a b a, then b would repeat "a b": [EOS]
    assert_hypotheses(out.hypotheses[0], [([A, B_, A, EOS], log_p / ((5 + 4) / 6), log_p)])
    # A wide beam with a strong length penalty prefers long hypotheses, which now all avoid "a b" twice.
    kwargs = dict(
        num_beams=3, num_return_sequences=3, max_len_b=6, length_penalty=2.0, length_penalty_form="power"
    )
    out = search(model, **kwargs)
    assert out.hypotheses[0][0].tokens == [A, B_, A, B_, A, B_]
    out = search(model, no_repeat_ngram_size=2, **kwargs)
    expected = [[A, B_, A, EOS], [A, B_, EOS], [A, EOS]]
    assert_hypotheses(
        out.hypotheses[0], [(y, alternating_log_p(y) / len(y) ** 2, alternating_log_p(y)) for y in expected]
    )


def alternating_log_p(tokens):
    """log P of a hypothesis of the alternating table: 0.6 per a/b, 0.4 for the final [EOS]."""
    return sum(math.log(0.4 if y == EOS else 0.6) for y in tokens)


def random_table_model(seed):
    """Every (source, prefix) gets its own random distribution over [EOS], a, b, c (no ties)."""

    def next_probs(source, prefix):
        rng = random.Random(f"{seed} {source} {prefix}")
        weights = [rng.random() + 0.05 for _ in range(4)]
        return [0.0, 0.0] + [w / sum(weights) for w in weights]

    return PrefixTableModel(next_probs)


def all_hypotheses(model, source, max_len, alpha, form):
    """Brute force: every hypothesis of at most max_len tokens, with its score, best first."""
    lp = (lambda n: ((5 + n) / 6) ** alpha) if form == "wu" else (lambda n: n**alpha)
    result = []
    for length in range(1, max_len + 1):
        for body in itertools.product([A, B_, C], repeat=length - 1):
            # every length may end with [EOS]; at the maximum length the search also cuts live beams
            for last in [EOS, A, B_, C] if length == max_len else [EOS]:
                tokens = (*body, last)
                log_p = sum(math.log(model.next_probs(source, tokens[:i])[y]) for i, y in enumerate(tokens))
                result.append((list(tokens), log_p / lp(len(tokens)), log_p))
    return sorted(result, key=lambda h: -h[1])


@pytest.mark.parametrize("alpha, form", [(0.0, "wu"), (1.0, "wu"), (1.0, "power"), (0.6, "power")])
def test_wide_beam_returns_the_exact_n_best_list(alpha, form):
    # With 64 beams nothing is ever pruned (at most 27 live prefixes and 40 hypotheses), so the n-best list
    # must be the brute-force one.
    model = random_table_model(seed=0)
    out = search(
        model,
        num_beams=64,
        num_return_sequences=10,
        max_len_b=3,
        length_penalty=alpha,
        length_penalty_form=form,
    )
    hyps = out.hypotheses[0]
    assert len(hyps) == 10
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert_hypotheses(hyps, all_hypotheses(model, 7, 3, alpha, form)[:10])


def test_n_best_list_size_and_sequences_tensor():
    out = search(table_model(GREEDY_TRAP), num_beams=3, num_return_sequences=3, length_penalty=0.0)
    assert_hypotheses(
        out.hypotheses[0],
        [
            ([B_, EOS], math.log(0.36), math.log(0.36)),
            ([A, EOS], math.log(0.24), math.log(0.24)),
            ([A, A, EOS], math.log(0.18), math.log(0.18)),  # a a and a c tie: a (lower id) first
        ],
    )
    out = search(
        table_model(GREEDY_TRAP),
        torch.tensor([[7], [7]]),
        num_beams=3,
        num_return_sequences=2,
        length_penalty=0.0,
    )
    assert [len(hyps) for hyps in out.hypotheses] == [2, 2]
    assert out.sequences.tolist() == [[BOS, B_, EOS], [BOS, A, EOS], [BOS, B_, EOS], [BOS, A, EOS]]


def test_sequences_pads_to_the_longest_and_fills_missing_rows():
    hypotheses = [
        [Hypothesis([A, EOS], -1.0, -1.0)],
        [Hypothesis([A, B_, C], -2.0, -2.0), Hypothesis([], 0.0, 0.0)],
    ]
    sequences = pad_hypotheses(hypotheses, torch.tensor([[BOS], [BOS]]), 2, PAD)
    assert sequences.tolist() == [[BOS, A, EOS, PAD], [BOS] + [PAD] * 3, [BOS, A, B_, C], [BOS] + [PAD] * 3]


def test_max_length_depends_on_each_source_length():
    model = PrefixTableModel(lambda source, prefix: dist(a=0.9, eos=0.1))  # never ends on its own
    input_ids = torch.tensor([[7, 0, 0, 0], [7, 8, 8, 0], [7, 8, 8, 8]])  # |x| = 1, 3, 4
    out = search(model, input_ids, num_beams=1, max_len_a=0.5, max_len_b=1, length_penalty=0.0)
    # ⌊0.5·1 + 1⌋ = 1, ⌊0.5·3 + 1⌋ = 2, ⌊0.5·4 + 1⌋ = 3 tokens, cut without [EOS]
    assert [[h.tokens for h in hyps] for hyps in out.hypotheses] == [[[A]], [[A, A]], [[A, A, A]]]
    assert out.hypotheses[2][0].log_prob == pytest.approx(3 * math.log(0.9), rel=1e-6)
    # an explicit mask is what counts
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 1, 1]])
    out = search(model, input_ids, mask, num_beams=1, max_len_a=0.5, max_len_b=1)
    assert [len(hyps[0].tokens) for hyps in out.hypotheses] == [3, 1, 3]
    out = search(model, input_ids, num_beams=2, max_len_b=0)
    assert [[h.tokens for h in hyps] for hyps in out.hypotheses] == [[[]]] * 3


def test_batch_gives_the_same_result_as_each_input_alone():
    tables = {7: GREEDY_TRAP, 8: EARLY_EOS}
    tables[9] = {k: v for k, v in EARLY_EOS.items() if k != (A, B_)} | {(A, B_): dist(a=0.7, eos=0.3)}
    model = PrefixTableModel(lambda source, prefix: tables[source].get(prefix, EOS_ONLY))
    kwargs = dict(num_beams=3, num_return_sequences=2, max_len_a=1.0, max_len_b=2, length_penalty=1.0)
    input_ids = torch.tensor([[8, 0, 0], [7, 5, 5], [9, 5, 0]])
    batched = search(model, input_ids, **kwargs)
    alone = [search(model, input_ids[i : i + 1, : int(input_ids[i].ne(0).sum())], **kwargs) for i in range(3)]
    assert summary(batched) == [summary(out)[0] for out in alone]


def tiny_seq2seq(seed=0, init_range=1.0):
    torch.manual_seed(seed)
    config = Seq2SeqConfig(
        src_vocab_size=11,
        tgt_vocab_size=13,
        embedding_dim=8,
        hidden_size=16,
        num_layers=2,
        dropout=0.0,
        init_range=init_range,
    )
    return Seq2Seq(config).eval(), config


def random_sources(seed, lengths, vocab=11, pad=0):
    g = torch.Generator().manual_seed(seed)
    S = max(lengths)
    ids = torch.full((len(lengths), S), pad, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(7, vocab, (n,), generator=g)
    return ids, ids.ne(pad).long()


@pytest.mark.parametrize("seed, init_range, eos_bias", [(1, 1.0, 0.5), (1, 0.5, 0.0)])
def test_one_beam_is_greedy_on_a_random_seq2seq(seed, init_range, eos_bias):
    model, cfg = tiny_seq2seq(seed, init_range)
    with torch.no_grad():
        model.output.bias[cfg.eos_token_id] += eos_bias  # some hypotheses end before the maximum length
    input_ids, mask = random_sources(seed, [5, 3, 7, 1, 4, 6])
    special = dict(decoder_start_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id, pad_token_id=0)
    for alpha in (0.0, 1.0):
        settings = GenerationConfig(num_beams=1, max_new_tokens=8, length_penalty=alpha, **special)
        greedy = greedy_search(model, input_ids, mask, settings)
        beam = beam_search(model, input_ids, mask, settings)
        for g, b in zip(greedy, beam, strict=True):
            assert [h.tokens for h in g] == [h.tokens for h in b]
            assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-5)
            assert g[0].score == pytest.approx(b[0].score, abs=1e-5)
    lengths = {len(hyps[0].tokens) for hyps in beam}
    assert len(lengths) > 1  # the comparison covered early [EOS] as well as the maximum length


def test_seq2seq_batch_and_source_padding_do_not_change_the_result():
    model, cfg = tiny_seq2seq(seed=4)
    with torch.no_grad():
        model.output.bias[cfg.eos_token_id] += 0.5  # a mix of finished and cut hypotheses
    lengths = [4, 2, 6]
    input_ids, mask = random_sources(4, lengths)
    settings = GenerationConfig(
        decoder_start_token_id=cfg.bos_token_id,
        eos_token_id=cfg.eos_token_id,
        pad_token_id=0,
        num_beams=4,
        num_return_sequences=3,
        max_len_a=1.0,
        max_len_b=2,
        length_penalty_form="wu",
    )
    batched = generate(model, input_ids, mask, settings)
    extra = torch.zeros(3, 5, dtype=torch.long)  # five more padding columns
    padded = generate(model, torch.cat([input_ids, extra], 1), torch.cat([mask, extra], 1), settings)
    for i, n in enumerate(lengths):
        alone = generate(model, input_ids[i : i + 1, :n], None, settings).hypotheses[0]
        for other in (batched.hypotheses[i], padded.hypotheses[i]):
            assert [h.tokens for h in other] == [h.tokens for h in alone]
            assert [h.score for h in other] == pytest.approx([h.score for h in alone], abs=1e-5)
        assert len(alone) == 3
        assert max(len(h.tokens) for h in alone) <= n + 2  # max_len_a · |x| + max_len_b
    finished = [cfg.eos_token_id in h.tokens for hyps in batched.hypotheses for h in hyps]
    assert any(finished) and not all(finished)


def test_forced_eos_at_the_maximum_length_is_certain():
    """forced_eos_token_id = [EOS]: the last allowed token is [EOS] with log-probability 0, so a hypothesis
    that reached the limit ranks by its other tokens; without it the beam is cut bare."""
    table = {(): dist(a=0.6, b=0.4), (A,): dist(a=0.9, eos=0.1), (B_,): dist(eos=0.5, c=0.5)}
    model = table_model(table, default=dist(c=1.0))
    cut = search(model, num_beams=2, max_len_b=2, length_penalty=0.0, num_return_sequences=2)
    assert [h.tokens for h in cut.hypotheses[0]] == [[A, A], [B_, EOS]]
    forced = search(
        model, num_beams=2, max_len_b=2, length_penalty=0.0, num_return_sequences=2, forced_eos_token_id=EOS
    )
    (h1, h2) = forced.hypotheses[0]
    assert [h1.tokens, h2.tokens] == [
        [A, EOS],
        [B_, EOS],
    ]  # a a is not allowed: the second token must be [EOS]
    assert h1.log_prob == pytest.approx(math.log(0.6))  # the forced [EOS] costs nothing
    assert h2.log_prob == pytest.approx(math.log(0.4))
    forced3 = search(
        model, num_beams=2, max_len_b=3, length_penalty=0.0, num_return_sequences=2, forced_eos_token_id=EOS
    )
    assert forced3.hypotheses[0][0].tokens == [A, A, EOS]
    assert forced3.hypotheses[0][0].log_prob == pytest.approx(math.log(0.6) + math.log(0.9))  # forced: + 0
    greedy = search(model, num_beams=1, max_new_tokens=3, forced_eos_token_id=EOS)
    assert greedy.sequences.tolist() == [[BOS, A, A, EOS]]
    assert greedy.hypotheses[0][0].log_prob == pytest.approx(math.log(0.6) + math.log(0.9))
