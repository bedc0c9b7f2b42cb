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
    "greedy, repetition penalty 1.5": dict(repetition_penalty=1.5),
    "greedy, repetition penalty 0.7, no repeated trigram": dict(
        repetition_penalty=0.7, no_repeat_ngram_size=3
    ),
    "beam 3, repetition penalty 1.3, no repeated bigram, n-best 2": dict(
        num_beams=3, repetition_penalty=1.3, no_repeat_ngram_size=2, num_return_sequences=2
    ),
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
    assert len({str(b) for b in best.values()}) == len(best)  # each setting its own result


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


# --- a checkpoint directory with its tokenizer; stop strings, streaming and settings through model.generate
CORPUS = ["the quick brown fox jumps over the lazy dog. a stop is a stop, not a top. Naïve café 🙂"] * 20


def tiny_directory(path, kind="bytelevel-bpe", **overrides):
    """A tiny random GPT-2 (or GPT-1 for kind "gpt1-bpe") saved with a BPE trained on CORPUS: (model, tokenizer)."""
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.models.gpt.config import gpt1_tiny, gpt2_tiny
    from seq2bert.models.gpt.heads import GPT2LMHeadModel, OpenAIGPTLMHeadModel

    tok = Tokenizer.train(CORPUS, kind=kind, vocab_size=300, min_frequency=1)
    torch.manual_seed(0)
    if kind == "bytelevel-bpe":
        eot = tok.eos_token_id
        cfg = gpt2_tiny(vocab_size=tok.vocab_size, bos_token_id=eot, eos_token_id=eot, n_positions=48,
                        initializer_range=0.3, **overrides)  # fmt: skip
        model = GPT2LMHeadModel(cfg).eval()
    else:
        model = OpenAIGPTLMHeadModel(gpt1_tiny(vocab_size=tok.vocab_size, n_positions=48, **overrides)).eval()
    model.save_pretrained(path, tokenizer=tok)
    return model, tok


@pytest.mark.parametrize("kind", ["bytelevel-bpe", "gpt1-bpe"])
def test_a_directory_carries_its_tokenizer_and_transformers_reads_both(tmp_path, kind):
    import seq2bert
    from seq2bert.models import registry

    ours, tok = tiny_directory(tmp_path, kind)
    names = {"config.json", "model.safetensors", "tokenizer.json", "vocab.json", "merges.txt"}
    assert names | {"tokenizer_config.json"} == {p.name for p in tmp_path.iterdir()}
    loaded, loaded_tok = registry.load(tmp_path, head="causal_lm")
    assert type(loaded) is type(ours) and loaded_tok.backend.to_str() == tok.backend.to_str()
    (tmp_path / "tokenizer.json").unlink()  # vocab.json + merges.txt alone, as GPT was published
    assert registry.load(tmp_path)[1].encode(CORPUS[0]).ids == tok.encode(CORPUS[0]).ids

    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert type(hf_tok).__name__ == {"bytelevel-bpe": "GPT2Tokenizer", "gpt1-bpe": "OpenAIGPTTokenizer"}[kind]
    assert hf_tok.model_max_length == 48
    texts = [CORPUS[0], "  two spaces\tand a tab\n", "Unseen: ÆØÅ 日本"]
    for text in texts:
        ids = tok.encode(text).ids
        assert hf_tok(text)["input_ids"] == ids
        assert hf_tok.decode(ids, skip_special_tokens=True) == tok.decode(ids)
    ids = torch.tensor([tok.encode("the quick brown").ids])
    with torch.no_grad():
        torch.testing.assert_close(hf(ids).logits, ours(ids).logits, rtol=0, atol=1e-5)
        expected = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12,
                               repetition_penalty=1.2)  # fmt: skip
    assert ours.generate(ids, max_new_tokens=12, repetition_penalty=1.2).tolist() == expected.tolist()
    assert seq2bert.from_pretrained(tmp_path).config.vocab_size == tok.vocab_size


def test_a_tokenizer_larger_than_the_model_is_refused_naming_its_file(tmp_path):
    from seq2bert.errors import CheckpointError
    from seq2bert.models import registry
    from seq2bert.models.gpt.config import gpt2_tiny
    from seq2bert.models.gpt.heads import GPT2LMHeadModel

    _, tok = tiny_directory(tmp_path / "right")
    GPT2LMHeadModel(gpt2_tiny(vocab_size=200)).save_pretrained(tmp_path / "wrong", tokenizer=tok)
    with pytest.raises(CheckpointError) as e:
        registry.load(tmp_path / "wrong")
    n = tok.vocab_size
    assert str(e.value) == (f"{tmp_path / 'wrong' / 'tokenizer.json'}: {n} tokens, more than the model's "
                            "vocab_size 200 (config.json): not this model's tokenizer")  # fmt: skip
    (tmp_path / "wrong" / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match=r"vocab\.json: \d+ tokens"):
        registry.load(tmp_path / "wrong")


