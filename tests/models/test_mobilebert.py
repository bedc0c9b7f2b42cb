"""MobileBERT against transformers: random-weight models of odd shapes built by transformers — NoNorm and
LayerNorm, the key/query-shared bottleneck, bottleneck attention, no bottleneck at all, one to four
feed-forward networks, the trigram input on and off, odd vocabularies and widths — give equal outputs and
losses (≤ 1e-5, fp32) on padded batches for every class; directories go both ways; from_pretrained returns the
class config.json names; every checkpoint key is consumed; `seq2bert finetune` starts from a MobileBERT
directory."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.models.mobilebert.config import MobileBertConfig, mobilebert
from seq2bert.models.mobilebert.convert import config_from_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.mobilebert.model import (
    MobileBertForMaskedLM,
    MobileBertForPreTraining,
    MobileBertModel,
    NoNorm,
)
from seq2bert.models.mobilebert.pretrained import CLASSES, FAMILY, build_mobilebert
from seq2bert.models.pretrained import init_task_model
from tests.models.hf_parity import (
    CLOSE,
    assert_same_forward,
    assert_the_pipelines_read_a_masked_lm,
    assert_transformers_reads_the_classifier,
    finetuned_sst2,
    made_to_count,
    padded,
)

transformers = pytest.importorskip("transformers")

SHAPES = {
    "no_norm, key/query-shared bottleneck B 12, F 4, trigram E 10, H 30": dict(
        vocab_size=51, hidden_size=30, embedding_size=10, intra_bottleneck_size=12, num_attention_heads=3,
        intermediate_size=22, num_hidden_layers=2),
    "layer_norm, bottleneck attention B 15, F 1, no trigram, E = H 20": dict(
        vocab_size=97, hidden_size=20, embedding_size=20, intra_bottleneck_size=15, num_attention_heads=5,
        intermediate_size=18, num_hidden_layers=2, normalization_type="layer_norm", use_bottleneck_attention=True,
        num_feedforward_networks=1, trigram_input=False, layer_norm_eps=1e-6),
    "no bottleneck, F 2, H 24, gelu, 3 types, [CLS] unpooled": dict(
        vocab_size=77, hidden_size=24, embedding_size=8, num_attention_heads=3, intermediate_size=40,
        num_hidden_layers=3, use_bottleneck=False, num_feedforward_networks=2, hidden_act="gelu", type_vocab_size=3,
        classifier_activation=False),
    "plain bottleneck B = H 28, 7 heads, F 3, no trigram, E 9": dict(
        vocab_size=33, hidden_size=28, embedding_size=9, intra_bottleneck_size=28, num_attention_heads=7,
        intermediate_size=16, num_hidden_layers=1, key_query_shared_bottleneck=False, num_feedforward_networks=3,
        trigram_input=False, hidden_dropout_prob=0.1),
}  # fmt: skip
ARCHITECTURES = list(CLASSES)
FIRST_SHAPE = next(iter(SHAPES))


def hf_model(architecture, shape, **config):
    cfg = transformers.MobileBertConfig(
        max_position_embeddings=24, initializer_range=0.2, **{**SHAPES[shape], **config}
    )
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    torch.manual_seed(0)
    return made_to_count(getattr(transformers, architecture)(cfg))


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    model = build_mobilebert(cfg, architecture, sd).eval()
    model.load_state_dict(from_hf_state_dict(sd, cfg, architecture))
    return model


def batch(cfg, left=False):
    """input_ids, attention_mask, token_type_ids (3, 11), two rows padded."""
    return padded(cfg.vocab_size, left, cfg.type_vocab_size).values()


def targets(architecture, cfg, ids, mask):
    """The loss arguments of ``architecture``, as keywords both sides take."""
    g = torch.Generator().manual_seed(1)
    if architecture in ("MobileBertForPreTraining", "MobileBertForMaskedLM"):
        labels = torch.full_like(ids, -100)
        labels[0, 3], labels[1, 5], labels[2, 1] = 5, 17, 30
    if architecture == "MobileBertForPreTraining":
        return dict(labels=labels, next_sentence_label=torch.tensor([0, 1, 1]))
    if architecture == "MobileBertForMaskedLM":
        return dict(labels=labels)
    if architecture == "MobileBertForQuestionAnswering":
        return dict(start_positions=torch.tensor([2, 0, 40]), end_positions=torch.tensor([4, 0, 41]))
    if architecture == "MobileBertForTokenClassification":
        return dict(
            labels=torch.randint(0, cfg.num_labels, ids.shape, generator=g).masked_fill(mask == 0, -100)
        )
    if architecture == "MobileBertForMultipleChoice":
        return dict(labels=torch.tensor([2]))
    if architecture == "MobileBertForSequenceClassification":
        return dict(labels=torch.tensor([0.5, 3.0, 4.5]) if cfg.num_labels == 1 else torch.tensor([0, 1, 1]))
    return {}


FIELDS = ("last_hidden_state", "pooler_output", "logits", "prediction_logits", "seq_relationship_logits",
          "start_logits", "end_logits", "loss")  # fmt: skip


def compare(hf, ours, architecture, left=False, per_layer=True):
    inputs = padded(hf.config.vocab_size, left, hf.config.type_vocab_size)
    if architecture == "MobileBertForMultipleChoice":  # one example, 3 choices
        inputs = {k: v.view(1, 3, -1) for k, v in inputs.items()}
    inputs.update(targets(architecture, hf.config, inputs["input_ids"], inputs["attention_mask"]))
    layers = hf.config.num_hidden_layers
    assert len(assert_same_forward(hf, ours, inputs, FIELDS, layers=layers, per_layer=per_layer)) >= 2


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_outputs_and_losses_equal_transformers(architecture, shape, left):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    assert type(ours).__name__ == architecture
    compare(hf, ours, architecture, left)
    compare(hf, ours, architecture, left, per_layer=False)  # the fused attention kernel


@pytest.mark.parametrize("architecture", ["MobileBertForPreTraining", "MobileBertForMaskedLM"])
def test_sparse_prediction_gives_the_loss_of_transformers(architecture):
    hf = hf_model(architecture, FIRST_SHAPE)
    ours = ours_from(hf, architecture)
    ids, mask, types = batch(hf.config)
    loss_args = targets(architecture, hf.config, ids, mask)
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types, **loss_args)
        o = ours(ids, mask, types, **loss_args, sparse_prediction=True)
    torch.testing.assert_close(o.loss, e.loss, **CLOSE)
    dense = e.prediction_logits if architecture == "MobileBertForPreTraining" else e.logits
    sparse = o.prediction_logits if architecture == "MobileBertForPreTraining" else o.logits
    torch.testing.assert_close(sparse, dense[loss_args["labels"] != -100], **CLOSE)


@pytest.mark.parametrize("shape", [FIRST_SHAPE, "no bottleneck, F 2, H 24, gelu, 3 types, [CLS] unpooled"])
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_directories_both_ways_and_from_pretrained_names_the_class(architecture, shape, tmp_path):
    hf = hf_model(architecture, shape)
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours).__name__ == architecture and not ours.training
    compare(hf, ours, architecture, left=True)
    ours.config.id2label = {i: f"tag{i}" for i in range(ours.config.num_labels)}
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(
        tmp_path / "ours", attn_implementation="eager"
    )
    assert again.config.id2label == ours.config.id2label
    compare(again.eval(), ours, architecture)
    back = seq2bert.from_pretrained(tmp_path / "ours")
    assert type(back) is type(ours) and back.config == ours.config
    reference = hf.state_dict()
    written = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    for key, value in written.items():
        torch.testing.assert_close(value, reference[key], rtol=0, atol=0, msg=key)
    assert {k for k in reference if not k.endswith(("position_ids", "token_type_ids"))} == set(written)


def test_a_bare_model_drops_heads_and_unknown_or_missing_keys_are_named():
    hf = hf_model("MobileBertForPreTraining", FIRST_SHAPE)
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    MobileBertModel(cfg).load_state_dict(from_hf_state_dict(sd, cfg, "MobileBertModel"))  # pooler kept
    MobileBertForMaskedLM(cfg).load_state_dict(
        from_hf_state_dict(sd, cfg, "MobileBertForMaskedLM")
    )  # NSP dropped
    with pytest.raises(CheckpointError, match="extra.weight"):
        from_hf_state_dict({**sd, "mobilebert.encoder.layer.0.extra.weight": torch.zeros(1)}, cfg,
                           "MobileBertForPreTraining")  # fmt: skip
    no_extra_columns = {k: v for k, v in sd.items() if k != "cls.predictions.dense.weight"}
    with pytest.raises(CheckpointError, match="cls.predictions.dense.weight"):
        from_hf_state_dict(no_extra_columns, cfg, "MobileBertForMaskedLM")
    with pytest.raises(CheckpointError, match="model_type"):
        config_from_hf({"model_type": "bert"})


def test_a_masked_lm_checkpoint_starts_every_task_head(tmp_path):
    pretrained = hf_model("MobileBertForMaskedLM", FIRST_SHAPE)  # no pooler
    pretrained.save_pretrained(tmp_path / "pre")
    ids, mask, types = batch(pretrained.config)
    with torch.no_grad():
        expected = pretrained.mobilebert(
            input_ids=ids, attention_mask=mask, token_type_ids=types
        ).last_hidden_state
    pooler = ["mobilebert.pooler.bias", "mobilebert.pooler.weight"]
    for architecture, new in [
        ("MobileBertForSequenceClassification", ["classifier.bias", "classifier.weight", *pooler]),
        ("MobileBertForTokenClassification", ["classifier.bias", "classifier.weight"]),
        ("MobileBertForQuestionAnswering", ["qa_outputs.bias", "qa_outputs.weight"]),
        ("MobileBertForMultipleChoice", ["classifier.bias", "classifier.weight", *pooler]),
    ]:
        model, _, initialised = init_task_model(
            FAMILY, tmp_path / "pre", architecture, id2label={0: "a", 1: "b"}
        )
        assert sorted(initialised) == new, architecture
        torch.testing.assert_close(
            model.eval().mobilebert(ids, mask, types).last_hidden_state, expected, **CLOSE
        )


def test_the_blocks_have_the_papers_shapes():
    cfg = MobileBertConfig(vocab_size=50, hidden_size=32, embedding_size=8, intra_bottleneck_size=16,
                           num_attention_heads=2, intermediate_size=16, num_hidden_layers=2)  # fmt: skip
    m = MobileBertForPreTraining(cfg)
    block = m.mobilebert.layers[0]
    assert isinstance(block.self_attn_sublayer.norm, NoNorm) and len(block.feed_forward) == 4
    assert block.input_bottleneck.dense.weight.shape == (16, 32) and block.output_bottleneck.weight.shape == (
        32,
        16,
    )
    assert m.mobilebert.embeddings.projection.weight.shape == (32, 3 * 8)  # the trigram: 3E → H
    assert m.mlm.decoder.weight is m.mobilebert.embeddings.word_embeddings.weight
    assert m.mlm.extra.weight.shape == (32 - 8, 50)  # the decoder's other H − E columns
    assert cfg.true_hidden_size == 16 and mobilebert().num_hidden_layers == 24
    with pytest.raises(ConfigError, match="intra_bottleneck_size"):
        MobileBertConfig(key_query_shared_bottleneck=False)
    with pytest.raises(ConfigError, match="normalization_type"):
        MobileBertConfig(normalization_type="batch_norm")
    assert registry.get("mobilebert").architecture_for("qa") == "MobileBertForQuestionAnswering"


def test_finetune_trains_a_mobilebert_classifier_that_transformers_reads(tmp_path):
    """`seq2bert finetune --init` a MobileBERT directory: the classifier learns SST-2-shaped data and the best
    checkpoint is a MobileBertForSequenceClassification transformers reads with equal logits. (LayerNorm and
    eight epochs: a tiny random MobileBERT learns this more slowly than BERT, NoNorm slower still.)"""

    def mobile(vocab_size):
        cfg = MobileBertConfig(vocab_size=vocab_size, hidden_size=32, embedding_size=16, intra_bottleneck_size=16,
                               num_attention_heads=2, intermediate_size=32, num_hidden_layers=2,
                               num_feedforward_networks=2, max_position_embeddings=64,
                               normalization_type="layer_norm")  # fmt: skip
        return MobileBertForPreTraining(cfg)

    ours, tok = finetuned_sst2(tmp_path, mobile, epochs=8)
    assert type(ours).__name__ == "MobileBertForSequenceClassification"
    theirs = transformers.MobileBertForSequenceClassification.from_pretrained(tmp_path / "run" / "best")
    assert_transformers_reads_the_classifier(ours, tok, theirs)


def test_the_pipelines_read_a_mobilebert_directory(tmp_path):
    def mobile(vocab_size):
        cfg = MobileBertConfig(vocab_size=vocab_size, hidden_size=16, embedding_size=8, intra_bottleneck_size=8,
                               num_attention_heads=2, intermediate_size=16, num_hidden_layers=2)  # fmt: skip
        return MobileBertForMaskedLM(cfg)

    assert_the_pipelines_read_a_masked_lm(tmp_path, mobile, transformers.MobileBertForMaskedLM)
