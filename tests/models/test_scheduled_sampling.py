"""Scheduled sampling through the decoding protocol (models/encoder_decoder.py), on tiny models of every recurrent
family: with ε = 1 it is teacher forcing; with ε = 0 the decoder is fed the model's own argmax or samples; the
coins and samples come from the generator; no gradient flows through the fed tokens."""

import pytest
import torch

from seq2bert.decoding.sampling import sample
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.encoder_decoder import ScheduledSampling
from seq2bert.models.registry import build_model
from seq2bert.models.seq2seq.config import ChoConfig, Seq2SeqConfig
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

V, BOS, PAD = 17, 5, 0
SIZES = dict(
    src_vocab_size=V, tgt_vocab_size=V, embedding_dim=8, hidden_size=12, dropout=0.0, bos_token_id=BOS
)
CONFIGS = {
    "seq2seq": lambda: Seq2SeqConfig(**SIZES, num_layers=2),
    "cho": lambda: ChoConfig(**SIZES, maxout_size=6),
    "bahdanau": lambda: BahdanauConfig(**SIZES, attention_size=10, maxout_size=6),
    "luong": lambda: LuongConfig(**SIZES, num_layers=2),
    "luong-local-p": lambda: LuongConfig(**SIZES, attention="local-p", window=2, input_feeding=False),
}


def tiny(name):
    torch.manual_seed(0)
    model = build_model(CONFIGS[name]())
    with torch.no_grad():  # wider than the papers' initialisations: distributions far from uniform
        for p in model.parameters():
            p.normal_(0.0, 0.5)
    return model.train()  # training mode: what the recipe runs it in (dropout 0)


def batch(rows=4, generator_seed=1):
    """Source (B, S) and targets of different lengths: decoder inputs [BOS] y… and labels y… [EOS], padded."""
    g = torch.Generator().manual_seed(generator_seed)
    lengths = [6, 3, 5, 1][:rows] + [4] * max(rows - 4, 0)
    src = torch.randint(7, V, (rows, 7), generator=g)
    src[1, 4:] = PAD
    mask = src.ne(PAD).long()
    dec = torch.full((rows, 6), PAD)
    labels = torch.full((rows, 6), IGNORE_INDEX)
    for r, n in enumerate(lengths):
        y = torch.randint(7, V, (n,), generator=g)
        dec[r, 0], dec[r, 1:n] = BOS, y[: n - 1]
        labels[r, : n - 1], labels[r, n - 1] = y[: n - 1], 6  # [EOS] = 6
    return src, mask, dec, labels


def grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_epsilon_one_is_teacher_forcing(name):
    model = tiny(name)
    src, mask, dec, labels = batch()
    tf = model(src, mask, dec, labels)
    tf.loss.backward()
    expected = grads(model)
    model.zero_grad()
    ss = model(src, mask, dec, labels, scheduled_sampling=ScheduledSampling(1.0))
    ss.loss.backward()
    assert abs(ss.loss.item() - tf.loss.item()) < 1e-6
    torch.testing.assert_close(ss.logits, tf.logits, rtol=1e-5, atol=1e-6)
    got = grads(model)
    assert got.keys() == expected.keys()
    for n in expected:
        torch.testing.assert_close(got[n], expected[n], rtol=1e-4, atol=1e-6, msg=n)


@pytest.mark.parametrize("name", ["seq2seq", "bahdanau", "luong"])
def test_epsilon_zero_feeds_the_models_argmax(name):
    model = tiny(name)
    src, mask, dec, _ = batch()
    fed = model.feed_own_predictions(src, mask, dec, ScheduledSampling(0.0, "argmax"))
    real = dec.ne(PAD)
    assert fed.decoder_input_ids[:, 0].eq(BOS).all()
    assert fed.decoder_input_ids[~real].eq(PAD).all()  # padding stays padding
    own = fed.logits[:, :-1].argmax(dim=-1)  # the model's token for each next position: (B, T − 1)
    assert torch.equal(fed.decoder_input_ids[:, 1:][real[:, 1:]], own[real[:, 1:]])
    assert not torch.equal(fed.decoder_input_ids, dec)  # an untrained model does not guess the targets
    # the logits are those of the decoder fed these tokens: teacher forcing on them computes the same
    torch.testing.assert_close(
        model(src, mask, fed.decoder_input_ids).logits, fed.logits, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("epsilon", [0.0, 0.5])
def test_samples_and_coins_come_from_the_generator(epsilon):
    model = tiny("bahdanau")
    src, mask, dec, _ = batch(rows=64)
    how = ScheduledSampling(epsilon, "sample", torch.Generator().manual_seed(123))
    fed = model.feed_own_predictions(src, mask, dec, how).decoder_input_ids
    # replay the draws: per step, the model's token, then the coins
    g = torch.Generator().manual_seed(123)
    logits = model(src, mask, fed).logits.detach()  # the logits the decoder computed on the fed tokens
    expected = dec.clone()
    for t in range(1, dec.size(1)):
        own = sample(logits[:, t - 1].float().log_softmax(dim=-1), 1.0, 0, 1.0, g)
        coin = torch.rand(dec.size(0), generator=g)
        expected[:, t] = torch.where((coin >= epsilon) & dec[:, t].ne(PAD), own, dec[:, t])
    assert torch.equal(fed, expected)
    argmax = logits[:, :-1].argmax(dim=-1)
    real = dec[:, 1:].ne(PAD)
    assert not torch.equal(fed[:, 1:][real], argmax[real])  # samples, not the argmax
    again = model.feed_own_predictions(
        src, mask, dec, ScheduledSampling(epsilon, "sample", torch.Generator().manual_seed(123))
    )
    assert torch.equal(again.decoder_input_ids, fed)
    if epsilon == 0.5:  # about half the real positions after [BOS] keep the true token (a few more: some
        true_kept = fed[:, 1:][real].eq(dec[:, 1:][real]).float().mean()  # samples hit it)
        assert 0.4 < float(true_kept) < 0.75, float(true_kept)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_gradient_flows_through_the_fed_tokens(name):
    """The loss and gradients of a scheduled-sampling batch are those of teacher forcing on the tokens it fed:
    the choice of a token is an input, not a function of the parameters."""
    model = tiny(name)
    src, mask, dec, labels = batch()
    how = ScheduledSampling(0.3, "sample", torch.Generator().manual_seed(7))
    ss = model(src, mask, dec, labels, scheduled_sampling=how)
    ss.loss.backward()
    got = grads(model)
    model.zero_grad()
    fed = model.feed_own_predictions(
        src, mask, dec, ScheduledSampling(0.3, "sample", torch.Generator().manual_seed(7))
    )
    tf = model(src, mask, fed.decoder_input_ids, labels)
    tf.loss.backward()
    assert abs(ss.loss.item() - tf.loss.item()) < 1e-6
    for n, g in grads(model).items():
        torch.testing.assert_close(got[n], g, rtol=1e-4, atol=1e-6, msg=n)


def test_attention_weights_are_not_offered_with_scheduled_sampling():
    model = tiny("bahdanau")
    src, mask, dec, _ = batch()
    with pytest.raises(ValueError, match="step by step"):
        model(src, mask, dec, output_attentions=True, scheduled_sampling=ScheduledSampling(0.5))
