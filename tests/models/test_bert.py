"""BERT against transformers: random-weight models of odd shapes built by transformers give equal outputs
(≤ 1e-5, fp32) on padded batches, for BertModel, BertForPreTraining and BertForMaskedLM; directories go both
ways; every checkpoint key is consumed."""

import pytest
import torch

from seq2bert.errors import CheckpointError
from seq2bert.models.bert.config import bert_base, bert_large, bert_mini, bert_tiny
from seq2bert.models.bert.convert import config_from_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.bert.model import (
    BertForMaskedLM,
    BertForPreTraining,
    BertModel,
    last_layer_at,
    prediction_rows,
)
from seq2bert.models.bert.pretrained import build_bert, load_bert
from seq2bert.nn.layers import transformer_layer
from seq2bert.nn.masks import causal_mask, padding_mask

transformers = pytest.importorskip("transformers")

SHAPES = {
    "2 layers, H 24, 3 heads": dict(hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40),
    "1 layer, H 32, 8 heads, gelu_new, 3 types": dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=8,
                                                     intermediate_size=20, hidden_act="gelu_new", type_vocab_size=3),
    "3 layers, H 16, 1 head, relu, eps 1e-5": dict(hidden_size=16, num_hidden_layers=3, num_attention_heads=1,
                                                  intermediate_size=64, hidden_act="relu", layer_norm_eps=1e-5),
}  # fmt: skip
HF = {
    "BertModel": "BertModel",
    "BertForPreTraining": "BertForPreTraining",
    "BertForMaskedLM": "BertForMaskedLM",
}


def hf_model(architecture, shape, vocab=97, **config):
    """``config``: transformers' fields set beside (or in place of) the shape's."""
    cfg = transformers.BertConfig(
        vocab_size=vocab, max_position_embeddings=40, initializer_range=0.2, **{**SHAPES[shape], **config}
    )
    torch.manual_seed(0)
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    model = getattr(transformers, architecture)(cfg).eval()
    with torch.no_grad():  # a fresh model has zero biases and unit LayerNorms: make them count
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    model = build_bert(cfg, architecture, pooler=any(k.endswith("pooler.dense.weight") for k in sd)).eval()
    model.load_state_dict(from_hf_state_dict(sd, cfg, architecture))
    return model


