"""The RNN encoder-decoder of Cho et al. (2014) against its equations (Appendix A.1), computed here by hand."""

import pytest
import torch

from seq2bert.models.seq2seq.cho import ChoEncoderDecoder, ChoState, init_paper_style
from seq2bert.models.seq2seq.config import ChoConfig, cho2014
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

E, N, M, V_SRC, V_TGT = 6, 8, 5, 13, 11


def tiny(randomize=True, **kw):
    """A tiny model; ``randomize`` redraws every parameter from N(0, 0.5²) so that each term of the equations
    moves the outputs visibly (the paper's N(0, 0.01²) makes them almost constant)."""
    cfg = dict(
        src_vocab_size=V_SRC,
        tgt_vocab_size=V_TGT,
        embedding_dim=E,
        hidden_size=N,
        maxout_size=M,
        num_layers=1,
        dropout=0.0,
    )
    cfg.update(kw)
    torch.manual_seed(0)
    model = ChoEncoderDecoder(ChoConfig(**cfg)).eval()
    if randomize:
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.5)
            model.src_embed.weight[0].zero_()
            model.tgt_embed.weight[0].zero_()
    return model


SRC = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
DEC = torch.tensor([[5, 2, 3, 4], [5, 7, 8, 9]])


@pytest.mark.parametrize("num_layers", [1, 2])
def test_incremental_decoding_equals_teacher_forcing(num_layers):
    model = tiny(num_layers=num_layers)
    mask = SRC.ne(0).long()
    with torch.no_grad():
        full = model(SRC, mask, DEC).logits  # (B, T, V)
        state = model.encode(SRC, mask)
        for t in range(DEC.size(1)):
            step, state = model.step(DEC[:, t], state)
            torch.testing.assert_close(step, full[:, t], rtol=0, atol=1e-6)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_right_padding_of_the_source_changes_nothing(num_layers):
    model = tiny(num_layers=num_layers)
    with torch.no_grad():
        alone = model(torch.tensor([[3, 4, 5]]), None, DEC[:1]).logits
        padded_src = torch.tensor([[3, 4, 5, 0, 0, 0], [7, 8, 9, 10, 11, 12]])
        padded = model(padded_src, padded_src.ne(0).long(), DEC).logits
        state_alone = model.encode(torch.tensor([[3, 4, 5]]))
        state_padded = model.encode(padded_src)
    torch.testing.assert_close(padded[:1], alone, rtol=0, atol=1e-6)
    torch.testing.assert_close(state_padded.c[:1], state_alone.c, rtol=0, atol=1e-6)
    torch.testing.assert_close(state_padded.h[:, :1], state_alone.h, rtol=0, atol=1e-6)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_context_is_tanh_V_h_T_and_decoder_starts_from_tanh_V_prime_c(num_layers):
    """A.1.1: c = tanh(V h_T), h_T the encoder's last hidden state; A.1.2: h'_0 = tanh(V' c) per layer."""
    model = tiny(num_layers=num_layers).double()
    gru = torch.nn.GRU(E, N, num_layers=num_layers, batch_first=True).double()
    gru.load_state_dict(model.encoder.rnn.state_dict())
    state = model.encode(SRC)
    with torch.no_grad():
        for b in range(SRC.size(0)):
            ids = SRC[b][SRC[b].ne(0)]  # the unpadded sentence
            _, h_n = gru(model.src_embed(ids)[None])  # (L, 1, n)
            h_T = h_n[-1, 0]
            c = torch.tanh(model.V.weight @ h_T + model.V.bias)
            torch.testing.assert_close(state.c[b], c)
            for layer in range(num_layers):
                rows = slice(layer * N, (layer + 1) * N)
                h0 = torch.tanh(model.V_prime.weight[rows] @ c + model.V_prime.bias[rows])
                torch.testing.assert_close(state.h[layer, b], h0)


def test_decoder_sees_the_context_at_every_step():
    """Unlike Sutskever et al., c is an input of every step: changing c after step 1 changes later logits."""
    model = tiny()
    with torch.no_grad():
        state = model.encode(SRC)
        after_first = model.decode(DEC[:, :1], state).state
        other_c = torch.randn_like(state.c)
        same = model.decode(DEC[:, 1:], after_first).logits
        changed = model.decode(DEC[:, 1:], ChoState(after_first.h, other_c)).logits
        # same h' after step 1, another c: every later step's logits move
        for t in range(DEC.size(1) - 1):
            assert (same[:, t] - changed[:, t]).abs().max() > 1e-3
        # and c stays the same c through decoding: the state hands it on unchanged
        final = model.decode(DEC, state).state
        assert torch.equal(final.c, state.c)


