"""GPT-1 and GPT-2 decode through the one decoding path (seq2bert/decoding) token for token as transformers'
generate does, on random-weight models and left-padded batches: greedy, beam search (length penalty, early
stopping, n-best), the rules; cached decoding equals recomputing the whole prefix."""

import pytest
import torch

from seq2bert.decoding.generation import generate
from seq2bert.models.decoder_only import generation_positions
from tests.models.test_gpt import EOS, PAD, V, hf_model, ours_from

transformers = pytest.importorskip("transformers")

LM = {"gpt2": "GPT2LMHeadModel", "openai-gpt": "OpenAIGPTLMHeadModel"}


WIDE = {"gpt2": dict(initializer_range=0.4), "openai-gpt": {}}  # weights under which hypotheses differ


def lm_pair(model_type, eos_scale=4.0, **overrides):
    """transformers' LM and ours on the same weights; [EOS]'s embedding scaled so that some hypotheses end
    before the limit (it is also the output row of [EOS]: the LM head is tied)."""
    hf = hf_model(model_type, LM[model_type], **{"eos_token_id": EOS, **WIDE[model_type], **overrides})
    if hf.config.eos_token_id is not None:
        with torch.no_grad():
            hf.get_input_embeddings().weight[hf.config.eos_token_id] *= eos_scale
    return hf, ours_from(hf, LM[model_type])


def prompts(rows=4, length=7):
    """Left-padded prompts (transformers' decoder-only convention): rows 1 and 2 have 3 and 5 pads."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, PAD, (rows, length), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    mask[2, :5] = 0
    return ids.masked_fill(mask == 0, PAD), mask


SETTINGS = {
    "greedy": dict(num_beams=1),
    "beam 3, n-best 3, length penalty 0.7": dict(num_beams=3, num_return_sequences=3, length_penalty=0.7),
    "beam 3, early stopping, n-best 2, length penalty 1.5": dict(
        num_beams=3, early_stopping=True, num_return_sequences=2, length_penalty=1.5
    ),
    "beam 3, no repeated bigram, at least 4 tokens": dict(
        num_beams=3, no_repeat_ngram_size=2, min_new_tokens=4
    ),
    "greedy, no repeated bigram": dict(no_repeat_ngram_size=2),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("model_type", list(LM))
def test_generate_equals_transformers_on_left_padded_prompts(model_type, setting):
    hf, ours = lm_pair(model_type)
    ids, mask = prompts()
    settings = dict(SETTINGS[setting], max_new_tokens=10)
    with torch.no_grad():
        expected = hf.generate(input_ids=ids, attention_mask=mask, do_sample=False, **settings)
    got = ours.generate(ids, mask, **settings)
    assert got.tolist() == expected.tolist()
    assert torch.equal(got[:: settings.get("num_return_sequences", 1), :7], ids)  # the prompt comes first


@pytest.mark.parametrize("model_type", list(LM))
def test_hypotheses_end_early_so_the_settings_matter(model_type):
    """The cases above are not vacuous: some hypotheses end with [EOS] before the limit and others reach it,
    and each setting changes the result."""
    _, ours = lm_pair(model_type)
    ids, mask = prompts()
    out = {name: ours.generate(ids, mask, max_new_tokens=10, **s) for name, s in SETTINGS.items()}
    for name, seqs in out.items():
        ended = (seqs[:, 7:] == EOS).any(dim=1)
        assert ended.any() and seqs.size(1) == 17, name  # some end early, some run to the limit
    assert out["greedy, no repeated bigram"].tolist() != out["greedy"].tolist()
    best = {
        name: seqs[:: SETTINGS[name].get("num_return_sequences", 1)].tolist() for name, seqs in out.items()
    }
    assert len({str(b) for b in best.values()}) == len(best)  # five settings, five different results


@pytest.mark.parametrize("num_beams", [1, 3])
def test_gpt1_without_an_end_token_decodes_as_transformers(num_beams):
    """GPT-1 checkpoints have no [EOS]: every hypothesis runs to max_new_tokens, in transformers too."""
    hf, ours = lm_pair("openai-gpt", eos_token_id=None)
    assert ours.config.eos_token_id is None
    ids, mask = prompts()
    settings = dict(num_beams=num_beams, num_return_sequences=num_beams, max_new_tokens=6)
    with torch.no_grad():
        expected = hf.generate(input_ids=ids, attention_mask=mask, do_sample=False, **settings)
    assert ours.generate(ids, mask, **settings).tolist() == expected.tolist()


def test_without_a_mask_the_mask_is_inferred_as_transformers_infers_it():
    """[PAD] ≠ [EOS]: the padding is found from the ids; GPT-2's usual [PAD] = [EOS]: every token is real."""
    hf, ours = lm_pair("gpt2")
    ids, mask = prompts()
    with torch.no_grad():
        expected = hf.generate(input_ids=ids, do_sample=False, max_new_tokens=6)
    assert ours.generate(ids, max_new_tokens=6).tolist() == expected.tolist()
    assert ours.generate(ids, mask, max_new_tokens=6).tolist() == expected.tolist()
    hf, ours = lm_pair("gpt2", pad_token_id=EOS)
    ids = ids.masked_fill(mask == 0, EOS)
    with torch.no_grad():
        expected = hf.generate(input_ids=ids, do_sample=False, max_new_tokens=6)
    assert ours.generate(ids, max_new_tokens=6).tolist() == expected.tolist()