def batch(vocab=97, types=2):
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


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", list(HF))
def test_outputs_equal_transformers(architecture, shape):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    ids, mask, types, labels = batch(types=hf.config.type_vocab_size)
    kw = dict(output_hidden_states=True, output_attentions=True)
    if architecture == "BertModel":
        with torch.no_grad():
            e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types, **kw)
        o = ours(ids, mask, types, **kw)
        torch.testing.assert_close(o.last_hidden_state, e.last_hidden_state, rtol=0, atol=1e-5)
        torch.testing.assert_close(o.pooler_output, e.pooler_output, rtol=0, atol=1e-5)
    elif architecture == "BertForPreTraining":
        nsp = torch.tensor([0, 1, 1])
        with torch.no_grad():
            e = hf(
                input_ids=ids,
                attention_mask=mask,
                token_type_ids=types,
                labels=labels,
                next_sentence_label=nsp,
                **kw,
            )
        o = ours(ids, mask, types, labels=labels, next_sentence_label=nsp, **kw)
        torch.testing.assert_close(o.prediction_logits, e.prediction_logits, rtol=0, atol=1e-5)
        torch.testing.assert_close(o.seq_relationship_logits, e.seq_relationship_logits, rtol=0, atol=1e-5)
        torch.testing.assert_close(o.loss, e.loss, rtol=0, atol=1e-5)
        sparse = ours(ids, mask, types, labels=labels, next_sentence_label=nsp, sparse_prediction=True)
        torch.testing.assert_close(sparse.loss, e.loss, rtol=0, atol=1e-5)  # the same loss, 3 rows of logits
        torch.testing.assert_close(
            sparse.prediction_logits, e.prediction_logits[labels != -100], rtol=0, atol=1e-5
        )
    else:
        with torch.no_grad():
            e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels, **kw)
        o = ours(ids, mask, types, labels=labels, **kw)
        torch.testing.assert_close(o.logits, e.logits, rtol=0, atol=1e-5)
        torch.testing.assert_close(o.loss, e.loss, rtol=0, atol=1e-5)
        sparse = ours(ids, mask, types, labels=labels, sparse_prediction=True)
        torch.testing.assert_close(sparse.loss, e.loss, rtol=0, atol=1e-5)
        torch.testing.assert_close(sparse.logits, e.logits[labels != -100], rtol=0, atol=1e-5)
    assert len(o.hidden_states) == len(e.hidden_states) and len(o.attentions) == len(e.attentions)
    for a, b in zip(o.hidden_states, e.hidden_states, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    for a, b in zip(o.attentions, e.attentions, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("architecture", list(HF))
def test_directories_both_ways(architecture, tmp_path):
    hf = hf_model(architecture, "2 layers, H 24, 3 heads")
    hf.save_pretrained(tmp_path / "theirs")
    ours, tok = load_bert(tmp_path / "theirs")
    assert type(ours).__name__ == architecture and tok is None
    ids, mask, types, _ = batch()
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(tmp_path / "ours").eval()
    with torch.no_grad():
        a, b = (
            hf(input_ids=ids, attention_mask=mask, token_type_ids=types),
            again(input_ids=ids, attention_mask=mask, token_type_ids=types),
        )
    for x, y in zip(a.to_tuple(), b.to_tuple(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-5)  # eager there, sdpa here
    back = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    reference = hf.state_dict()
    for key, value in reference.items():
        if key in back:
            torch.testing.assert_close(back[key], value, rtol=0, atol=0, msg=key)
    assert {k for k in reference if not k.endswith("position_ids")} <= set(back)


def test_encoder_loads_from_a_pretraining_checkpoint_and_unknown_keys_are_named(tmp_path):
    hf = hf_model("BertForPreTraining", "2 layers, H 24, 3 heads")
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    encoder = BertModel(cfg)
    encoder.load_state_dict(from_hf_state_dict(sd, cfg, "BertModel"))  # the heads are dropped
    sd = {**sd, "bert.encoder.layer.0.extra.weight": torch.zeros(1)}
    with pytest.raises(CheckpointError, match="extra.weight"):
        from_hf_state_dict(sd, cfg, "BertForPreTraining")
    mlm_only = {k: v for k, v in hf.state_dict().items() if not k.startswith("cls.seq_relationship")}
    with pytest.raises(CheckpointError, match="cls.seq_relationship"):
        from_hf_state_dict(mlm_only, cfg, "BertForPreTraining")
    with pytest.raises(CheckpointError, match="model_type"):
        config_from_hf({"model_type": "roberta"})


def test_builders_have_the_published_sizes():
    def params(cfg):
        return sum(p.numel() for p in BertModel(cfg).parameters())

    assert params(bert_base()) == pytest.approx(110e6, rel=0.02)  # Devlin et al.: 110 M
    assert (bert_tiny().num_hidden_layers, bert_tiny().hidden_size, bert_tiny().num_attention_heads) == (
        2,
        128,
        2,
    )
    assert (bert_mini().num_hidden_layers, bert_mini().hidden_size, bert_mini().intermediate_size) == (
        4,
        256,
        1024,
    )
    assert (bert_large().num_hidden_layers, bert_large().hidden_size, bert_large().num_attention_heads) == (
        24,
        1024,
        16,
    )


def test_masked_lm_decoder_is_tied_to_the_word_embeddings():
    for cls in (BertForPreTraining, BertForMaskedLM):
        m = cls(bert_tiny(vocab_size=50))
        assert m.mlm.decoder.weight is m.bert.embeddings.word_embeddings.weight
        assert (m.bert.embeddings.word_embeddings.weight[0] == 0).all()


def test_prediction_rows_are_cls_then_the_labelled_positions_in_order():
    labels = torch.full((3, 6), -100)
    labels[0, 4], labels[0, 1], labels[2, 0], labels[2, 3], labels[2, 5] = 7, 8, 9, 10, 11
    positions, at = prediction_rows(labels)
    assert positions.shape == at.shape == (3, 4)  # [CLS] + the 3 labels of the fullest row
    assert (positions[:, 0] == 0).all() and (at[:, 0] == -100).all()
    assert positions[0, 1:3].tolist() == [1, 4] and at[0].tolist() == [-100, 8, 7, -100]
    assert (at[1] == -100).all()  # a row with nothing to predict
    assert positions[2, 1:].tolist() == [0, 3, 5] and at[2].tolist() == [-100, 9, 10, 11]
    assert (at[at != -100] == labels[labels != -100]).all()  # the same targets, in the same order


@pytest.mark.parametrize("cls", [BertForPreTraining, BertForMaskedLM])
def test_sparse_prediction_trains_as_the_dense_head(cls):
    """The sparse path (MLM head and last layer at the labelled rows only) gives the dense path's loss and
    gradients, so a training step is the same step."""
    torch.manual_seed(0)
    model = cls(bert_tiny(vocab_size=97, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    ids, mask, types, labels = batch()
    labels[0, 8] = 11  # two labels in a row
    extra = dict(next_sentence_label=torch.tensor([0, 1, 1])) if cls is BertForPreTraining else {}
    losses, grads = [], []
    for sparse in (False, True):
        model.zero_grad()
        loss = model(ids, mask, types, labels=labels, sparse_prediction=sparse, **extra).loss
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(losses[1], losses[0], rtol=0, atol=1e-5)
    assert grads[1].keys() == grads[0].keys()
    for name, g in grads[0].items():
        torch.testing.assert_close(grads[1][name], g, rtol=0, atol=1e-5, msg=name)


@pytest.mark.parametrize("norm_first", [False, True])
def test_last_layer_at_some_positions_equals_the_full_layer_there(norm_first):
    torch.manual_seed(0)
    D = 16
    layer = transformer_layer(D, 4, 40, dropout=0.1, norm_first=norm_first).eval()
    x = torch.randn(2, 6, D, requires_grad=True)
    mask = padding_mask(torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]))
    positions = torch.tensor([[0, 2, 5], [0, 3, 1]])  # any positions, any order, per row
    full = layer(x, mask).hidden
    part = last_layer_at(layer, x, mask, positions)  # BERT's sparse prediction (models/bert/model.py)
    assert part.shape == (2, 3, D)
    expected = full.gather(1, positions.unsqueeze(-1).expand(-1, -1, D))
    torch.testing.assert_close(part, expected, rtol=0, atol=1e-6)
    w = torch.randn(2, 3, D)  # and the same gradients flow back to every position's input
    (g_part,) = torch.autograd.grad((part * w).sum(), x)
    (g_full,) = torch.autograd.grad((expected * w).sum(), x)
    torch.testing.assert_close(g_part, g_full, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="padding mask"):
        last_layer_at(layer, x, causal_mask(6), positions)