def test_maxout_deep_output_by_hand():
    """s' = O [h'_t; e(y_{t−1}); c] + b, s[k] = max(s'[2k], s'[2k+1]), logits = G s + g."""
    model = tiny().double()
    with torch.no_grad():
        state = model.encode(SRC)
        logits = model.decode(DEC, state).logits
        gru = torch.nn.GRU(E + N, N, batch_first=True).double()
        gru.load_state_dict(model.decoder.rnn.state_dict())
        y = model.tgt_embed(DEC)  # (B, T, E)
        c = state.c[:, None].expand(-1, DEC.size(1), -1)
        h, _ = gru(torch.cat([y, c], -1), state.h)  # h'_t: (B, T, n)
        O, b = model.output.input.weight, model.output.input.bias
        G, g = model.output.output.weight, model.output.output.bias
        for bi in range(DEC.size(0)):
            for t in range(DEC.size(1)):
                s_prime = O @ torch.cat([h[bi, t], y[bi, t], c[bi, t]]) + b  # (2l,)
                s = torch.stack([torch.maximum(s_prime[2 * k], s_prime[2 * k + 1]) for k in range(M)])
                torch.testing.assert_close(logits[bi, t], G @ s + g)


def test_init_paper_style():
    """A.1.3: biases 0, recurrent matrices orthogonal per gate, other weights N(0, 0.01²), [PAD] row 0."""
    model = tiny(randomize=False, num_layers=2)
    others = []
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if leaf.startswith("bias"):
            assert p.abs().sum() == 0, name
        elif leaf.startswith("weight_hh"):
            blocks = p.detach().split(N, dim=0)
            assert len(blocks) == 3  # r, z, n
            for block in blocks:
                torch.testing.assert_close(block @ block.T, torch.eye(N), rtol=0, atol=1e-5)
        else:
            others.append(p.detach().flatten())
    for emb in (model.src_embed, model.tgt_embed):
        assert emb.weight[0].abs().sum() == 0
        assert emb.weight[1:].abs().min() > 0
    rest = torch.cat(others)
    assert 0.008 < float(rest.std()) < 0.012 and rest.abs().max() < 0.06

    # the function itself, on a module that had other values
    gru = torch.nn.GRU(4, 3)
    init_paper_style(gru, std=0.01)
    assert gru.bias_ih_l0.abs().sum() == 0 and gru.bias_hh_l0.abs().sum() == 0
    for block in gru.weight_hh_l0.detach().split(3):
        torch.testing.assert_close(block @ block.T, torch.eye(3), rtol=0, atol=1e-5)


def test_paper_configuration():
    cfg = cho2014(src_vocab_size=15000, tgt_vocab_size=15000)
    assert cfg.model_type == "cho"
    assert (cfg.hidden_size, cfg.embedding_dim, cfg.maxout_size, cfg.num_layers, cfg.dropout) == (
        1000,
        100,
        500,
        1,
        0.0,
    )
    assert cho2014(hidden_size=64).hidden_size == 64


def test_reorder_selects_rows():
    model = tiny()
    with torch.no_grad():
        state = model.encode(torch.tensor([[3, 4], [5, 6], [7, 8]]))
    index = torch.tensor([2, 2, 0])
    r = model.reorder(state, index)
    for i, j in enumerate(index.tolist()):
        torch.testing.assert_close(r.h[:, i], state.h[:, j], rtol=0, atol=0)
        torch.testing.assert_close(r.c[i], state.c[j], rtol=0, atol=0)
    assert not torch.equal(r.c[0], r.c[2])


def test_loss_is_cross_entropy_by_hand_ignoring_minus_100():
    model = tiny()
    labels = torch.tensor([[2, 3, 4, 6], [7, 8, IGNORE_INDEX, IGNORE_INDEX]])
    with torch.no_grad():
        out = model(SRC, None, DEC, labels=labels)
        log_p = torch.log_softmax(out.logits, dim=-1)
        terms = [-log_p[b, t, labels[b, t]] for b in range(2) for t in range(4) if labels[b, t] != -100]
    assert len(terms) == 6
    torch.testing.assert_close(out.loss, torch.stack(terms).mean())
    assert model(SRC, None, DEC).loss is None


def test_forward_needs_decoder_inputs_and_vocab():
    model = tiny()
    with pytest.raises(ValueError, match="decoder_input_ids"):
        model(SRC)
    with pytest.raises(ValueError, match="src_vocab_size"):
        ChoEncoderDecoder(ChoConfig())
