import math

import pytest
import torch

from seq2bert.training.config import TrainConfig
from seq2bert.training.optim import build_optimizer, lr_multiplier, param_groups


def test_no_decay_on_biases_and_norms():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.Embedding(5, 4))
    decay, no_decay = param_groups(model, 0.01)
    assert {p.shape for p in decay["params"]} == {torch.Size([4, 4]), torch.Size([5, 4])}
    assert len(no_decay["params"]) == 3 and no_decay["weight_decay"] == 0.0
    opt = build_optimizer(model, TrainConfig(weight_decay=0.1))
    assert isinstance(opt, torch.optim.AdamW) and opt.param_groups[0]["weight_decay"] == 0.1


def test_linear_warmup_then_decay():
    cfg = TrainConfig(schedule="linear", warmup_steps=10)
    m = [lr_multiplier(s, cfg, total_steps=110) for s in range(110)]
    assert m[0] == pytest.approx(0.1) and m[9] == pytest.approx(1.0)
    assert m[60] == pytest.approx(0.5) and m[109] == pytest.approx(0.01)  # the last step still learns
    assert all(a >= b for a, b in zip(m[9:], m[10:], strict=False))


def test_noam_is_vaswani_eq3():
    cfg = TrainConfig(schedule="noam", warmup_steps=4000, noam_d_model=512)
    for step in (1, 100, 4000, 10000):
        expected = 512**-0.5 * min(step**-0.5, step * 4000**-1.5)
        assert lr_multiplier(step - 1, cfg, 0) == pytest.approx(expected)
    peak = max(range(1, 8000), key=lambda s: lr_multiplier(s - 1, cfg, 0))
    assert peak == 4000


def test_inverse_sqrt_and_constant():
    cfg = TrainConfig(schedule="inverse_sqrt", warmup_steps=100)
    assert lr_multiplier(99, cfg, 0) == pytest.approx(1.0)
    assert lr_multiplier(399, cfg, 0) == pytest.approx(math.sqrt(100 / 400))
    assert lr_multiplier(5, TrainConfig(), 0) == 1.0


def test_halving_is_sutskever_sect_3_4():
    from seq2bert.training.config import sutskever2014_training

    cfg = sutskever2014_training()
    assert (cfg.optimizer, cfg.lr, cfg.clip_norm) == ("sgd", 0.7, 5.0)
    spe = 100  # steps per epoch
    assert lr_multiplier(0, cfg, 0, spe) == 1.0 and lr_multiplier(499, cfg, 0, spe) == 1.0
    assert lr_multiplier(500, cfg, 0, spe) == 0.5 and lr_multiplier(549, cfg, 0, spe) == 0.5
    assert lr_multiplier(550, cfg, 0, spe) == 0.25 and lr_multiplier(700, cfg, 0, spe) == 0.5**5


def test_slanted_triangular_is_ulmfit_eq_3():
    cfg = TrainConfig(schedule="slanted_triangular", stlr_cut_frac=0.1, stlr_ratio=32)
    T = 1000
    cut = 100
    for t in (1, 50, 100, 101, 550, 1000):  # t counted from 1, as in the paper
        p = t / cut if t < cut else 1 - (t - cut) / (cut * (1 / 0.1 - 1))
        assert lr_multiplier(t - 1, cfg, T) == pytest.approx((1 + p * 31) / 32)
    assert lr_multiplier(cut - 1, cfg, T) == pytest.approx(1.0)  # the peak at the cut
    assert lr_multiplier(T - 1, cfg, T) == pytest.approx(1 / 32)  # back to lr / ratio at the end


def test_discriminative_rates_divide_each_lower_group_by_the_decay():
    from seq2bert.models import registry
    from seq2bert.models.bert.config import bert_tiny
    from seq2bert.training.optim import layer_groups

    model = registry.build_model(bert_tiny(vocab_size=50), "BertForSequenceClassification")
    groups = layer_groups(model)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all("embeddings" in names[id(p)] for p in groups[0])
    layers = model.config.num_hidden_layers
    assert len(groups) == layers + 2  # embeddings, each layer, then the pooler and classifier
    assert all(f"layers.{i}." in names[id(p)] for i in range(layers) for p in groups[1 + i])
    assert {names[id(p)] for p in groups[-1]} >= {"classifier.weight", "classifier.bias"}
    opt = build_optimizer(model, TrainConfig(lr=1e-3, layer_lr_decay=1 / 2.6))
    rate = {id(p): g["lr"] for g in opt.param_groups for p in g["params"]}
    for depth, group in enumerate(reversed(groups)):
        assert all(rate[id(p)] == pytest.approx(1e-3 / 2.6**depth) for p in group)
    lstm = torch.nn.LSTM(4, 4, num_layers=2)
    assert [len(g) for g in layer_groups(lstm)] == [4, 4]  # weight_ih_l0 … bias_hh_l1: two layers


def test_slanted_triangular_ends_at_the_lowest_rate_on_short_runs_too():
    cfg = TrainConfig(schedule="slanted_triangular", stlr_cut_frac=0.1, stlr_ratio=32)
    for T in (3, 7, 25):
        assert lr_multiplier(T - 1, cfg, T) == pytest.approx(1 / 32)


def test_layer_groups_cover_each_parameter_once_and_refuse_two_stacks():
    from seq2bert.errors import ConfigError
    from seq2bert.models import registry
    from seq2bert.models.bilstm.config import BiLSTMConfig
    from seq2bert.models.gpt.config import gpt2_tiny
    from seq2bert.models.rnn_lm.config import RNNLMConfig
    from seq2bert.models.transformer.config import TransformerConfig
    from seq2bert.training.optim import layer_groups

    for cfg, arch in [
        (gpt2_tiny(), None),
        (
            BiLSTMConfig(vocab_size=20, embedding_dim=8, hidden_size=8, num_layers=2),
            "BiLSTMForSequenceClassification",
        ),
        (RNNLMConfig(vocab_size=20, embedding_dim=8, hidden_size=8), None),
    ]:
        model = registry.build_model(cfg, arch)
        groups = layer_groups(model)
        assert sorted(id(p) for g in groups for p in g) == sorted(id(p) for p in model.parameters())
        names = {id(p): n for n, p in model.named_parameters()}
        assert all("embed" in names[id(p)] for p in groups[0]) and len(groups) >= 3
    t = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, encoder_attention_heads=2,
                          decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32)  # fmt: skip
    with pytest.raises(ConfigError, match="2 stacks of layers"):
        layer_groups(registry.build_model(t))


def test_a_bilstm_on_top_of_the_encoder_learns_with_the_head():
    """BERT's Table 5 '+ BiLSTM': the LSTM's weight_ih_l0 … are not a second stack of layers but part of what
    fine-tuning adds, at the head's rate (and unfrozen first)."""
    from seq2bert.models import registry
    from seq2bert.models.bert.config import bert_tiny
    from seq2bert.models.lstm_top import BiLSTMSettings, attach
    from seq2bert.training.optim import layer_groups

    model = attach(
        registry.build_model(bert_tiny(vocab_size=50), "BertForSequenceClassification"),
        BiLSTMSettings(enabled=True),
    )
    groups = layer_groups(model)
    names = {id(p): n for n, p in model.named_parameters()}
    lstm = {n for n in names.values() if ".top." in n}
    assert lstm and lstm <= {names[id(p)] for p in groups[-1]}
    assert len(groups) == model.config.num_hidden_layers + 2
