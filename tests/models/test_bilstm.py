"""The BiLSTM baselines (models/bilstm/): shapes, padding (a padded row gives what it gives alone, both
directions, both poolings), the sentence vector of each pooling, the fused LSTM equal to the explicit
equations, the losses, and checkpoints through the registry and ``seq2bert.from_pretrained``."""

import json
import re

import pytest
import torch
import torch.nn.functional as F

import seq2bert
from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.models.bilstm.config import BiLSTMConfig
from seq2bert.models.bilstm.model import (
    FAMILY,
    BiLSTMForSequenceClassification,
    BiLSTMForTokenClassification,
    BiLSTMModel,
)
from seq2bert.models.pretrained import init_task_model
from seq2bert.nn.rnn import recurrent

B, T, V, E, H = 3, 7, 30, 6, 5


def config(**overrides) -> BiLSTMConfig:
    fields = dict(
        vocab_size=V, embedding_dim=E, hidden_size=H, num_layers=2, id2label={0: "a", 1: "b", 2: "c"}
    )
    return BiLSTMConfig(**{**fields, **overrides})


def batch():
    """Three right-padded rows of lengths 7, 4 and 1 (pad id 0), random real tokens."""
    torch.manual_seed(1)
    lengths = torch.tensor([7, 4, 1])
    mask = (torch.arange(T)[None] < lengths[:, None]).long()  # (B, T)
    ids = torch.randint(7, V, (B, T)) * mask
    return ids, mask, lengths


def test_shapes_of_the_encoder_and_both_heads():
    ids, mask, _ = batch()
    torch.manual_seed(0)
    out = BiLSTMModel(config()).eval()(ids, mask)
    assert out.last_hidden_state.shape == (B, T, 2 * H)  # [h→_t; h←_t]
    assert [s.shape for s in out.final_state] == [(2 * 2, B, H)] * 2  # 2 layers × 2 directions
    assert out.last_hidden_state[1, 4:].abs().max() == 0  # zeros at padding
    assert BiLSTMForSequenceClassification(config())(ids, mask).logits.shape == (B, 3)
    assert BiLSTMForTokenClassification(config())(ids, mask).logits.shape == (B, T, 3)


@pytest.mark.parametrize("pooling", ["max", "last"])
@pytest.mark.parametrize("head", [BiLSTMForSequenceClassification, BiLSTMForTokenClassification])
def test_a_padded_row_gives_the_logits_it_gives_alone(pooling, head):
    ids, mask, lengths = batch()
    torch.manual_seed(0)
    model = head(config(pooling=pooling)).eval()
    together = model(ids, mask).logits
    for b, n in enumerate(lengths.tolist()):
        alone = model(ids[b : b + 1, :n]).logits[0]  # no padding, no mask
        torch.testing.assert_close(together[b, :n] if together.dim() == 3 else together[b], alone,
                                   rtol=0, atol=1e-6)  # fmt: skip


def test_the_two_poolings_read_the_states_of_the_real_tokens():
    ids, mask, lengths = batch()
    torch.manual_seed(0)
    model = BiLSTMForSequenceClassification(config(num_layers=1)).eval()
    out = model.bilstm(ids, mask)
    h = out.last_hidden_state
    model.config.pooling = "max"
    u = model.sentence_vector(out, mask)
    expected = torch.stack([h[b, :n].amax(0) for b, n in enumerate(lengths.tolist())])
    torch.testing.assert_close(u, expected, rtol=0, atol=0)
    model.config.pooling = "last"
    u = model.sentence_vector(out, mask)
    # [h→_n; h←_1]: the forward state at the last real token, the backward one at the first
    expected = torch.stack(
        [torch.cat([h[b, n - 1, :H], h[b, 0, H:]]) for b, n in enumerate(lengths.tolist())]
    )
    torch.testing.assert_close(u, expected, rtol=0, atol=1e-6)


def test_the_fused_lstm_computes_the_equations_of_nn_rnn():
    ids, mask, lengths = batch()
    torch.manual_seed(0)
    model = BiLSTMModel(config()).eval()
    explicit = recurrent("lstm", E, H, num_layers=2, bidirectional=True, explicit=True)
    explicit.load_state_dict(model.lstm.rnn.state_dict())  # the same parameters, torch's names
    h, (h_n, c_n) = explicit(model.embeddings(ids), lengths=lengths)
    out = model(ids, mask)
    torch.testing.assert_close(out.last_hidden_state, h, rtol=0, atol=1e-5)
    torch.testing.assert_close(out.final_state[0], h_n, rtol=0, atol=1e-5)
    torch.testing.assert_close(out.final_state[1], c_n, rtol=0, atol=1e-5)


