"""DistilBERT against transformers: random-weight models of odd shapes built by transformers — odd
vocabularies and widths, learned and sinusoidal positions, GELU and ReLU — give equal outputs and losses
(≤ 1e-5, fp32) on batches padded on the right and on the left, for every class; directories go both ways;
from_pretrained returns the class config.json names; every checkpoint key is consumed; `seq2bert finetune`
starts from a DistilBERT directory."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.models.distilbert.config import DistilBertConfig, distilbert_base
from seq2bert.models.distilbert.convert import config_from_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.distilbert.model import DistilBertForMaskedLM, DistilBertModel
from seq2bert.models.distilbert.pretrained import CLASSES, FAMILY
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
    "2 layers, dim 20, 4 heads, V 51, learned": dict(vocab_size=51, dim=20, n_layers=2, n_heads=4, hidden_dim=30),
    "3 layers, dim 18, 3 heads, V 97, sinusoidal, relu": dict(vocab_size=97, dim=18, n_layers=3, n_heads=3,
                                                               hidden_dim=44, sinusoidal_pos_embds=True,
                                                               activation="relu"),
    "1 layer, dim 21, 7 heads, V 33, sinusoidal (odd width)": dict(vocab_size=33, dim=21, n_layers=1, n_heads=7,
                                                                   hidden_dim=10, sinusoidal_pos_embds=True),
}  # fmt: skip
ARCHITECTURES = list(CLASSES)
FIRST_SHAPE, SINUSOIDAL = list(SHAPES)[:2]


def hf_model(architecture, shape, **config):
    cfg = transformers.DistilBertConfig(
        max_position_embeddings=24, initializer_range=0.2, **{**SHAPES[shape], **config}
    )
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    torch.manual_seed(0)
    return made_to_count(getattr(transformers, architecture)(cfg))


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    model = FAMILY.make(cfg, architecture).eval()
    model.load_state_dict(from_hf_state_dict(hf.state_dict(), cfg, architecture))
    return model


def targets(architecture, cfg, ids, mask):
    """The loss arguments of ``architecture``, as keywords both sides take."""
    g = torch.Generator().manual_seed(1)
    if architecture == "DistilBertForMaskedLM":
        labels = torch.full_like(ids, -100)
        labels[0, 3], labels[1, 5], labels[2, 1] = 5, 17, 30
        return dict(labels=labels)
    if architecture == "DistilBertForQuestionAnswering":
        return dict(start_positions=torch.tensor([2, 0, 40]), end_positions=torch.tensor([4, 0, 41]))
    if architecture == "DistilBertForTokenClassification":
        return dict(
            labels=torch.randint(0, cfg.num_labels, ids.shape, generator=g).masked_fill(mask == 0, -100)
        )
    if architecture == "DistilBertForMultipleChoice":
        return dict(labels=torch.tensor([2]))
    if architecture == "DistilBertForSequenceClassification":
        if cfg.num_labels == 1:
            return dict(labels=torch.tensor([0.5, 3.0, 4.5]))
        if cfg.problem_type == "multi_label_classification":
            return dict(labels=torch.randint(0, 2, (3, cfg.num_labels), generator=g).float())
        return dict(labels=torch.tensor([0, cfg.num_labels - 1, 1]))
    return {}


FIELDS = ("last_hidden_state", "logits", "start_logits", "end_logits", "loss")


def compare(hf, ours, architecture, left=False, per_layer=True):
    inputs = padded(hf.config.vocab_size, left)
    if architecture == "DistilBertForMultipleChoice":  # one example, 3 choices
        inputs = {k: v.view(1, 3, -1) for k, v in inputs.items()}
    inputs.update(targets(architecture, hf.config, inputs["input_ids"], inputs["attention_mask"]))
    compared = assert_same_forward(hf, ours, inputs, FIELDS, layers=hf.config.n_layers, per_layer=per_layer)
    assert len(compared) >= 1 + (architecture != "DistilBertModel")


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_outputs_and_losses_equal_transformers(architecture, shape, left):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    assert type(ours).__name__ == architecture
    compare(hf, ours, architecture, left)
    compare(hf, ours, architecture, left, per_layer=False)  # the fused attention kernel


@pytest.mark.parametrize(
    "config",
    [dict(num_labels=1), dict(num_labels=5, seq_classif_dropout=0.3), dict(num_labels=3, problem_type="multi_label_classification")],
)  # fmt: skip
def test_sequence_classification_problem_types_equal_transformers(config):
    hf = hf_model("DistilBertForSequenceClassification", FIRST_SHAPE, **config)
    compare(hf, ours_from(hf, "DistilBertForSequenceClassification"), "DistilBertForSequenceClassification")


def test_masked_lm_sparse_prediction_gives_the_same_loss():
    hf = hf_model("DistilBertForMaskedLM", SINUSOIDAL)
    ours = ours_from(hf, "DistilBertForMaskedLM")
    ids, mask = padded(hf.config.vocab_size, left=True).values()
    labels = targets("DistilBertForMaskedLM", hf.config, ids, mask)["labels"]
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, labels=labels)
        o = ours(ids, mask, labels=labels, sparse_prediction=True)
    torch.testing.assert_close(o.loss, e.loss, **CLOSE)
    torch.testing.assert_close(o.logits, e.logits[labels != -100], **CLOSE)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_directories_both_ways_and_from_pretrained_names_the_class(architecture, tmp_path):
    hf = hf_model(architecture, SINUSOIDAL)
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours).__name__ == architecture and not ours.training
    compare(hf, ours, architecture, left=True)
    ours.config.id2label = {i: f"tag{i}" for i in range(ours.config.num_labels)}
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(
        tmp_path / "ours", attn_implementation="eager"
    )
    assert again.config.id2label == ours.config.id2label and again.config.sinusoidal_pos_embds
    compare(again.eval(), ours, architecture)
    back = seq2bert.from_pretrained(tmp_path / "ours")
    assert type(back) is type(ours) and back.config == ours.config
    reference = hf.state_dict()
    written = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    for key, value in written.items():
        torch.testing.assert_close(value, reference[key], rtol=0, atol=0, msg=key)
    assert {k for k in reference if not k.endswith("position_ids")} == set(written)


def test_a_bare_model_drops_heads_and_unknown_or_missing_keys_are_named():
    hf = hf_model("DistilBertForMaskedLM", FIRST_SHAPE)
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    DistilBertModel(cfg).load_state_dict(from_hf_state_dict(sd, cfg, "DistilBertModel"))
    with pytest.raises(CheckpointError, match="extra.weight"):
        from_hf_state_dict({**sd, "distilbert.transformer.layer.0.extra.weight": torch.zeros(1)}, cfg,
                           "DistilBertForMaskedLM")  # fmt: skip
    no_head = {k: v for k, v in sd.items() if not k.startswith("vocab_transform")}
    with pytest.raises(CheckpointError, match="vocab_transform"):
        from_hf_state_dict(no_head, cfg, "DistilBertForMaskedLM")
    with pytest.raises(CheckpointError, match="model_type"):
        config_from_hf({"model_type": "bert"})


def test_a_masked_lm_checkpoint_starts_every_task_head(tmp_path):
    pretrained = hf_model("DistilBertForMaskedLM", SINUSOIDAL)
    pretrained.save_pretrained(tmp_path / "pre")
    ids, mask = padded(pretrained.config.vocab_size).values()
    with torch.no_grad():
        expected = pretrained.distilbert(input_ids=ids, attention_mask=mask).last_hidden_state
    for architecture, heads in [
        ("DistilBertForSequenceClassification", ("classifier", "pre_classifier")),
        ("DistilBertForTokenClassification", ("classifier",)),
        ("DistilBertForQuestionAnswering", ("qa_outputs",)),
        ("DistilBertForMultipleChoice", ("classifier", "pre_classifier")),
    ]:
        model, _, new = init_task_model(FAMILY, tmp_path / "pre", architecture, id2label={0: "a", 1: "b"})
        assert sorted(new) == [f"{h}.{p}" for h in heads for p in ("bias", "weight")], architecture
        torch.testing.assert_close(model.eval().distilbert(ids, mask).last_hidden_state, expected, **CLOSE)


def test_the_config_answers_to_berts_names_and_the_model_has_no_segments_and_no_pooler():
    cfg = distilbert_base(vocab_size=40, dim=16, n_heads=2, hidden_dim=24, n_layers=2)
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.intermediate_size) == (
        16,
        2,
        2,
        24,
    )
    cfg.hidden_dropout_prob = 0.3  # what `seq2bert finetune` overrides
    assert cfg.dropout == 0.3 and distilbert_base().n_layers == 6
    model = DistilBertForMaskedLM(cfg).eval()
    assert model.mlm.decoder.weight is model.distilbert.embeddings.word_embeddings.weight
    assert model.distilbert.embeddings.token_type_embeddings is None and model.distilbert.pooler is None
    ids = torch.randint(1, 40, (2, 7))
    with torch.no_grad():  # segments given by a generic caller are ignored
        torch.testing.assert_close(model(ids, token_type_ids=torch.ones_like(ids)).logits, model(ids).logits)
    with pytest.raises(ConfigError, match="n_heads"):
        DistilBertConfig(dim=10, n_heads=3)
    with pytest.raises(ConfigError, match="seq_classif_dropout"):
        DistilBertConfig(classifier_dropout=0.1)
    assert registry.get("distilbert").architecture_for("tokens") == "DistilBertForTokenClassification"


def test_finetune_trains_a_distilbert_classifier_that_transformers_reads(tmp_path):
    """`seq2bert finetune --init` a DistilBERT directory: the classifier learns SST-2-shaped data and the best
    checkpoint is a DistilBertForSequenceClassification transformers reads with equal logits."""

    def distilbert(vocab_size):
        return DistilBertForMaskedLM(DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=2,
                                                      hidden_dim=64, max_position_embeddings=64))  # fmt: skip

    ours, tok = finetuned_sst2(tmp_path, distilbert, epochs=3)
    assert type(ours).__name__ == "DistilBertForSequenceClassification"
    theirs = transformers.DistilBertForSequenceClassification.from_pretrained(tmp_path / "run" / "best")
    assert_transformers_reads_the_classifier(ours, tok, theirs)


def test_the_pipelines_read_a_distilbert_directory(tmp_path):
    def distilbert(vocab_size):
        cfg = DistilBertConfig(vocab_size=vocab_size, dim=16, n_heads=2, hidden_dim=20, n_layers=2,
                               sinusoidal_pos_embds=True)  # fmt: skip
        return DistilBertForMaskedLM(cfg)

    assert_the_pipelines_read_a_masked_lm(tmp_path, distilbert, transformers.DistilBertForMaskedLM)