def stop_strings(tok, tokens):
    """Stop strings drawn from a generated text: one spanning two tokens, one ending inside a token, a
    token's own text, a pair of them, one that never occurs."""
    texts = [tok.decode([i]) for i in tokens]
    plain = [i for i, t in enumerate(texts) if t and t.isascii() and t.isprintable()]  # not a piece of a byte
    pairs = [i for i in plain if i - 1 in plain]
    a, b = plain[len(plain) // 2], plain[-1]
    return [[texts[pairs[0] - 1][-1] + texts[pairs[0]][0]], [texts[a][:2]], [texts[a][-2:]], [texts[b], texts[a]],
            ["zzzq"]]  # fmt: skip


@pytest.mark.parametrize("num_beams", [1, 3])
def test_stop_strings_stop_where_transformers_stops(tmp_path, num_beams):
    ours, tok = tiny_directory(tmp_path)
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    ids = torch.tensor([tok.encode("the quick brown").ids])
    settings = dict(max_new_tokens=30, num_beams=num_beams, num_return_sequences=min(num_beams, 2))
    plain = ours.generate(ids, **settings)[0, ids.size(1) :].tolist()
    lengths = set()
    for stops in stop_strings(tok, plain):
        with torch.no_grad():
            expected = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, stop_strings=stops,
                                   tokenizer=hf_tok, **settings)  # fmt: skip
        got = ours.generate(ids, stop_strings=stops, tokenizer=tok, **settings)
        assert got.tolist() == expected.tolist(), stops
        lengths.add(got.size(1))
    assert len(lengths) > 1  # some strings stop the text early
    with pytest.raises(ValueError, match="tokenizer"):
        ours.generate(ids, stop_strings=["x"])


def test_generate_streams_each_new_token(tmp_path):
    ours, tok = tiny_directory(tmp_path)
    ids = torch.tensor([tok.encode("the quick brown").ids])
    seen = []
    for settings in (dict(), dict(do_sample=True, top_p=0.9, seed=3)):
        seen.clear()
        out = ours.generate(ids, max_new_tokens=10, streamer=lambda t: seen.append(int(t)), **settings)
        assert seen == out[0, ids.size(1) :].tolist()
    with pytest.raises(ValueError, match="streamer"):
        ours.generate(ids, max_new_tokens=4, num_beams=2, streamer=print)


@pytest.mark.parametrize(
    "setting",
    [
        dict(top_p=0.0),
        dict(top_p=1.2),
        dict(temperature=0.0),
        dict(top_k=-1),
        dict(repetition_penalty=0.0),
        dict(repetition_penalty=-1.0),
    ],  # fmt: skip
)
def test_invalid_settings_raise_value_errors(setting):
    _, ours = lm_pair("gpt2")
    ids, mask = prompts()
    with pytest.raises(ValueError, match=next(iter(setting))):
        ours.generate(ids, mask, max_new_tokens=3, **setting)


def test_gpt1_vocab_json_without_unk_as_published_loads(tmp_path):
    """GPT-1's published vocab.json has no <unk>: it gets the next id, beyond the model's vocab_size, as in
    transformers; only the BPE's own tokens are held to vocab_size."""
    import json

    from seq2bert.models import registry

    _, tok = tiny_directory(tmp_path, kind="gpt1-bpe")
    vocab = json.loads((tmp_path / "vocab.json").read_text())
    del vocab["<unk>"]
    vocab = {t: i for i, t in enumerate(sorted(vocab, key=vocab.get))}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "tokenizer.json").unlink()
    config = json.loads((tmp_path / "config.json").read_text())
    weights = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    weights.resize_token_embeddings(len(vocab))
    weights.save_pretrained(tmp_path)
    assert (
        json.loads((tmp_path / "config.json").read_text())["vocab_size"]
        == len(vocab)
        == config["vocab_size"] - 1
    )
    model, loaded = registry.load(tmp_path)
    assert loaded.token_to_id("<unk>") == len(vocab) and loaded.vocab_size == len(vocab) + 1
    assert loaded.encode("the quick").ids == [vocab[t] for t in tok.encode("the quick").tokens]
