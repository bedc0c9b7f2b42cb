"""Luong, Pham & Manning (2015): global and local attention, the four scores and input feeding, against the
paper's equations computed here by hand."""

import itertools
import math

import pytest
import torch

from seq2bert import config as C
from seq2bert.errors import ConfigError
from seq2bert.models.attention.config import LuongConfig, luong2015
from seq2bert.models.attention.luong import LuongNMT
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

E, H, V_SRC, V_TGT, D = 6, 8, 13, 11, 1
SCORES = ("dot", "general", "concat", "location")
ATTENTIONS = ("global", "local-m", "local-p")
GRID = list(itertools.product(SCORES, ATTENTIONS, (True, False)))
IDS = [f"{s}-{a}-{'feed' if f else 'nofeed'}" for s, a, f in GRID]


def tiny(score="general", attention="global", input_feeding=True, **kw):
    cfg = dict(
        src_vocab_size=V_SRC,
        tgt_vocab_size=V_TGT,
        embedding_dim=E,
        hidden_size=H,
        num_layers=2,
        dropout=0.0,
        score=score,
        attention=attention,
        window=D,
        input_feeding=input_feeding,
        max_source_length=16,
        init_range=0.5,  # wide enough that every term of the equations moves the outputs
    )
    cfg.update(kw)
    torch.manual_seed(0)
    return LuongNMT(LuongConfig(**cfg)).eval()


SRC = torch.tensor([[3, 4, 5, 6, 7], [7, 8, 9, 0, 0]])
DEC = torch.tensor([[5, 2, 3, 4], [5, 7, 8, 9]])


def attention_by_hand(model, h_t, memory, n_real, t):
    """a_t (n_real,) for one row: score (Sect. 3.1), then global softmax or the local window (Sect. 3.2)."""
    att, cfg = model.attention, model.config
    h_bar = memory[:n_real]
    if cfg.score == "dot":
        scores = torch.stack([h_t @ h_s for h_s in h_bar])
    elif cfg.score == "general":
        scores = torch.stack([h_t @ att.W_a.weight @ h_s for h_s in h_bar])
    elif cfg.score == "concat":
        scores = torch.stack(
            [att.v_a.weight[0] @ torch.tanh(att.W_a.weight @ torch.cat([h_t, h_s])) for h_s in h_bar]
        )
    else:  # location: a_t = softmax(W_a h_t)
        scores = (att.W_a.weight @ h_t)[:n_real]
    if cfg.attention == "global":
        return torch.softmax(scores, 0)
    if cfg.attention == "local-m":
        p_t = float(min(t, n_real - 1))  # p_t = t, clipped to the source
    else:  # Eq. 9: p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))
        p_t = n_real * torch.sigmoid(att.v_p.weight[0] @ torch.tanh(att.W_p.weight @ h_t))
    window = [s for s in range(n_real) if abs(s - p_t) <= cfg.window]
    alpha = torch.zeros(n_real, dtype=h_t.dtype)
    if window:
        alpha[window] = torch.softmax(scores[window], 0)
    if cfg.attention == "local-p":  # Eq. 10: times a Gaussian around p_t, σ = D/2
        sigma = cfg.window / 2
        alpha = alpha * torch.exp(-((torch.arange(n_real, dtype=h_t.dtype) - p_t) ** 2) / (2 * sigma**2))
    return alpha


@pytest.mark.parametrize("score,attention,input_feeding", GRID, ids=IDS)
def test_incremental_decoding_equals_teacher_forcing(score, attention, input_feeding):
    model = tiny(score, attention, input_feeding)
    with torch.no_grad():
        full = model(SRC, SRC.ne(0).long(), DEC).logits
        state = model.encode(SRC)
        for t in range(DEC.size(1)):
            step, state = model.step(DEC[:, t], state)
            torch.testing.assert_close(step, full[:, t], rtol=0, atol=1e-6)
        assert state.t == DEC.size(1)