def test_losses_are_the_objectives_ones():
    ids, mask, lengths = batch()
    torch.manual_seed(0)
    model = BiLSTMForSequenceClassification(config()).eval()
    labels = torch.tensor([0, 2, 1])
    out = model(ids, mask, labels=labels)
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, labels))
    regression = BiLSTMForSequenceClassification(config(id2label={0: "score"})).eval()
    out = regression(ids, mask, labels=torch.tensor([0.5, 1.0, 2.0]))
    torch.testing.assert_close(out.loss, F.mse_loss(out.logits[:, 0], torch.tensor([0.5, 1.0, 2.0])))
    tagger = BiLSTMForTokenClassification(config()).eval()
    tags = torch.full((B, T), -100)
    tags[0, 1], tags[1, 3] = 2, 1
    out = tagger(ids, mask, labels=tags)
    expected = F.cross_entropy(torch.stack([out.logits[0, 1], out.logits[1, 3]]), torch.tensor([2, 1]))
    torch.testing.assert_close(out.loss, expected)
    out.loss.backward()  # gradients reach the embeddings
    assert tagger.bilstm.embeddings.weight.grad.abs().sum() > 0


def test_checkpoints_through_the_registry_and_from_pretrained(tmp_path):
    ids, mask, _ = batch()
    torch.manual_seed(0)
    model = BiLSTMForTokenClassification(config(pooling="last")).eval()
    model.save_pretrained(tmp_path / "tagger")
    saved = json.loads((tmp_path / "tagger" / "config.json").read_text())
    assert saved["architectures"] == ["BiLSTMForTokenClassification"] and saved["model_type"] == "bilstm"
    assert registry.family_at(tmp_path / "tagger") is FAMILY and registry.FAMILIES["bilstm"] is FAMILY
    again = seq2bert.from_pretrained(tmp_path / "tagger")
    assert type(again) is BiLSTMForTokenClassification and again.config == model.config
    torch.testing.assert_close(again(ids, mask).logits, model(ids, mask).logits, rtol=0, atol=0)
    # the bare encoder of a head model, and a head model's encoder from a bare one (base_model_prefix)
    base, _ = registry.load(tmp_path / "tagger", head="base")
    torch.testing.assert_close(base(ids, mask).last_hidden_state, model.bilstm(ids, mask).last_hidden_state)
    base.save_pretrained(tmp_path / "base")
    classifier, _, new = init_task_model(FAMILY, tmp_path / "base", "BiLSTMForTokenClassification")
    assert torch.equal(classifier.bilstm.embeddings.weight, model.bilstm.embeddings.weight)
    assert sorted(new) == ["classifier.bias", "classifier.weight"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(dropout=1.0), "dropout: must be in [0, 1)"),
        (dict(hidden_size=0), "hidden_size: must be at least 1"),
        (dict(pooling="mean"), "pooling: expected 'max', 'last' or 'concat'"),
        (dict(pad_token_id=V), "pad_token_id: must be a token id below vocab_size"),
    ],
)
def test_config_is_validated(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        config(**overrides)


def test_the_pipelines_need_no_position_table_and_attention_maps_say_there_is_none():
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.errors import UserError
    from seq2bert.viz.inspect import attention_maps

    tok = Tokenizer.train(["a film", "the film"], kind="word", vocab_size=20, min_frequency=1)
    torch.manual_seed(0)
    model = BiLSTMForSequenceClassification(config(vocab_size=tok.vocab_size)).eval()
    long_text = " ".join(["film"] * 600)  # no max_position_embeddings: the pipeline's own 512 applies
    assert seq2bert.classify(long_text, (model, tok))["label"] in ("a", "b", "c")
    assert seq2bert.embed(["a film"], (model.bilstm, tok)).shape == (1, 2 * H)
    with pytest.raises(UserError, match="a BiLSTMModel has no attention weights"):
        attention_maps((model, tok), "a film")
