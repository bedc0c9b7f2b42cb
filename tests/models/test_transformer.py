"""The Transformer: shapes, causality, padding, cached decoding against full recomputation (logits, greedy
and beam-search tokens and scores), the paper's sizes, tied weights through a checkpoint."""

from dataclasses import replace

import pytest
import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.generation import generate
from seq2bert.errors import ConfigError
from seq2bert.models.transformer.config import TransformerConfig, transformer_base, transformer_big
from seq2bert.models.transformer.model import Transformer, TransformerState
from seq2bert.training import checkpoint as ckpt

V, PAD, BOS, EOS = 23, 0, 1, 2
TINY = dict(
    src_vocab_size=V,
    tgt_vocab_size=V,
    d_model=16,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=2,
    encoder_ffn_dim=24,
    decoder_ffn_dim=20,
    pad_token_id=PAD,
    bos_token_id=BOS,
    eos_token_id=EOS,
)
VARIANTS = {
    "paper": {},
    "pre-norm": {"normalize_before": True},
    "learned-positions, untied": {
        "position_embedding": "learned",
        "share_embeddings": False,
        "tie_word_embeddings": False,
        "tgt_vocab_size": 19,
    },
    "marian-like": {"interleave_sinusoids": False, "final_logits_bias": True, "activation_function": "swish"},
    "row B: d_k 3": {"d_k": 3, "d_v": 5},
    "relative positions (Shaw et al. 2018)": {"position_embedding": "relative", "max_relative_position": 2},
}


def model(**kw) -> Transformer:
    torch.manual_seed(0)
    m = Transformer(TransformerConfig(**{**TINY, **kw})).eval()
    if m.config.final_logits_bias:
        torch.nn.init.normal_(m.output.bias)
    return m


def batch():
    g = torch.Generator().manual_seed(1)
    src = torch.randint(3, V, (3, 7), generator=g)
    src[1, 5:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(3, 19, (3, 6), generator=g)
    return src, src.ne(PAD), tgt


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_cached_decoding_equals_full_recomputation(variant):
    m = model(**VARIANTS[variant])
    src, mask, tgt = batch()
    full = m(src, mask, tgt).logits  # (B, T, V)
    state = m.encode(src, mask)
    steps = []
    for t in range(tgt.size(1)):
        logits, state = m.step(tgt[:, t], state)
        steps.append(logits)
    assert state.t == tgt.size(1) and state.caches[0].self_attn.length == tgt.size(1)
    torch.testing.assert_close(torch.stack(steps, 1), full, rtol=0, atol=1e-5)


def test_decoder_is_causal_and_ignores_source_padding():
    m = model()
    src, mask, tgt = batch()
    logits = m(src, mask, tgt).logits
    changed = tgt.clone()
    changed[:, 3:] = 5
    torch.testing.assert_close(m(src, mask, changed).logits[:, :3], logits[:, :3], rtol=0, atol=1e-6)
    garbage = src.clone()
    garbage[~mask] = 7  # whatever sits under the padding is never looked at
    torch.testing.assert_close(m(garbage, mask, tgt).logits, logits, rtol=0, atol=1e-6)
    longer = torch.cat([src, torch.full((3, 4), PAD)], 1)  # more padding changes nothing
    torch.testing.assert_close(m(longer, longer.ne(PAD), tgt).logits, logits, rtol=0, atol=1e-5)


def test_outputs_loss_and_attentions():
    m = model()
    src, mask, tgt = batch()
    out = m(src, mask, tgt, labels=tgt, output_attentions=True)
    assert out.logits.shape == (3, 6, V) and out.loss.ndim == 0
    assert len(out.encoder_attentions) == 2 and out.encoder_attentions[0].shape == (3, 4, 7, 7)
    assert out.decoder_attentions[1].shape == (3, 2, 6, 6) and out.cross_attentions[0].shape == (3, 2, 6, 7)
    assert out.attentions.shape == (3, 6, 7)
    assert (out.attentions[2, :, 2:] == 0).all()  # no weight on padding
    assert (out.decoder_attentions[0][:, :, 0, 1:] == 0).all()  # nor on the future
    torch.testing.assert_close(out.attentions.sum(-1), torch.ones(3, 6))
    assert m(src, mask, tgt).attentions is None
    with pytest.raises(ValueError, match="decoder_input_ids"):
        m(src, mask)


@pytest.mark.parametrize("variant", ["paper", "learned-positions, untied", "marian-like"])
def test_the_loss_only_forward_equals_the_loss_of_the_logits(variant):
    """``return_logits=False`` (what the trainer asks for) fuses the output layer with the loss: the same loss
    and the same gradient of every parameter — tied embeddings and Marian's logits bias included — with label
    smoothing and ignored (padding) labels."""
    m = model(**VARIANTS[variant]).train()
    torch.manual_seed(0)
    for p in m.parameters():  # nothing left at zero: every gradient path is exercised
        p.data.add_(0.01 * torch.randn_like(p))
    src, mask, tgt = batch()
    labels = tgt.masked_fill(torch.tensor([[0] * 6, [0] * 4 + [1] * 2, [0] * 3 + [1] * 3]).bool(), -100)
    losses, grads = [], []
    for return_logits in (True, False):
        m.zero_grad()
        torch.manual_seed(1)  # the same dropout masks
        out = m(src, mask, tgt, labels=labels, label_smoothing=0.1, return_logits=return_logits)
        out.loss.backward()
        assert (out.logits is None) == (not return_logits)
        losses.append(out.loss.detach())
        grads.append({n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None})
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-6, atol=1e-6)
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) == len(list(m.parameters()))
    for name, g in grads[0].items():
        torch.testing.assert_close(grads[1][name], g, rtol=1e-5, atol=1e-6, msg=name)