@pytest.mark.parametrize("score,attention,input_feeding", GRID, ids=IDS)
def test_right_padding_changes_nothing_and_pads_get_no_attention(score, attention, input_feeding):
    model = tiny(score, attention, input_feeding)
    with torch.no_grad():
        alone = model(torch.tensor([[7, 8, 9]]), None, DEC[1:], output_attentions=True)
        padded_src = torch.cat([SRC, torch.zeros(2, 4, dtype=torch.long)], dim=1)  # 9 ≤ max_source_length
        padded = model(padded_src, None, DEC, output_attentions=True)
        unpadded = model(SRC, None, DEC, output_attentions=True)
    torch.testing.assert_close(padded.logits[1:], alone.logits, rtol=0, atol=1e-6)
    torch.testing.assert_close(padded.logits, unpadded.logits, rtol=0, atol=1e-6)
    torch.testing.assert_close(padded.attentions[1:, :, :3], alone.attentions, rtol=0, atol=1e-6)
    a = padded.attentions
    assert a.shape == (2, DEC.size(1), 9)
    assert torch.all(a[0, :, 5:] == 0) and torch.all(a[1, :, 3:] == 0)
    if attention == "global":
        torch.testing.assert_close(a.sum(-1), torch.ones(2, DEC.size(1)))
        assert torch.all(a[0, :, :5] > 0) and torch.all(a[1, :, :3] > 0)
    else:
        assert torch.all(a.sum(-1) <= 1 + 1e-6)


@pytest.mark.parametrize("score", SCORES)
def test_local_m_attends_only_within_t_plus_minus_D(score):
    model = tiny(score, "local-m", window=1)
    src = torch.tensor([[3, 4, 5, 6, 7, 8, 9], [7, 8, 9, 10, 11, 0, 0]])
    dec = torch.tensor([[5, 2, 3, 4, 6, 7, 8, 9], [5, 7, 8, 9, 2, 3, 4, 6]])
    with torch.no_grad():
        a = model(src, None, dec, output_attentions=True).attentions  # (2, 8, 7)
    lengths = [7, 5]
    for b in range(2):
        for t in range(dec.size(1)):
            p_t = min(t, lengths[b] - 1)  # beyond the source the window stays at its last word
            inside = [s for s in range(7) if abs(s - p_t) <= 1 and s < lengths[b]]
            outside = [s for s in range(7) if s not in inside]
            if t < lengths[b]:
                assert all(abs(s - t) <= 1 for s in inside)  # within [t − D, t + D]
            assert torch.all(a[b, t, outside] == 0), (b, t)
            assert torch.all(a[b, t, inside] > 0)
            torch.testing.assert_close(a[b, t].sum(), torch.tensor(1.0))


@pytest.mark.parametrize("score,attention,input_feeding", GRID, ids=IDS)
def test_two_decoder_steps_by_hand(score, attention, input_feeding):
    """h_t from the decoder LSTM on [E y_{t−1}; h̃_{t−1}] (input feeding, Sect. 3.3) or E y_{t−1}; a_t by hand
    (Eq. 7, 9, 10); c_t = Σ_s a_t(s) h̄_s; h̃_t = tanh(W_c [c_t; h_t]) (Eq. 5); logits = W_s h̃_t (Eq. 6)."""
    model = tiny(score, attention, input_feeding, window=2).double()
    with torch.no_grad():
        state = model.encode(SRC)
        out = model(SRC, None, DEC, output_attentions=True)
        for b in range(SRC.size(0)):
            n_real = int(SRC[b].ne(0).sum())
            memory = state.memory[b]
            hc = (state.h[:, b : b + 1].contiguous(), state.c[:, b : b + 1].contiguous())  # from the encoder
            h_tilde = torch.zeros(H, dtype=torch.double)  # h̃_0 = 0
            for t in range(2):
                y = model.tgt_embed(DEC[b, t])
                x = torch.cat([y, h_tilde]) if input_feeding else y
                top, hc = model.decoder(x[None, None], hc)
                h_t = top[0, 0]
                alpha = attention_by_hand(model, h_t, memory, n_real, t)
                c_t = (alpha[:, None] * memory[:n_real]).sum(0)
                h_tilde = torch.tanh(model.W_c.weight @ torch.cat([c_t, h_t]))  # Eq. 5
                logits = model.W_s.weight @ h_tilde + model.W_s.bias  # Eq. 6
                torch.testing.assert_close(out.attentions[b, t, :n_real], alpha)
                torch.testing.assert_close(out.logits[b, t], logits)


