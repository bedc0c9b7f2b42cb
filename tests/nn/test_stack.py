"""The stack (seq2bert/nn/stack.py): causal masking, cached steps equal to the full pass, shared layers,
the final norm, and what it returns on request."""

import pytest
import torch
from torch import nn

from seq2bert.nn.embeddings import ScaledEmbedding
from seq2bert.nn.layers import transformer_layer
from seq2bert.nn.stack import TransformerStack

D, H, FF, V = 16, 4, 32, 30


class Embed(nn.Module):
    """Token + learned position embeddings, called as the stack calls its embeddings."""

    def __init__(self):
        super().__init__()
        self.tokens = ScaledEmbedding(V, D)
        self.positions = nn.Embedding(20, D)

    def forward(self, input_ids, *, offset=0):
        return self.tokens(input_ids) + self.positions(torch.arange(offset, offset + input_ids.size(1)))


def stack(*, causal=False, n=3, shared=False, norm_first=False):
    layers = [transformer_layer(D, H, FF, norm_first=norm_first) for _ in range(1 if shared else n)]
    final = nn.LayerNorm(D) if norm_first else None
    return TransformerStack(Embed(), layers, num_layers=n, final_norm=final, causal=causal).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_causal_stack_does_not_look_ahead(norm_first):
    torch.manual_seed(0)
    s = stack(causal=True, norm_first=norm_first)
    x = torch.randint(0, V, (2, 6))
    y = x.clone()
    y[:, 4:] = (y[:, 4:] + 1) % V  # change the last two tokens
    a, b = s(x).last_hidden_state, s(y).last_hidden_state
    torch.testing.assert_close(a[:, :4], b[:, :4], rtol=0, atol=0)
    assert not torch.allclose(a[:, 4:], b[:, 4:])
    bidirectional = stack(norm_first=norm_first)
    bidirectional.load_state_dict(s.state_dict())
    assert not torch.allclose(
        bidirectional(x).last_hidden_state[:, :4], bidirectional(y).last_hidden_state[:, :4]
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_steps_equal_the_full_causal_pass_with_padding(norm_first):
    torch.manual_seed(0)
    s = stack(causal=True, norm_first=norm_first)
    x = torch.randint(0, V, (2, 6))
    am = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])  # left padding on row 1
    full = s(x, am).last_hidden_state
    caches = s.new_caches()
    first = s(x[:, :3], am[:, :3], caches=caches).last_hidden_state  # a prompt, then one token at a time
    steps = [
        s(x[:, t : t + 1], am[:, : t + 1], caches=caches, offset=t).last_hidden_state for t in range(3, 6)
    ]
    torch.testing.assert_close(torch.cat([first, *steps], 1)[am.bool()], full[am.bool()], rtol=0, atol=1e-5)
    assert all(c.self_attn.length == 6 for c in caches)


def test_one_shared_layer_applied_n_times():
    torch.manual_seed(0)
    s = stack(n=4, shared=True)
    assert len(s.layers) == 1 and s.num_layers == 4
    assert sum(p.numel() for p in s.parameters()) == sum(p.numel() for p in stack(n=1).parameters())
    x = torch.randint(0, V, (2, 5))
    h = s.embeddings(x)
    for _ in range(4):
        h = s.layers[0](h).hidden
    out = s(x, output_hidden_states=True, output_attentions=True)
    torch.testing.assert_close(out.last_hidden_state, h, rtol=0, atol=1e-6)
    assert len(out.hidden_states) == 5 and len(out.attentions) == 4 and out.cross_attentions is None
    with pytest.raises(ValueError, match="cannot share"):
        TransformerStack(Embed(), [transformer_layer(D, H, FF) for _ in range(2)], num_layers=3)


def test_layers_in_any_order():
    """ALBERT's groups: two groups of two layers, each group applied twice: modules 0 1 0 1 2 3 2 3."""
    torch.manual_seed(0)
    layers = [transformer_layer(D, H, FF) for _ in range(4)]
    order = [0, 1, 0, 1, 2, 3, 2, 3]
    s = TransformerStack(Embed(), layers, order=order).eval()
    assert s.num_layers == 8 and [s.layer(i) for i in range(8)] == [layers[m] for m in order]
    x = torch.randint(0, V, (2, 5))
    h = s.embeddings(x)
    for m in order:
        h = layers[m](h).hidden
    out = s(x, output_hidden_states=True)
    torch.testing.assert_close(out.last_hidden_state, h, rtol=0, atol=1e-6)
    assert len(out.hidden_states) == 9
    with pytest.raises(ValueError, match="order"):
        TransformerStack(Embed(), layers, order=[0, 4])
    with pytest.raises(ValueError, match="num_layers"):
        TransformerStack(Embed(), layers, order=order, num_layers=4)


def test_final_norm_and_upto():
    torch.manual_seed(0)
    s = stack(norm_first=True)
    x = torch.randint(0, V, (1, 4))
    out = s(x, output_hidden_states=True)
    raw = s(x, upto=3).last_hidden_state  # all layers, no final norm
    torch.testing.assert_close(out.last_hidden_state, s.final_norm(raw), rtol=0, atol=1e-6)
    torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state, rtol=0, atol=0)
    two = s(x, upto=2).last_hidden_state
    torch.testing.assert_close(s.layers[2](two).hidden, raw, rtol=0, atol=1e-6)
