import pytest
import torch

from seq2bert.models.seq2seq.config import Seq2SeqConfig, sutskever2014
from seq2bert.models.seq2seq.model import Seq2Seq
from seq2bert.objectives.cross_entropy import IGNORE_INDEX


def tiny(**kw):
    cfg = dict(
        src_vocab_size=13, tgt_vocab_size=11, embedding_dim=8, hidden_size=12, num_layers=2, dropout=0.0
    )
    cfg.update(kw)
    torch.manual_seed(0)
    return Seq2Seq(Seq2SeqConfig(**cfg)).eval()


@pytest.mark.parametrize("reverse", [True, False])
def test_padding_does_not_change_the_fixed_vector(reverse):
    model = tiny(reverse_source=reverse)
    alone = model.encode(torch.tensor([[3, 4, 5]]), torch.ones(1, 3, dtype=torch.long))
    padded = model.encode(
        torch.tensor([[3, 4, 5, 0, 0], [7, 8, 9, 10, 11]]), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    )
    torch.testing.assert_close(padded.h[:, :1], alone.h, rtol=0, atol=1e-6)
    torch.testing.assert_close(padded.c[:, :1], alone.c, rtol=0, atol=1e-6)


def test_reversed_source_reads_the_reversed_sentence():
    fwd, rev = tiny(reverse_source=False), tiny(reverse_source=True)
    rev.load_state_dict(fwd.state_dict())
    x = torch.tensor([[3, 4, 5, 6]])
    a = rev.encode(x)
    b = fwd.encode(x.flip(1))
    torch.testing.assert_close(a.h, b.h)


def test_fixed_vector_is_the_last_lstm_state_eq1():
    """v is the final (h, c) of every layer of the encoder LSTM, computed here step by step with LSTMCells."""
    model = tiny(reverse_source=False)
    x = torch.tensor([[3, 4, 5]])
    v = model.encode(x)
    emb = model.src_embed(x)[0]
    inp = emb
    for layer in range(2):
        cell = torch.nn.LSTMCell(8 if layer == 0 else 12, 12)
        cell.weight_ih.data = getattr(model.encoder, f"weight_ih_l{layer}").data
        cell.weight_hh.data = getattr(model.encoder, f"weight_hh_l{layer}").data
        cell.bias_ih.data = getattr(model.encoder, f"bias_ih_l{layer}").data
        cell.bias_hh.data = getattr(model.encoder, f"bias_hh_l{layer}").data
        h = c = torch.zeros(1, 12)
        outs = []
        for t in range(3):
            h, c = cell(inp[t : t + 1], (h, c))
            outs.append(h)
        inp = torch.cat(outs)
        torch.testing.assert_close(v.h[layer], h)
        torch.testing.assert_close(v.c[layer], c)


def test_incremental_decoding_equals_teacher_forcing():
    model = tiny()
    src = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
    mask = src.ne(0).long()
    dec = torch.tensor([[5, 2, 3, 4], [5, 7, 8, 9]])
    full = model(src, mask, dec).logits  # (B, T, V)
    state = model.encode(src, mask)
    for t in range(dec.size(1)):
        step, state = model.step(dec[:, t], state)
        torch.testing.assert_close(step, full[:, t], rtol=0, atol=1e-5)


def test_loss_ignores_padding_labels():
    model = tiny()
    src = torch.tensor([[3, 4, 5]])
    dec = torch.tensor([[5, 2, 3]])
    labels = torch.tensor([[2, 3, 6]])
    out = model(src, None, dec, labels=labels)
    logits = out.logits[0]
    manual = torch.nn.functional.cross_entropy(logits, labels[0])
    torch.testing.assert_close(out.loss, manual)
    labels2 = torch.tensor([[2, 3, IGNORE_INDEX]])
    manual2 = torch.nn.functional.cross_entropy(logits[:2], labels[0, :2])
    torch.testing.assert_close(model(src, None, dec, labels=labels2).loss, manual2)


def test_initialisation_is_uniform_in_init_range():
    model = tiny(init_range=0.3)
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert weights.abs().max() <= 0.3 and weights.abs().max() > 0.29  # fills the range: uniform, not normal
    assert abs(float(weights.std()) - 0.3 / 3**0.5) < 0.01


def test_reorder_selects_rows():
    model = tiny()
    state = model.encode(torch.tensor([[3, 4], [5, 6], [7, 8]]))
    r = model.reorder(state, torch.tensor([2, 2, 0]))
    torch.testing.assert_close(r.h[:, 0], state.h[:, 2])
    torch.testing.assert_close(r.c[:, 2], state.c[:, 0])


def test_paper_configuration():
    cfg = sutskever2014(src_vocab_size=160000, tgt_vocab_size=80000)
    assert (cfg.num_layers, cfg.hidden_size, cfg.embedding_dim, cfg.reverse_source) == (4, 1000, 1000, True)
    assert (cfg.init_range, cfg.dropout) == (0.08, 0.0)
