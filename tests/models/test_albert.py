"""ALBERT against transformers: random-weight models of odd shapes built by transformers — E ≠ H, several
groups, several layers per group, odd vocabularies — give equal outputs and losses (≤ 1e-5, fp32) on padded
batches for every class; directories go both ways; every checkpoint key is consumed; the sharing modes have
the parameters they should."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.models.albert.config import AlbertConfig, albert_base, albert_large, albert_xxlarge
from seq2bert.models.albert.convert import config_from_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.albert.model import AlbertForPreTraining, AlbertModel
from seq2bert.models.albert.pretrained import FAMILY, build_albert
from seq2bert.models.pretrained import init_task_model

transformers = pytest.importorskip("transformers")

SHAPES = {
    "E 10 < H 24, 2 layers, 1 group": dict(embedding_size=10, hidden_size=24, num_hidden_layers=2,
                                           num_attention_heads=3, intermediate_size=40, vocab_size=97),
    "E 40 > H 16, 4 layers, 2 groups of 2, relu": dict(embedding_size=40, hidden_size=16, num_hidden_layers=4,
                                                       num_hidden_groups=2, inner_group_num=2, num_attention_heads=4,
                                                       intermediate_size=24, hidden_act="relu", vocab_size=53),
    "E 12, H 32, 3 layers, 3 groups, gelu, 3 types": dict(embedding_size=12, hidden_size=32, num_hidden_layers=3,
                                                          num_hidden_groups=3, num_attention_heads=8,
                                                          intermediate_size=20, hidden_act="gelu", type_vocab_size=3,
                                                          vocab_size=101, layer_norm_eps=1e-5),
    "1 layer, 1 group of 3": dict(embedding_size=8, hidden_size=12, num_hidden_layers=1, inner_group_num=3,
                                  num_attention_heads=2, intermediate_size=30, vocab_size=61),
}  # fmt: skip
ARCHITECTURES = (
    "AlbertModel",
    "AlbertForPreTraining",
    "AlbertForMaskedLM",
    "AlbertForSequenceClassification",
    "AlbertForTokenClassification",
    "AlbertForQuestionAnswering",
    "AlbertForMultipleChoice",
)
CLOSE = dict(rtol=0, atol=1e-5)


def hf_model(architecture, shape, **config):
    cfg = transformers.AlbertConfig(
        max_position_embeddings=40, initializer_range=0.2, **{**SHAPES[shape], **config}
    )
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(cfg).eval()
    with torch.no_grad():  # a fresh model has zero biases and unit LayerNorms: make them count
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    model = build_albert(cfg, architecture, sd).eval()
    model.load_state_dict(from_hf_state_dict(sd, cfg, architecture))
    return model


def batch(vocab, types=2):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, vocab, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 2:] = 0
    ids = ids.masked_fill(mask == 0, 0)
    types_ = torch.randint(0, types, (3, 11), generator=g)
    labels = torch.full_like(ids, -100)
    labels[0, 3], labels[1, 5], labels[2, 1] = 5, 17, 42
    return ids, mask, types_, labels


def run_both(hf, ours, architecture, ids, mask, types, labels, **kw):
    """(pairs of equal outputs, our output, theirs) of one forward with the labels of ``architecture``."""
    a = dict(input_ids=ids, attention_mask=mask, token_type_ids=types, **kw)
    if architecture == "AlbertModel":
        with torch.no_grad():
            e, o = hf(**a), ours(ids, mask, types, **kw)
        return [(o.last_hidden_state, e.last_hidden_state), (o.pooler_output, e.pooler_output)], o, e
    if architecture == "AlbertForPreTraining":
        order = torch.tensor([0, 1, 1])
        with torch.no_grad():
            e = hf(**a, labels=labels, sentence_order_label=order)
            o = ours(ids, mask, types, labels=labels, sentence_order_label=order, **kw)
        return (
            [(o.prediction_logits, e.prediction_logits), (o.sop_logits, e.sop_logits), (o.loss, e.loss)],
            o,
            e,
        )
    if architecture == "AlbertForQuestionAnswering":
        starts, ends = torch.tensor([2, 0, 40]), torch.tensor([4, 0, 41])  # 40, 41: outside, ignored
        with torch.no_grad():
            e = hf(**a, start_positions=starts, end_positions=ends)
            o = ours(ids, mask, types, starts, ends, **kw)
        return [(o.start_logits, e.start_logits), (o.end_logits, e.end_logits), (o.loss, e.loss)], o, e
    if architecture == "AlbertForMultipleChoice":
        ids, mask, types = (x.view(1, 3, -1) for x in (ids, mask, types))  # one example, 3 choices
        a.update(input_ids=ids, attention_mask=mask, token_type_ids=types)
        labels = torch.tensor([2])
    elif architecture == "AlbertForTokenClassification":
        labels = torch.randint(0, hf.config.num_labels, ids.shape, generator=torch.Generator().manual_seed(1))
        labels = labels.masked_fill(mask == 0, -100)
    elif architecture == "AlbertForSequenceClassification":
        labels = torch.tensor([0, 1, 1])
    with torch.no_grad():
        e = hf(**a, labels=labels)
        o = ours(ids, mask, types, labels, **kw)
    return [(o.logits, e.logits), (o.loss, e.loss)], o, e


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_outputs_equal_transformers(architecture, shape):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    ids, mask, types, labels = batch(hf.config.vocab_size, hf.config.type_vocab_size)
    kw = dict(output_hidden_states=True, output_attentions=True)
    pairs, o, e = run_both(hf, ours, architecture, ids, mask, types, labels, **kw)
    for a, b in pairs:
        torch.testing.assert_close(a, b, **CLOSE)
    c = hf.config  # L·k layers computed, each one hidden state and one attention map
    assert len(o.hidden_states) == len(e.hidden_states) == c.num_hidden_layers * c.inner_group_num + 1
    for a, b in zip(o.hidden_states, e.hidden_states, strict=True):
        torch.testing.assert_close(a, b, **CLOSE)
    for a, b in zip(o.attentions, e.attentions, strict=True):
        torch.testing.assert_close(a, b, **CLOSE)


@pytest.mark.parametrize("architecture", ["AlbertForPreTraining", "AlbertForMaskedLM"])
def test_sparse_prediction_gives_the_loss_of_transformers(architecture):
    hf = hf_model(architecture, "E 40 > H 16, 4 layers, 2 groups of 2, relu")
    ours = ours_from(hf, architecture)
    ids, mask, types, labels = batch(hf.config.vocab_size)
    _, _, e = run_both(hf, ours, architecture, ids, mask, types, labels)
    extra = (
        {"sentence_order_label": torch.tensor([0, 1, 1])} if architecture == "AlbertForPreTraining" else {}
    )
    sparse = ours(ids, mask, types, labels=labels, sparse_prediction=True, **extra)
    torch.testing.assert_close(sparse.loss, e.loss, **CLOSE)
    dense = e.prediction_logits if architecture == "AlbertForPreTraining" else e.logits
    logits = sparse.prediction_logits if architecture == "AlbertForPreTraining" else sparse.logits
    torch.testing.assert_close(logits, dense[labels != -100], **CLOSE)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_directories_both_ways(architecture, tmp_path):
    shape = "E 40 > H 16, 4 layers, 2 groups of 2, relu"
    hf = hf_model(architecture, shape)
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")  # the class config.json names
    assert type(ours).__name__ == architecture
    ids, mask, types, labels = batch(hf.config.vocab_size)
    pairs, _, _ = run_both(hf, ours, architecture, ids, mask, types, labels)
    for a, b in pairs:
        torch.testing.assert_close(a, b, **CLOSE)
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(
        tmp_path / "ours", attn_implementation="eager"
    )
    pairs, _, _ = run_both(again.eval(), ours, architecture, ids, mask, types, labels)
    for a, b in pairs:
        torch.testing.assert_close(a, b, **CLOSE)
    back = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    reference = hf.state_dict()
    for key, value in back.items():
        torch.testing.assert_close(value, reference[key], rtol=0, atol=0, msg=key)
    assert {k for k in reference if not k.endswith(("position_ids", "token_type_ids"))} == set(back)


def test_a_pretraining_checkpoint_loads_into_the_encoder_and_unknown_keys_are_named():
    hf = hf_model("AlbertForPreTraining", "E 10 < H 24, 2 layers, 1 group")
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    AlbertModel(cfg).load_state_dict(from_hf_state_dict(sd, cfg, "AlbertModel"))  # the heads are dropped
    extra = {**sd, "albert.encoder.albert_layer_groups.0.extra.weight": torch.zeros(1)}
    with pytest.raises(CheckpointError, match="extra.weight"):
        from_hf_state_dict(extra, cfg, "AlbertForPreTraining")
    no_sop = {k: v for k, v in sd.items() if not k.startswith("sop_classifier")}
    with pytest.raises(CheckpointError, match="sop_classifier"):
        from_hf_state_dict(no_sop, cfg, "AlbertForPreTraining")
    with pytest.raises(CheckpointError, match="model_type"):
        config_from_hf({"model_type": "bert"})


def test_decoder_is_tied_to_the_E_dimensional_word_embeddings():
    m = AlbertForPreTraining(AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_attention_heads=2,
                                          intermediate_size=32, num_hidden_layers=3))  # fmt: skip
    assert m.mlm.decoder.weight is m.albert.embeddings.word_embeddings.weight
    assert m.mlm.decoder.weight.shape == (50, 8) and m.mlm.dense.weight.shape == (8, 16)  # H → E
    assert len(m.albert.layers) == 1 and m.albert.num_layers == 3  # one layer applied three times


# --- the sharing modes
def params(cfg, pooler=False):
    return sum(p.numel() for p in AlbertModel(cfg, add_pooling_layer=pooler).parameters())


def test_sharing_modes_have_the_parameters_they_should():
    V, E, H, F, L, P, T = 100, 8, 16, 40, 6, 512, 2
    size = dict(vocab_size=V, embedding_size=E, hidden_size=H, intermediate_size=F, num_hidden_layers=L,
                num_attention_heads=4)  # fmt: skip
    embeddings = (V + P + T) * E + 2 * E + E * H + H  # tables, LayerNorm, projection E → H
    attention = 4 * H * H + 4 * H  # W^Q, W^K, W^V, W^O and their biases
    ffn = H * F + F + F * H + H  # W_1, W_2
    norms = 2 * 2 * H  # one LayerNorm after each sub-layer
    assert params(AlbertConfig(**size)) == embeddings + attention + ffn + norms  # one layer for all
    assert params(AlbertConfig(**size, share="none")) == embeddings + L * (attention + ffn + norms)
    assert params(AlbertConfig(**size, share="attention")) == embeddings + attention + L * (ffn + norms)
    assert params(AlbertConfig(**size, share="ffn")) == embeddings + ffn + L * (attention + norms)
    assert params(AlbertConfig(**size, num_hidden_groups=3)) == embeddings + 3 * (attention + ffn + norms)
    assert params(AlbertConfig(**size, num_hidden_groups=2, inner_group_num=2)) == (
        embeddings + 4 * (attention + ffn + norms)
    )


def test_paper_sizes():
    """Table 1: ALBERT-base 12 M, large 18 M parameters; xxlarge 235 M there, 223 M in the published
    checkpoint (albert-xxlarge-v2, which transformers reads as these shapes)."""
    assert params(albert_base(), pooler=True) == pytest.approx(12e6, rel=0.05)
    assert params(albert_large(), pooler=True) == pytest.approx(18e6, rel=0.05)
    assert params(albert_xxlarge(), pooler=True) == pytest.approx(223e6, rel=0.01)


@pytest.mark.parametrize("share", ["attention", "ffn", "none"])
def test_our_sharing_modes_are_read_by_transformers_as_unshared_albert(share, tmp_path):
    torch.manual_seed(0)
    cfg = AlbertConfig(vocab_size=61, embedding_size=8, hidden_size=16, num_attention_heads=4,
                       intermediate_size=24, num_hidden_layers=3, max_position_embeddings=40, share=share)  # fmt: skip
    ours = build_albert(cfg, "AlbertForPreTraining").eval()
    ours.save_pretrained(tmp_path / "m")
    theirs = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "m", attn_implementation="eager")
    assert theirs.config.num_hidden_groups == 3
    ids, mask, types, labels = batch(61)
    pairs, _, _ = run_both(theirs.eval(), ours, "AlbertForPreTraining", ids, mask, types, labels)
    for a, b in pairs:
        torch.testing.assert_close(a, b, **CLOSE)
    again = seq2bert.from_pretrained(tmp_path / "m")
    assert again.config.share == share and again.config.num_hidden_groups == 1
    assert params(again.config) == params(cfg)  # shared again, not three copies
    theirs.albert.encoder.albert_layer_groups[1].albert_layers[0].attention.query.weight.data.add_(1.0)
    theirs.albert.encoder.albert_layer_groups[1].albert_layers[0].ffn.weight.data.add_(1.0)
    if share != "none":
        with pytest.raises(CheckpointError, match="differs from layer 0"):
            from_hf_state_dict(theirs.state_dict(), again.config, "AlbertForPreTraining")


def test_config_is_checked():
    with pytest.raises(ConfigError, match="share"):
        AlbertConfig(share="embeddings")
    with pytest.raises(ConfigError, match="num_hidden_groups"):
        AlbertConfig(num_hidden_layers=12, num_hidden_groups=5)
    with pytest.raises(ConfigError, match="across all layers"):
        AlbertConfig(share="ffn", num_hidden_groups=2)
    assert registry.get("albert").architecture_for("pretraining") == "AlbertForPreTraining"


def test_a_pretraining_checkpoint_starts_every_task_head(tmp_path):
    pretrained = hf_model("AlbertForPreTraining", "E 40 > H 16, 4 layers, 2 groups of 2, relu")
    pretrained.save_pretrained(tmp_path / "pre")
    ids, mask, types, _ = batch(pretrained.config.vocab_size)
    with torch.no_grad():
        expected = pretrained.albert(
            input_ids=ids, attention_mask=mask, token_type_ids=types
        ).last_hidden_state
    for architecture, new in [
        ("AlbertForSequenceClassification", ["classifier.bias", "classifier.weight"]),
        ("AlbertForTokenClassification", ["classifier.bias", "classifier.weight"]),
        ("AlbertForQuestionAnswering", ["qa_outputs.bias", "qa_outputs.weight"]),
        ("AlbertForMultipleChoice", ["classifier.bias", "classifier.weight"]),
    ]:
        model, _, initialised = init_task_model(
            FAMILY, tmp_path / "pre", architecture, id2label={0: "a", 1: "b"}
        )
        assert sorted(initialised) == new, architecture
        got = model.eval().albert(ids, mask, types).last_hidden_state
        torch.testing.assert_close(got, expected, **CLOSE)