def test_local_p_is_the_windowed_softmax_times_a_gaussian_around_predicted_p_t():
    """Eq. 9 and 10 for the first step, written out: p_t = S · sigmoid(v_pᵀ tanh(W_p h_t)), σ = D/2."""
    model = tiny("general", "local-p", True, window=2).double()
    att = model.attention
    with torch.no_grad():
        state = model.encode(SRC)
        a = model(SRC, None, DEC[:, :1], output_attentions=True).attentions[:, 0]  # (B, S)
        y = model.tgt_embed(DEC[:, 0])
        top, _ = model.decoder(
            torch.cat([y, torch.zeros(2, H, dtype=torch.double)], -1)[:, None], (state.h, state.c)
        )
        h_t = top[:, 0]
        for b, S in enumerate([5, 3]):
            p_t = S * torch.sigmoid(att.v_p.weight[0] @ torch.tanh(att.W_p.weight @ h_t[b]))
            assert 0 <= p_t <= S
            window = [s for s in range(S) if abs(s - float(p_t)) <= 2]
            scores = torch.stack([h_t[b] @ att.W_a.weight @ state.memory[b, s] for s in window])
            gauss = torch.tensor([math.exp(-((s - float(p_t)) ** 2) / (2 * 1.0**2)) for s in window])
            torch.testing.assert_close(a[b, window], torch.softmax(scores, 0) * gauss.double())
            assert torch.all(a[b, [s for s in range(5) if s not in window]] == 0)
            assert a[b].sum() < 1  # the Gaussian takes mass away


@pytest.mark.parametrize("input_feeding", [True, False])
def test_decoder_input_size_with_and_without_input_feeding(input_feeding):
    model = tiny(input_feeding=input_feeding)
    expected = E + H if input_feeding else E
    assert model.decoder.input_size == expected
    assert model.decoder.weight_ih_l0.shape == (4 * H, expected)
    assert model.decoder.weight_ih_l1.shape == (4 * H, H)


def test_input_feeding_makes_the_next_step_depend_on_the_last_attentional_state():
    model = tiny(input_feeding=True)
    with torch.no_grad():
        state = model.encode(SRC)
        after = model.decode(DEC[:, :1], state).state
        same = model.decode(DEC[:, 1:2], after).logits
        after.feed = torch.zeros_like(after.feed)
        changed = model.decode(DEC[:, 1:2], after).logits
    assert (same - changed).abs().max() > 1e-3


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_reverse_source_reads_the_reversed_sentence(attention):
    fwd = tiny(attention=attention, reverse_source=False)
    rev = tiny(attention=attention, reverse_source=True)
    rev.load_state_dict(fwd.state_dict())
    flipped = torch.tensor([[7, 6, 5, 4, 3], [9, 8, 7, 0, 0]])  # each sentence reversed, padding in place
    with torch.no_grad():
        a, b = rev.encode(SRC), fwd.encode(flipped)
        torch.testing.assert_close(a.memory, b.memory, rtol=0, atol=0)
        torch.testing.assert_close(a.h, b.h, rtol=0, atol=0)
        torch.testing.assert_close(rev(SRC, None, DEC).logits, fwd(flipped, None, DEC).logits, rtol=0, atol=0)
        # the source states are an LSTM over the reversed sentence
        lstm = torch.nn.LSTM(E, H, num_layers=2, batch_first=True)
        lstm.load_state_dict(rev.encoder.rnn.state_dict())
        out, _ = lstm(rev.src_embed(torch.tensor([[9, 8, 7]])))
        torch.testing.assert_close(a.memory[1, :3], out[0], rtol=0, atol=1e-6)
        assert not torch.allclose(a.memory, fwd.encode(SRC).memory)


