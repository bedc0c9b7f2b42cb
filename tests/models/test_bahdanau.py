"""RNNsearch (Bahdanau, Cho & Bengio 2015) against the paper's equations, computed here by hand."""

import pytest
import torch

from seq2bert.models.attention.bahdanau import RNNSearch
from seq2bert.models.attention.config import BahdanauConfig, bahdanau2015
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

E, N, A, M, V_SRC, V_TGT = 6, 8, 7, 5, 13, 11


def tiny(randomize=True, **kw):
    """A tiny model; ``randomize`` redraws every parameter from N(0, 0.5²) (at the paper's initialisation v_a
    is 0, so every alignment is uniform and the attention equations would not be exercised)."""
    cfg = dict(
        src_vocab_size=V_SRC,
        tgt_vocab_size=V_TGT,
        embedding_dim=E,
        hidden_size=N,
        attention_size=A,
        maxout_size=M,
        num_layers=1,
        dropout=0.0,
    )
    cfg.update(kw)
    torch.manual_seed(0)
    model = RNNSearch(BahdanauConfig(**cfg)).eval()
    if randomize:
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.5)
            model.src_embed.weight[0].zero_()
            model.tgt_embed.weight[0].zero_()
    return model


SRC = torch.tensor([[3, 4, 5, 6, 7], [7, 8, 9, 0, 0]])
DEC = torch.tensor([[5, 2, 3, 4], [5, 7, 8, 9]])


@pytest.mark.parametrize("num_layers", [1, 2])
def test_incremental_decoding_equals_teacher_forcing(num_layers):
    model = tiny(num_layers=num_layers)
    mask = SRC.ne(0).long()
    with torch.no_grad():
        full = model(SRC, mask, DEC).logits
        state = model.encode(SRC, mask)
        for t in range(DEC.size(1)):
            step, state = model.step(DEC[:, t], state)
            torch.testing.assert_close(step, full[:, t], rtol=0, atol=1e-6)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_right_padding_of_the_source_changes_nothing(num_layers):
    model = tiny(num_layers=num_layers)
    with torch.no_grad():
        alone = model(torch.tensor([[3, 4, 5]]), None, DEC[:1], output_attentions=True)
        padded_src = torch.tensor([[3, 4, 5, 0, 0, 0], [7, 8, 9, 10, 11, 12]])
        padded = model(padded_src, padded_src.ne(0).long(), DEC, output_attentions=True)
    torch.testing.assert_close(padded.logits[:1], alone.logits, rtol=0, atol=1e-6)
    torch.testing.assert_close(padded.attentions[:1, :, :3], alone.attentions, rtol=0, atol=1e-6)


def test_attention_weights_are_zero_on_padding_and_sum_to_one():
    model = tiny()
    with torch.no_grad():
        out = model(SRC, None, DEC, output_attentions=True)
    alpha = out.attentions
    assert alpha.shape == (2, DEC.size(1), SRC.size(1))
    assert torch.all(alpha[1, :, 3:] == 0)
    assert torch.all(alpha[1, :, :3] > 0) and torch.all(alpha[0] > 0)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, DEC.size(1)))
    assert model(SRC, None, DEC).attentions is None


@pytest.mark.parametrize("num_layers", [1, 2])
def test_annotations_are_a_bidirectional_gru_over_the_unpadded_source(num_layers):
    """h_j = [h→_j; h←_j] (Sect. 3.2); padded positions are 0; s_0 = tanh(W_s h←_1) (A.2.2)."""
    model = tiny(num_layers=num_layers).double()
    gru = torch.nn.GRU(E, N, num_layers=num_layers, bidirectional=True, batch_first=True).double()
    gru.load_state_dict(model.encoder.rnn.state_dict())
    with torch.no_grad():
        state = model.encode(SRC)
        for b in range(SRC.size(0)):
            ids = SRC[b][SRC[b].ne(0)]
            n_real = len(ids)
            h, _ = gru(model.src_embed(ids)[None])  # (1, n_real, 2n)
            torch.testing.assert_close(state.annotations[b, :n_real], h[0])
            assert torch.all(state.annotations[b, n_real:] == 0)
            backward_first = h[0, 0, N:]  # h←_1: the backward RNN after reading the whole sentence
            torch.testing.assert_close(
                state.s[b], torch.tanh(model.W_s.weight @ backward_first + model.W_s.bias)
            )
            torch.testing.assert_close(state.s[b], torch.tanh(model.W_s(state.annotations[b, 0, N:])))


