"""SesameBERT (Su & Cheng 2019): the squeeze and excitation and the Gaussian blur against the paper's equations
written out, padding that changes nothing, the options on every encoder family, and checkpoints that keep them
while transformers still reads the family's weights."""

import copy
import json

import numpy as np
import pytest
import torch

from seq2bert.errors import ConfigError
from seq2bert.models import encoder_options, registry, sesame
from seq2bert.models.pretrained import load, save_hf
from seq2bert.models.sesame import SesameSettings
from seq2bert.nn.sesame import GaussianBlur, LayerExcitation, gaussian_kernel
from tests.models.hf_parity import CLOSE, made_to_count, padded
from tests.models.small_configs import small_config

BOTH = SesameSettings(squeeze_excitation=True, gaussian_blur=True)
ENCODERS = ["bert", "roberta", "albert", "electra", "distilbert", "mobilebert", "xlnet"]


def test_the_kernel_is_the_papers_normalised_gaussian():
    w = gaussian_kernel(3, 0.3)
    e = np.exp(-1 / (2 * 0.3**2))
    np.testing.assert_allclose(w.numpy(), [e / (1 + 2 * e), 1 / (1 + 2 * e), e / (1 + 2 * e)], rtol=1e-6)
    assert w.sum().item() == pytest.approx(1.0) and w[1] > 0.99  # [0.0038, 0.9923, 0.0038]
    with pytest.raises(ValueError, match="odd"):
        gaussian_kernel(4, 0.3)


@pytest.mark.parametrize("k, sigma", [(3, 0.3), (5, 1.0), (7, 2.0)])
def test_the_blur_is_a_depthwise_convolution_over_the_symmetrically_extended_sequence(k, sigma):
    x = torch.randn(2, 9, 5, dtype=torch.float64)
    w = gaussian_kernel(k, sigma).double().numpy()
    r = k // 2
    expected = np.empty_like(x.numpy())
    for b in range(2):
        for c in range(5):  # y_t = Σ_j w_j x_{t+j}, x extended as tf.pad's SYMMETRIC (numpy's "symmetric")
            extended = np.pad(x[b, :, c].numpy(), r, mode="symmetric")
            expected[b, :, c] = [
                sum(w[j + r] * extended[t + r + j] for j in range(-r, r + 1)) for t in range(9)
            ]
    torch.testing.assert_close(GaussianBlur(k, sigma).double()(x), torch.from_numpy(expected))


@pytest.mark.parametrize("left", [False, True])
def test_the_blur_of_a_padded_row_is_the_blur_of_its_real_tokens(left):
    blur = GaussianBlur(5, 1.0)
    x = torch.randn(1, 10, 4)
    valid = torch.zeros(1, 10, dtype=torch.bool)
    real = slice(4, 10) if left else slice(0, 6)
    valid[0, real] = True
    y = blur(x, valid)
    torch.testing.assert_close(y[:, real], blur(x[:, real]))
    torch.testing.assert_close(y[~valid], x[~valid])  # padding left as it is


def test_the_excitation_is_sigma_of_w2_relu_w1_of_the_squeezed_layers():
    torch.manual_seed(0)
    se = LayerExcitation(6, reduction=3)
    assert (se.squeeze.in_features, se.squeeze.out_features, se.excite.out_features) == (6, 2, 6)
    assert torch.all(se.squeeze.bias == 0.8) and torch.all(se.excite.bias == 0.8)  # the released code's
    layers = [torch.randn(3, 7, 4) for _ in range(6)]
    valid = torch.ones(3, 7, dtype=torch.bool)
    valid[1, 5:] = False
    s = se(layers, valid)
    for b, n in ((0, 7), (1, 5), (2, 7)):  # z_ℓ = 1/(T·H) Σ_t Σ_j u_ℓ[t, j] over the real tokens
        z = torch.stack([u[b, :n].mean() for u in layers])
        w1, b1, w2, b2 = se.squeeze.weight, se.squeeze.bias, se.excite.weight, se.excite.bias
        torch.testing.assert_close(s[b], torch.sigmoid(w2 @ torch.relu(w1 @ z + b1) + b2))


