"""Contrastive search (seq2bert/decoding/contrastive.py) against Su et al. (2022), Eq. 5, written out here over
transformers' models: the installed transformers (5.x) no longer ships contrastive search (it moved to the
Hub's custom_generate), so the reference recomputes every prefix with transformers' GPT-2 and Marian, row by
row without padding, feeds each of the top-k candidates, and takes

    x_t = argmax_{v ∈ V^(k)} (1 − α) · p(v | x_<t) − α · max_j cos(h_v, h_{x_j})

— our cached, batched, left-padded search must pick the same tokens."""

import pytest
import torch

from tests.models.test_gpt_generate import lm_pair, prompts

transformers = pytest.importorskip("transformers")


def reference(forward, prefix: list[int], alpha: float, k: int, steps: int, eos, banned=()) -> list[int]:
    """Eq. 5 step by step. ``forward(seq)`` → the next-token logits (V,) after ``seq`` and the last hidden
    states (len(seq), d) of its tokens; ``banned``: tokens never generated (−∞ before the softmax)."""
    seq, new = list(prefix), []
    for _ in range(steps):
        logits, context = forward(seq)  # (V,), (T, d): h_{x_j} for every token so far
        logits[list(banned)] = -torch.inf
        p = logits.softmax(-1)
        top_p, top_v = p.topk(k)
        scores = []
        for v, pv in zip(top_v.tolist(), top_p.tolist(), strict=True):
            h_v = forward(seq + [v])[1][-1]  # (d,) the candidate's hidden state
            similarity = torch.nn.functional.cosine_similarity(h_v[None], context, dim=-1).max()
            scores.append((1 - alpha) * pv - alpha * float(similarity))
        x = top_v[max(range(k), key=lambda i: (scores[i], -i))].item()  # the first best
        seq.append(x)
        new.append(x)
        if x == eos:
            break
    return new


def gpt2_forward(hf):
    def forward(seq):
        with torch.no_grad():
            out = hf(torch.tensor([seq]), output_hidden_states=True)
        return out.logits[0, -1].clone(), out.hidden_states[-1][0]  # GPT-2's last entry: after ln_f

    return forward


@pytest.mark.parametrize("alpha, k", [(0.6, 4), (0.4, 6), (0.9, 3), (0.0, 5)])
def test_gpt2_contrastive_search_picks_the_tokens_of_eq_5(alpha, k):
    hf, ours = lm_pair("gpt2")
    ids, mask = prompts()
    steps = 9
    got = ours.generate(ids, mask, penalty_alpha=alpha, top_k=k, max_new_tokens=steps)
    forward = gpt2_forward(hf)
    for row in range(ids.size(0)):
        prefix = ids[row][mask[row].bool()].tolist()  # the row without its left padding
        expected = reference(forward, prefix, alpha, k, steps, hf.config.eos_token_id)
        assert got[row, ids.size(1) :].tolist()[: len(expected)] == expected, row


def test_the_penalty_changes_the_choice_and_alpha_0_is_greedy():
    """Not vacuous: with α > 0 some tokens differ from greedy decoding; α = 0 is greedy."""
    _, ours = lm_pair("gpt2")
    ids, mask = prompts()
    greedy = ours.generate(ids, mask, max_new_tokens=9)
    assert torch.equal(ours.generate(ids, mask, penalty_alpha=0.0, top_k=4, max_new_tokens=9), greedy)
    assert not torch.equal(ours.generate(ids, mask, penalty_alpha=0.6, top_k=4, max_new_tokens=9), greedy)
    assert torch.equal(ours.generate(ids, mask, penalty_alpha=0.6, top_k=1, max_new_tokens=9), greedy)


def test_marian_contrastive_search_picks_the_tokens_of_eq_5():
    """An encoder-decoder: the context is the decoder's hidden states from [decoder start] on."""
    from tests.models.test_marian import inputs, marian, ours_from

    hf = marian("1+2 d24 h3/h2 relu", forced_eos_token_id=None, init_std=0.3)
    ours = ours_from(hf)
    src, mask, _ = inputs(hf, batch=3)
    alpha, k, steps = 0.5, 4, 8
    got = ours.generate(src, mask, penalty_alpha=alpha, top_k=k, max_new_tokens=steps)
    banned = [w[0] for w in ours.generation_config(max_new_tokens=1).bad_words_ids if len(w) == 1]
    start = hf.config.decoder_start_token_id
    for row in range(src.size(0)):
        source = src[row][mask[row].bool()][None]

        def forward(seq, source=source):
            with torch.no_grad():
                out = hf(input_ids=source, decoder_input_ids=torch.tensor([seq]), output_hidden_states=True)
            return out.logits[0, -1].clone(), out.decoder_hidden_states[-1][0]

        expected = reference(forward, [start], alpha, k, steps, hf.config.eos_token_id, banned)
        assert got[row, 1:].tolist()[: len(expected)] == expected, row


def test_settings_and_models_it_needs_are_one_line_config_errors():
    from seq2bert.decoding.config import GenerationConfig
    from seq2bert.decoding.generation import generate
    from seq2bert.errors import ConfigError
    from tests.decoding.test_generation import LM_EOS, LM_PAD, BigramLM

    for bad in (dict(num_beams=2), dict(do_sample=True), dict(top_k=0)):
        with pytest.raises(ConfigError, match="penalty_alpha"):
            GenerationConfig(eos_token_id=1, pad_token_id=0, max_new_tokens=3, penalty_alpha=0.5, **bad)
    config = GenerationConfig(
        eos_token_id=LM_EOS, pad_token_id=LM_PAD, max_new_tokens=3, penalty_alpha=0.5, top_k=3
    )
    with pytest.raises(ConfigError, match="gives none"):  # a model whose step gives logits alone
        generate(BigramLM(), torch.tensor([[2, 3]]), None, config)
