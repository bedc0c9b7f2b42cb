"""Diverse beam search (Vijayakumar et al. 2016, Alg. 1; ``num_beam_groups``, ``diversity_penalty``) against
the paper written out here over transformers' models: the installed transformers (5.x) no longer ships group
beam search (it moved to the Hub's custom_generate), so the reference recomputes every prefix with
transformers' GPT-2 and Marian, input by input without padding. The K beams are G groups of K/G; at step t
group g extends its beams by the K/G best of

    Θ(y) = log P(y_≤t | x) − λ · Σ_{h < g} #{beams of group h whose token at step t is y_t}

(Hamming diversity, Eq. 3 with Δ the count of equal tokens), the groups taken in order, the penalised
scores carried on; the hypotheses of every group are ranked together at the end."""

import pytest
import torch

from tests.models.test_gpt_generate import lm_pair, prompts

transformers = pytest.importorskip("transformers")


def reference(log_p, prefix, groups, per_group, lam, steps, n):
    """Alg. 1 without [EOS] (every hypothesis runs ``steps`` tokens). ``log_p(seq)`` → log p(· | seq) (V,).
    → the n best new-token lists over all groups, best first."""
    beams = [[(0.0, list(prefix))] for _ in range(groups)]  # per group: (score, sequence)
    for _ in range(steps):
        taken: list[int] = []
        for g in range(groups):
            candidates = []
            for b, (score, seq) in enumerate(beams[g]):
                lp = log_p(seq)
                for v in range(lp.size(0)):
                    theta = score + float(lp[v]) - lam * taken.count(v)
                    candidates.append((-theta, b, v, seq + [v]))
            candidates.sort(key=lambda c: c[:3])  # best first; ties: the lower beam, then the lower token
            beams[g] = [(-c[0], c[3]) for c in candidates[:per_group]]
            taken += [seq[-1] for _, seq in beams[g]]
    final = sorted((h for group in beams for h in group), key=lambda h: -h[0])
    return [seq[len(prefix) :] for _, seq in final[:n]]


SETTINGS = [  # (num_beams, num_beam_groups, diversity_penalty, num_return_sequences)
    (4, 2, 0.8, 4),
    (6, 3, 1.5, 3),
    (4, 4, 0.5, 2),
    (4, 2, 0.0, 2),
]


@pytest.mark.parametrize("K, G, lam, n", SETTINGS)
def test_gpt2_diverse_beam_search_follows_algorithm_1(K, G, lam, n):
    hf, ours = lm_pair("gpt2", eos_token_id=None)  # no end token: every hypothesis has the same length
    ids, mask = prompts(rows=3)
    steps = 5
    got = ours.generate(
        ids,
        mask,
        num_beams=K,
        num_beam_groups=G,
        diversity_penalty=lam,
        num_return_sequences=n,
        max_new_tokens=steps,
    )

    def log_p(seq):
        with torch.no_grad():
            return hf(torch.tensor([seq])).logits[0, -1].log_softmax(-1)

    for row in range(ids.size(0)):
        prefix = ids[row][mask[row].bool()].tolist()
        expected = reference(log_p, prefix, G, K // G, lam, steps, n)
        assert got[row * n : (row + 1) * n, ids.size(1) :].tolist() == expected, row


def test_marian_diverse_beam_search_follows_algorithm_1():
    from tests.models.test_marian import inputs, marian, ours_from

    hf = marian("1+2 d24 h3/h2 relu", forced_eos_token_id=None, init_std=0.3)
    with torch.no_grad():
        hf.final_logits_bias.zero_()
        hf.final_logits_bias[0, 0] = -1e4  # [EOS] never taken: every hypothesis runs to the limit
    ours = ours_from(hf)
    src, mask, _ = inputs(hf, batch=3)
    K, G, lam, n, steps = 4, 2, 1.0, 4, 5
    got = ours.generate(
        src,
        mask,
        num_beams=K,
        num_beam_groups=G,
        diversity_penalty=lam,
        num_return_sequences=n,
        max_new_tokens=steps,
    )
    banned = [w[0] for w in ours.generation_config(max_new_tokens=1).bad_words_ids if len(w) == 1]
    start = hf.config.decoder_start_token_id
    for row in range(src.size(0)):
        source = src[row][mask[row].bool()][None]

        def log_p(seq, source=source):
            with torch.no_grad():
                out = hf(input_ids=source, decoder_input_ids=torch.tensor([seq])).logits[0, -1]
            lp = out.log_softmax(-1)
            lp[banned] = -torch.inf  # Marian bans [PAD] (after the softmax, as the rules do)
            return lp

        expected = reference(log_p, [start], G, K // G, lam, steps, n)
        assert got[row * n : (row + 1) * n, 1:].tolist() == expected, row


def test_without_a_penalty_every_group_is_the_same_beam_search_and_with_one_the_groups_differ():
    """With [EOS] (hypotheses end early): λ = 0 gives each group the beam search of K/G beams, so the merged
    list is that n-best list with each hypothesis G times; λ > 0 changes it, and one group is beam search."""
    _, ours = lm_pair("gpt2")
    ids, mask = prompts()
    common = dict(max_new_tokens=8, length_penalty=0.7)
    beam = ours.generate(ids, mask, num_beams=3, num_return_sequences=3, **common)
    same = ours.generate(
        ids, mask, num_beams=6, num_beam_groups=2, num_return_sequences=6, diversity_penalty=0.0, **common
    )
    assert same.tolist() == beam.repeat_interleave(2, dim=0).tolist()
    diverse = ours.generate(
        ids, mask, num_beams=6, num_beam_groups=2, num_return_sequences=6, diversity_penalty=2.0, **common
    )
    assert diverse.tolist() != same.tolist()
    one = ours.generate(ids, mask, num_beams=3, num_beam_groups=1, diversity_penalty=2.0, **common)
    assert one.tolist() == ours.generate(ids, mask, num_beams=3, **common).tolist()


def test_groups_must_divide_the_beams():
    from seq2bert.decoding.config import GenerationConfig
    from seq2bert.errors import ConfigError

    with pytest.raises(ConfigError, match="num_beam_groups"):
        GenerationConfig(eos_token_id=1, pad_token_id=0, max_new_tokens=3, num_beams=4, num_beam_groups=3)