@pytest.mark.parametrize("model_type", list(LM))
def test_cached_decoding_equals_recomputing_the_prefix(model_type):
    """Each step's logits from the cache equal a full forward over prompt + new tokens (at transformers'
    generate positions), and greedy decoding from them picks the same tokens."""
    _, ours = lm_pair(model_type)
    ids, mask = prompts()
    out = generate(ours, ids, mask, ours.generation_config(max_new_tokens=8))
    state = ours.start(ids[:, :-1], mask[:, :-1])
    tokens, seq, seq_mask = ids[:, -1], ids, mask
    for t in range(8):
        logits, state = ours.step(tokens, state)
        with torch.no_grad():
            full = ours(seq, seq_mask, position_ids=generation_positions(seq_mask)).logits[:, -1]
        torch.testing.assert_close(logits, full, rtol=1e-5, atol=1e-5)  # logits of size ~10
        tokens = out.sequences[:, 7 + t]
        live = tokens.ne(PAD)  # rows that ended are fed [PAD]; their argmax no longer counts
        assert torch.equal(full.argmax(-1)[live], tokens[live])
        seq = torch.cat([seq, tokens[:, None]], dim=1)
        seq_mask = torch.cat([seq_mask, torch.ones_like(tokens)[:, None]], dim=1)


def test_a_beam_follows_its_cache():
    """reorder keeps rows of the caches, the mask and the positions: stepping a reordered state equals
    stepping the state of the rows it took."""
    _, ours = lm_pair("gpt2")
    ids, mask = prompts()
    state = ours.start(ids[:, :-1], mask[:, :-1])
    _, state = ours.step(ids[:, -1], state)
    index = torch.tensor([2, 2, 0, 1])
    a, _ = ours.step(torch.tensor([5, 6, 7, 8]), ours.reorder(state, index))
    start = ours.start(ids[index, :-1], mask[index, :-1])
    _, again = ours.step(ids[index, -1], start)
    b, _ = ours.step(torch.tensor([5, 6, 7, 8]), again)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_sampling_is_repeatable_and_top_k_1_is_greedy():
    _, ours = lm_pair("gpt2")
    ids, mask = prompts()
    greedy = ours.generate(ids, mask, max_new_tokens=6)
    assert (
        ours.generate(ids, mask, max_new_tokens=6, do_sample=True, top_k=1, seed=3).tolist()
        == greedy.tolist()
    )
    a = ours.generate(ids, mask, max_new_tokens=6, do_sample=True, temperature=2.0, seed=5)
    b = ours.generate(ids, mask, max_new_tokens=6, do_sample=True, temperature=2.0, seed=5)
    assert a.tolist() == b.tolist() and a.shape[0] == 4 and (a[:, 7:] < V).all()
    assert ours.training is False
    ours.train()
    ours.generate(ids, mask, max_new_tokens=2)
    assert ours.training  # generate decodes in eval mode and gives the mode back