class Uncached(torch.nn.Module):
    """The same model decoding without a cache: each step re-runs the decoder over the whole prefix."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def start(self, input_ids, attention_mask):
        return (self.m.encode(input_ids, attention_mask), input_ids.new_zeros(input_ids.size(0), 0))

    def step(self, tokens, state):
        enc, prefix = state
        prefix = torch.cat([prefix, tokens[:, None]], 1)
        fresh = TransformerState(enc.memory, enc.mask, [type(c)() for c in enc.caches])
        logits = self.m.decode(prefix, fresh).logits
        return logits[:, -1], (enc, prefix)

    def reorder(self, state, index):
        enc, prefix = state
        return self.m.reorder(enc, index), prefix.index_select(0, index)


@pytest.mark.parametrize("variant", ["pre-norm", "relative positions (Shaw et al. 2018)"])
def test_greedy_and_beam_search_with_the_cache_equal_full_recomputation(variant):
    """(Relative positions: prefixes past FEW_QUERIES take the fused kernel with the relative bias when
    recomputed, the explicit path when cached.)"""
    m = model(**{**VARIANTS[variant], "normalize_before": True})
    with torch.no_grad():
        m.output.weight.mul_(8.0)  # sharper distributions: hypotheses that end early
    src, mask, _ = batch()
    kw = dict(decoder_start_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
    greedy = GenerationConfig(max_new_tokens=9, **kw)
    g1, g2 = generate(m, src, mask, greedy), generate(Uncached(m), src, mask, greedy)
    assert torch.equal(g1.sequences, g2.sequences)
    s1, s2 = ([h[0].log_prob for h in g.hypotheses] for g in (g1, g2))
    torch.testing.assert_close(torch.tensor(s1), torch.tensor(s2), rtol=0, atol=1e-5)
    beam = GenerationConfig(num_beams=4, max_len_a=1.0, max_len_b=3, num_return_sequences=4, **kw)
    b1, b2 = generate(m, src, mask, beam), generate(Uncached(m), src, mask, beam)
    for h1, h2 in zip(b1.hypotheses, b2.hypotheses, strict=True):
        assert [h.tokens for h in h1] == [h.tokens for h in h2]
        torch.testing.assert_close(torch.tensor([h.score for h in h1]), torch.tensor([h.score for h in h2]))


def count(cfg):
    torch.manual_seed(0)
    return sum(p.numel() for p in Transformer(cfg).parameters())


@pytest.mark.slow
def test_paper_sizes():
    """Table 3: base 65 M and big 213 M parameters with a shared 37,000-token vocabulary (WMT EN-DE)."""
    vocab = dict(src_vocab_size=37000, tgt_vocab_size=37000)
    assert count(transformer_base(**vocab)) == pytest.approx(65e6, rel=0.05)
    assert count(transformer_big(**vocab)) == pytest.approx(213e6, rel=0.05)
    cfg = transformer_base()
    assert (cfg.d_model, cfg.encoder_layers, cfg.encoder_ffn_dim, cfg.encoder_attention_heads) == (
        512,
        6,
        2048,
        8,
    )
    assert cfg.d_model // cfg.encoder_attention_heads == 64 and cfg.dropout == 0.1


def test_tied_weights_survive_a_checkpoint(tmp_path):
    m = model()
    assert m.output.weight is m.decoder.embeddings.tokens.weight is m.encoder.embeddings.tokens.weight
    ckpt.save_weights(m, tmp_path)
    n = model()
    torch.nn.init.zeros_(n.output.weight)
    ckpt.load_weights(n, tmp_path)
    assert n.output.weight is n.decoder.embeddings.tokens.weight
    src, mask, tgt = batch()
    torch.testing.assert_close(n(src, mask, tgt).logits, m(src, mask, tgt).logits, rtol=0, atol=0)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"encoder_attention_heads": 5}, "divisible"),
        ({"dropout": 1.0}, "dropout"),
        ({"activation_function": "tanh"}, "activation_function"),
        ({"tgt_vocab_size": 19}, "share_embeddings"),
        ({"decoder_layers": 0}, "decoder_layers"),
    ],
)
def test_config_errors_name_the_key(bad, message):
    with pytest.raises(ConfigError, match=message):
        TransformerConfig(**{**TINY, **bad})
    assert replace(
        TransformerConfig(**TINY), d_model=20, encoder_attention_heads=4, decoder_attention_heads=4
    )


def test_checkpoints_written_before_the_stacks_load(tmp_path):
    """Weights saved with the keys of the layer lists (encoder.0., src_embed., encoder_norm.) still load."""
    m = model()
    old = {}
    for key, value in m.state_dict().items():
        key = key.replace("encoder.embeddings.", "src_embed.").replace("decoder.embeddings.", "tgt_embed.")
        key = key.replace("encoder.layers.", "encoder.").replace("decoder.layers.", "decoder.")
        old[key] = value
    assert "src_embed.tokens.weight" in old and "encoder.0.self_attn.qkv.weight" in old
    from safetensors.torch import save_file

    save_file(
        {k: v.contiguous() for k, v in old.items() if k not in ("output.weight", "tgt_embed.tokens.weight")},
        str(tmp_path / "model.safetensors"),
    )
    n = model()
    torch.nn.init.zeros_(n.encoder.layers[0].self_attn.qkv.weight)
    ckpt.load_weights(n, tmp_path)  # as a checkpoint written before is read
    for key, value in m.state_dict().items():
        torch.testing.assert_close(n.state_dict()[key], value, rtol=0, atol=0)