def test_decoder_steps_by_hand_eq_2_to_6():
    """e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j) (Eq. 6), α = softmax (Eq. 5), c_i = Σ α_ij h_j (Eq. 4),
    s_i = GRU([E y_{i−1}; c_i], s_{i−1}) (Eq. 3), logits = maxout deep output of [E y_{i−1}; s_i; c_i] (Eq. 2)."""
    model = tiny().double()
    att = model.attention
    cell = torch.nn.GRUCell(E + 2 * N, N).double()
    cell.load_state_dict(model.decoder.state_dict())
    O, o = model.output.input.weight, model.output.input.bias
    G, g = model.output.output.weight, model.output.output.bias
    with torch.no_grad():
        state = model.encode(SRC)
        out = model(SRC, None, DEC, output_attentions=True)
        for b in range(SRC.size(0)):
            h = state.annotations[b][SRC[b].ne(0)]  # (n_real, 2n)
            s = state.s[b]  # s_0
            for i in range(DEC.size(1)):
                e = torch.stack(
                    [
                        att.v_a.weight[0]
                        @ torch.tanh(att.W_a.weight @ s + att.U_a.weight @ h_j + att.U_a.bias)
                        for h_j in h
                    ]
                )  # Eq. 6
                alpha = torch.exp(e) / torch.exp(e).sum()  # Eq. 5
                c = (alpha[:, None] * h).sum(0)  # Eq. 4
                y = model.tgt_embed(DEC[b, i])
                s = cell(torch.cat([y, c])[None], s[None])[0]  # Eq. 3
                s_prime = O @ torch.cat([y, s, c]) + o
                logits = G @ s_prime.view(M, 2).amax(-1) + g  # Eq. 2, maxout over pairs
                torch.testing.assert_close(out.attentions[b, i, : len(h)], alpha)
                torch.testing.assert_close(out.logits[b, i], logits)


def test_paper_initialisation():
    """B.2: v_a = 0 (so the first alignments are uniform), W_a and U_a from N(0, 0.001²), biases 0."""
    model = tiny(randomize=False)
    att = model.attention
    assert torch.all(att.v_a.weight == 0)
    for w in (att.W_a.weight, att.U_a.weight):
        assert 0.0007 < float(w.detach().std()) < 0.0013
    assert torch.all(att.U_a.bias == 0) and torch.all(model.decoder.bias_hh == 0)
    for block in model.decoder.weight_hh.detach().split(N):
        torch.testing.assert_close(block @ block.T, torch.eye(N), rtol=0, atol=1e-5)
    assert torch.all(model.src_embed.weight[0] == 0) and torch.all(model.tgt_embed.weight[0] == 0)
    with torch.no_grad():
        alpha = model(SRC, None, DEC, output_attentions=True).attentions
    torch.testing.assert_close(alpha[0], torch.full((DEC.size(1), 5), 1 / 5))
    torch.testing.assert_close(alpha[1, :, :3], torch.full((DEC.size(1), 3), 1 / 3))


def test_reorder_selects_rows():
    model = tiny()
    with torch.no_grad():
        state = model.encode(torch.tensor([[3, 4, 5], [5, 6, 0], [7, 8, 9]]))
    index = torch.tensor([2, 2, 1])
    r = model.reorder(state, index)
    for i, j in enumerate(index.tolist()):
        assert torch.equal(r.s[i], state.s[j])
        assert torch.equal(r.annotations[i], state.annotations[j])
        assert torch.equal(r.keys[i], state.keys[j])
        assert torch.equal(r.mask[i], state.mask[j])
    assert r.mask[2].tolist() == [True, True, False]


def test_loss_ignores_padding_labels():
    model = tiny()
    labels = torch.tensor([[2, 3, 4, 6], [7, 8, IGNORE_INDEX, IGNORE_INDEX]])
    with torch.no_grad():
        out = model(SRC, None, DEC, labels=labels)
        log_p = torch.log_softmax(out.logits, -1)
    terms = [-log_p[b, t, labels[b, t]] for b in range(2) for t in range(4) if labels[b, t] != IGNORE_INDEX]
    torch.testing.assert_close(out.loss, torch.stack(terms).mean())


def test_paper_configuration():
    cfg = bahdanau2015(src_vocab_size=30000, tgt_vocab_size=30000)
    assert cfg.model_type == "bahdanau"
    assert (cfg.hidden_size, cfg.embedding_dim, cfg.attention_size, cfg.maxout_size) == (1000, 620, 1000, 500)
    assert (cfg.num_layers, cfg.dropout) == (1, 0.0)
    assert bahdanau2015(attention_size=64).attention_size == 64


def test_recurrent_states_stay_fp32_under_bf16_autocast():
    """The matmuls run in bf16, but states that accumulate over steps (s_i, h'_t, LSTM h and c) stay fp32."""
    from seq2bert.models.attention.config import LuongConfig
    from seq2bert.models.attention.luong import LuongNMT
    from seq2bert.models.seq2seq.cho import ChoEncoderDecoder
    from seq2bert.models.seq2seq.config import ChoConfig

    common = dict(src_vocab_size=13, tgt_vocab_size=11, embedding_dim=8, hidden_size=12, dropout=0.0)
    models = [RNNSearch(BahdanauConfig(**common)), ChoEncoderDecoder(ChoConfig(**common))]
    models += [LuongNMT(LuongConfig(**common, input_feeding=f)) for f in (True, False)]
    x, tokens = torch.tensor([[3, 4, 5]]), torch.tensor([5])
    for model in models:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            state = model.encode(x)
            logits, state = model.step(tokens, state)
            logits, state = model.step(tokens, state)
        assert logits.dtype == torch.bfloat16, type(model).__name__  # the output layer did run in bf16
        for name in ("s", "h", "c"):
            if hasattr(state, name) and not (name == "c" and isinstance(model, ChoEncoderDecoder)):
                assert getattr(state, name).dtype == torch.float32, (type(model).__name__, name)
