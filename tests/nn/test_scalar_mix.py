"""The scalar mix (nn/scalar_mix.py) equals ELMo's Eq. 1 of Sect. 3.2, γ Σ_j softmax(w)_j h_j; at the start
it is the average of the layers; its layer norm uses the real tokens only; its penalty is λ Σ (w_j − w̄)²."""

import torch

from seq2bert.nn.scalar_mix import ScalarMix


def test_the_mix_is_the_equation():
    torch.manual_seed(0)
    layers = [torch.randn(2, 4, 6) for _ in range(3)]
    mix = ScalarMix(3)
    torch.testing.assert_close(mix(layers), sum(layers) / 3)  # w = 0, γ = 1: the average
    with torch.no_grad():
        mix.weights.copy_(torch.tensor([0.5, -1.0, 2.0]))
        mix.gamma.fill_(1.7)
    s = torch.exp(mix.weights) / torch.exp(mix.weights).sum()
    torch.testing.assert_close(mix(layers), 1.7 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2]))
    torch.testing.assert_close(mix.penalty(0.1), 0.1 * ((mix.weights - mix.weights.mean()) ** 2).sum())
    assert (
        float(ScalarMix(3, initial_weights=[1, 1, 1]).penalty(1.0).detach()) == 0.0
    )  # a shift costs nothing
    dropped = ScalarMix(3, dropout=0.5).train()(layers)
    assert (dropped == 0).any()


def test_layer_norm_over_the_real_tokens():
    torch.manual_seed(0)
    layers = [torch.randn(2, 4, 6) for _ in range(2)]
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    padded = [h.clone() for h in layers]
    for h in padded:
        h[~mask.bool()] = 1e3  # whatever stands at padding changes nothing
    mix = ScalarMix(2, layer_norm=True)

    def normalised(h):
        real = h[mask.bool()]  # (N, D): the real tokens' features
        return (h - real.mean()) / torch.sqrt(real.var(unbiased=False) + 1e-12)

    expected = (normalised(layers[0]) + normalised(layers[1])) / 2
    out = mix(padded, mask)
    torch.testing.assert_close(out[mask.bool()], expected[mask.bool()])