def task_model(model_type, settings=None):
    family = registry.get(model_type)
    torch.manual_seed(0)
    model = made_to_count(family.make(small_config(family), family.architecture_for("sequence")))
    if settings is not None:
        sesame.attach(model, settings)
    return model.eval()


def inputs_of(model, left=False):
    c = model.config
    return padded(c.vocab_size, left=left)


@pytest.mark.parametrize("model_type", ENCODERS)
def test_each_encoder_takes_the_options_and_gates_of_one_and_a_kernel_of_one_change_nothing(model_type):
    plain = task_model(model_type)
    ours = sesame.attach(copy.deepcopy(plain), BOTH)
    left = model_type == "xlnet"
    batch = inputs_of(plain, left)
    with torch.no_grad():
        expected = plain(**batch).logits
        assert not torch.allclose(ours(**batch).logits, expected, rtol=1e-3, atol=0)  # the options act
        stack = sesame.encoder_stack(ours)
        stack.excitation.excite.bias.fill_(40.0)  # s = σ(40 + …) = 1
        blurs = [m.blur for m in stack.modules() if getattr(m, "blur", None) is not None]
        assert blurs
        for blur in blurs:  # σ → 0: the kernel [0, 1, 0]
            blur.weights.copy_(gaussian_kernel(3, 1e-3))
        torch.testing.assert_close(ours(**batch).logits, expected, **CLOSE)


@pytest.mark.parametrize("model_type", ["bert", "xlnet"])
def test_a_padded_sentence_gets_the_logits_it_gets_alone(model_type):
    model = task_model(model_type, BOTH)
    left = model_type == "xlnet"
    batch = inputs_of(model, left)
    stack = sesame.encoder_stack(model)
    told = []  # the real tokens the squeeze and every blur were given: the padding is never read as a word
    for module in [stack.excitation, *(m.blur for m in stack.modules() if getattr(m, "blur", None))]:
        module.register_forward_hook(lambda _, args, __: told.append(args[1]))
    with torch.no_grad():
        logits = model(**batch).logits
        assert len(told) == 1 + stack.num_layers
        for valid in told:
            assert torch.equal(valid, batch["attention_mask"].bool())
        assert_each_row_as_alone(model, batch, logits)


def assert_each_row_as_alone(model, batch, logits):
    """Each padded row's logits are those of its real tokens run alone."""
    for row in range(len(logits)):
        real = batch["attention_mask"][row].bool()
        alone = model(input_ids=batch["input_ids"][row][real][None]).logits
        torch.testing.assert_close(logits[row], alone[0], **CLOSE)


def test_a_decoder_and_a_model_without_a_stack_are_one_clear_error():
    with pytest.raises(ConfigError, match="one bidirectional Transformer stack"):
        sesame.attach(task_model("gpt2"), BOTH)
    with pytest.raises(ConfigError, match="one bidirectional Transformer stack"):
        sesame.attach(task_model("bilstm"), BOTH)


def test_a_checkpoint_keeps_the_options_and_transformers_reads_the_family_weights(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = task_model("bert", BOTH)
    with torch.no_grad():
        sesame.encoder_stack(model).excitation.excite.weight.normal_()  # trained away from its start
    save_hf(registry.get("bert"), model, tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["sesame"] == {"squeeze_excitation": True, "gaussian_blur": True, "reduction": 3,
                                "kernel_size": 3, "sigma": 0.3}  # fmt: skip
    assert (tmp_path / "ckpt" / "sesame.safetensors").is_file()
    batch = inputs_of(model)
    loaded, _ = load(tmp_path / "ckpt")
    assert sesame.settings_of(loaded) == BOTH
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, model(**batch).logits, **CLOSE)
    theirs = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "ckpt").eval()
    plain = task_model("bert")
    plain.load_state_dict(encoder_options.split_state(model.state_dict())[0])
    with torch.no_grad():  # the family's weights, read without the options
        torch.testing.assert_close(theirs(**batch).logits, plain(**batch).logits, **CLOSE)
