"""The fine-tuning heads against transformers' Bert*For* classes: random weights in odd shapes, equal logits
and losses (≤ 1e-5, fp32) on padded batches; directories both ways; any BERT checkpoint initialises them."""

import logging

import pytest
import torch

from seq2bert.models.bert.convert import config_from_hf, from_hf_state_dict
from seq2bert.models.bert.pretrained import build_bert, init_task_model, load_bert, save_bert
from tests.models.test_bert import SHAPES, batch, hf_model

transformers = pytest.importorskip("transformers")

TASKS = (
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "BertForMultipleChoice",
)


def task_pair(architecture, shape, **config):
    hf = hf_model(architecture, shape) if not config else None
    if config:
        cfg = transformers.BertConfig(vocab_size=97, max_position_embeddings=40, initializer_range=0.2,
                                      **SHAPES[shape], **config)  # fmt: skip
        torch.manual_seed(0)
        cfg._attn_implementation = "eager"
        hf = getattr(transformers, architecture)(cfg).eval()
    ours_cfg = config_from_hf(hf.config.to_dict())
    ours = build_bert(ours_cfg, architecture).eval()
    ours.load_state_dict(from_hf_state_dict(hf.state_dict(), ours_cfg, architecture))
    return hf, ours


def run_both(hf, ours, architecture, ids, mask, types):
    kw = dict(output_hidden_states=True, output_attentions=True)
    if architecture == "BertForQuestionAnswering":
        starts, ends = torch.tensor([2, 0, 40]), torch.tensor([4, 0, 41])  # 40, 41: outside, ignored
        with torch.no_grad():
            e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types,
                   start_positions=starts, end_positions=ends, **kw)  # fmt: skip
            o = ours(ids, mask, types, starts, ends, **kw)
        return [(o.start_logits, e.start_logits), (o.end_logits, e.end_logits), (o.loss, e.loss)], o, e
    if architecture == "BertForMultipleChoice":
        ids, mask, types = (x.view(1, 3, -1) for x in (ids, mask, types))  # one example, 3 choices
        labels = torch.tensor([2])
    elif architecture == "BertForTokenClassification":
        labels = torch.randint(0, hf.config.num_labels, ids.shape, generator=torch.Generator().manual_seed(1))
        labels = labels.masked_fill(mask == 0, -100)
    elif hf.config.num_labels == 1:
        labels = torch.tensor([0.5, 3.0, 4.5])
    else:
        labels = torch.tensor([0, hf.config.num_labels - 1, 1])
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels, **kw)
        o = ours(ids, mask, types, labels, **kw)
    return [(o.logits, e.logits), (o.loss, e.loss)], o, e


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", TASKS)
def test_heads_equal_transformers(architecture, shape):
    hf, ours = task_pair(architecture, shape)
    ids, mask, types, _ = batch(types=hf.config.type_vocab_size)
    pairs, o, e = run_both(hf, ours, architecture, ids, mask, types)
    for a, b in pairs:
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    for a, b in zip(o.attentions, e.attentions, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "config",
    [
        dict(num_labels=1),  # regression (STS-B): squared error
        dict(num_labels=5, classifier_dropout=0.3),
        dict(num_labels=3, problem_type="multi_label_classification"),
    ],
)
def test_sequence_classification_problem_types_equal_transformers(config):
    architecture = "BertForSequenceClassification"
    hf, ours = task_pair(architecture, "2 layers, H 24, 3 heads", **config)
    ids, mask, types, _ = batch()
    if config.get("problem_type") == "multi_label_classification":
        labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
        with torch.no_grad():
            e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels)
        o = ours(ids, mask, types, labels)
        pairs = [(o.logits, e.logits), (o.loss, e.loss)]
    else:
        pairs, _, _ = run_both(hf, ours, architecture, ids, mask, types)
    for a, b in pairs:
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("architecture", TASKS)
def test_saved_directories_load_in_transformers_with_equal_outputs(architecture, tmp_path):
    hf, ours = task_pair(architecture, "1 layer, H 32, 8 heads, gelu_new, 3 types")
    ours.config.id2label = {i: f"tag{i}" for i in range(ours.config.num_labels)}
    save_bert(ours, tmp_path / "m")
    back = (
        getattr(transformers, architecture)
        .from_pretrained(tmp_path / "m", attn_implementation="eager")
        .eval()
    )
    assert back.config.id2label == ours.config.id2label
    ids, mask, types, _ = batch(types=3)
    pairs, _, _ = run_both(back, ours, architecture, ids, mask, types)
    for a, b in pairs:
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    again, _ = load_bert(tmp_path / "m")  # the class comes from config.json
    assert type(again) is type(ours) and again.config.id2label == ours.config.id2label


def test_any_bert_checkpoint_initialises_a_head_and_says_what_is_new(tmp_path, caplog):
    pretrained = hf_model("BertForPreTraining", "2 layers, H 24, 3 heads")
    pretrained.save_pretrained(tmp_path / "pre")
    labels = {0: "O", 1: "B-PER", 2: "I-PER"}
    with caplog.at_level(logging.INFO):
        model, _, new = init_task_model(tmp_path / "pre", "BertForTokenClassification", id2label=labels)
    assert sorted(new) == ["classifier.bias", "classifier.weight"]
    assert "classifier.weight" in caplog.text
    assert model.config.id2label == labels and model.classifier.out_features == 3
    ids, mask, types, _ = batch()
    with torch.no_grad():
        e = pretrained.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
    torch.testing.assert_close(model.eval().bert(ids, mask, types).last_hidden_state, e, rtol=0, atol=1e-5)
    # an encoder without a pooler (sentence-transformers layout): the pooler is new too
    encoder = hf_model("BertModel", "2 layers, H 24, 3 heads")
    encoder.pooler = None
    encoder.save_pretrained(tmp_path / "enc")
    _, _, new = init_task_model(tmp_path / "enc", "BertForSequenceClassification")
    assert sorted(new) == ["bert.pooler.bias", "bert.pooler.weight", "classifier.bias", "classifier.weight"]
    # a fine-tuned head of another size is replaced, one of the right size kept
    model.save_pretrained(tmp_path / "ner")
    _, _, new = init_task_model(tmp_path / "ner", "BertForTokenClassification", id2label={0: "a", 1: "b"})
    assert sorted(new) == ["classifier.bias", "classifier.weight"]
    kept, _, new = init_task_model(tmp_path / "ner", "BertForTokenClassification")
    assert new == [] and torch.equal(kept.classifier.weight, model.classifier.weight)
    fresh, _, new = init_task_model(tmp_path / "pre", "BertForQuestionAnswering", random_init=True)
    assert "bert.embeddings.word_embeddings.weight" in new
    assert not torch.equal(
        fresh.bert.embeddings.word_embeddings.weight, pretrained.bert.embeddings.word_embeddings.weight
    )