def test_reorder_selects_rows():
    model = tiny(attention="local-p")
    with torch.no_grad():
        state = model.encode(torch.tensor([[3, 4, 5], [5, 6, 0], [7, 8, 9]]))
        state = model.decode(torch.tensor([[5], [6], [7]]), state).state
    index = torch.tensor([2, 2, 1])
    r = model.reorder(state, index)
    for i, j in enumerate(index.tolist()):
        assert torch.equal(r.h[:, i], state.h[:, j]) and torch.equal(r.c[:, i], state.c[:, j])
        for name in ("feed", "memory", "keys", "mask", "lengths"):
            assert torch.equal(getattr(r, name)[i], getattr(state, name)[j]), name
    assert r.t == state.t == 1 and r.lengths.tolist() == [3, 3, 2]
    assert tiny(score="dot").encode(torch.tensor([[3, 4]])).keys is None
    r = LuongNMT.reorder(tiny(score="dot").encode(torch.tensor([[3, 4], [5, 6]])), torch.tensor([1]))
    assert r.keys is None and r.memory.size(0) == 1


def test_loss_ignores_padding_labels():
    model = tiny()
    labels = torch.tensor([[2, 3, 4, 6], [7, 8, IGNORE_INDEX, IGNORE_INDEX]])
    with torch.no_grad():
        out = model(SRC, None, DEC, labels=labels)
        log_p = torch.log_softmax(out.logits, -1)
    terms = [-log_p[b, t, labels[b, t]] for b in range(2) for t in range(4) if labels[b, t] != IGNORE_INDEX]
    torch.testing.assert_close(out.loss, torch.stack(terms).mean())


def test_initialisation_is_uniform_in_init_range_with_zero_pad_rows():
    model = tiny(init_range=0.1)
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert weights.abs().max() <= 0.1 and weights.abs().max() > 0.099
    assert abs(float(weights.std()) - 0.1 / 3**0.5) < 0.005
    assert torch.all(model.src_embed.weight[0] == 0) and torch.all(model.tgt_embed.weight[0] == 0)


def test_paper_configuration():
    cfg = luong2015(src_vocab_size=50000, tgt_vocab_size=50000)
    assert cfg.model_type == "luong"
    assert (cfg.num_layers, cfg.hidden_size, cfg.embedding_dim) == (4, 1000, 1000)
    assert (cfg.score, cfg.attention, cfg.window, cfg.input_feeding) == ("general", "local-p", 10, True)
    assert (cfg.dropout, cfg.reverse_source, cfg.init_range) == (0.2, True, 0.1)
    assert luong2015(score="dot").score == "dot"


def test_config_validation_errors():
    with pytest.raises(
        ConfigError, match=r"score: expected one of dot, general, concat, location, got 'cosine'"
    ):
        LuongConfig(score="cosine")
    with pytest.raises(
        ConfigError, match=r"attention: expected one of global, local-m, local-p, got 'local'"
    ):
        LuongConfig(attention="local")
    with pytest.raises(ConfigError, match=r"window: must be >= 0"):
        LuongConfig(window=-1)
    with pytest.raises(ConfigError, match=r"window: local-p needs a window of at least 1, got 0"):
        LuongConfig(attention="local-p", window=0)  # σ = D/2 = 0: it would attend to nothing
    assert LuongConfig(attention="local-m", window=0).window == 0  # local-m with D = 0 attends to s = t
    with pytest.raises(ConfigError, match=r"model_type: expected 'luong', got 'bahdanau'"):
        LuongConfig(model_type="bahdanau")
    with pytest.raises(ConfigError, match=r"model\.score: expected one of"):
        C.from_dict(LuongConfig, {"score": "bad"}, prefix="model.")


def test_location_score_ignores_words_past_max_source_length():
    """Footnote 6 of the paper: for long sentences, the words near the end get no attention."""
    model = tiny(score="location", max_source_length=4)
    out = model(SRC, None, DEC, output_attentions=True)  # SRC has 5 positions
    assert torch.all(out.attentions[..., 4:] == 0)
    torch.testing.assert_close(out.attentions.sum(-1), torch.ones(out.attentions.shape[:2]))
