"""MobileBERT against transformers: random-weight models of odd shapes built by transformers — NoNorm and
LayerNorm, the key/query-shared bottleneck, bottleneck attention, no bottleneck at all, one to four
feed-forward networks, the trigram input on and off, odd vocabularies and widths — give equal outputs and
losses (≤ 1e-5, fp32) on padded batches for every class; directories go both ways; from_pretrained returns the
class config.json names; every checkpoint key is consumed; `seq2bert finetune` starts from a MobileBERT
directory."""

import numpy as np
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
CLOSE = dict(rtol=0, atol=1e-5)


def hf_model(architecture, shape, **config):
    cfg = transformers.MobileBertConfig(
        max_position_embeddings=24, initializer_range=0.2, **{**SHAPES[shape], **config}
    )
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(cfg).eval()
    with torch.no_grad():  # a fresh model has zero biases and unit norms: make them count
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    model = build_mobilebert(cfg, architecture, sd).eval()
    model.load_state_dict(from_hf_state_dict(sd, cfg, architecture))
    return model


def batch(cfg, left=False):
    """Three rows of 11 tokens, two padded (on the right, or on the left), random segments."""
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, cfg.vocab_size, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 3:] = 0
    if left:
        mask = mask.flip(1)
    return ids.masked_fill(mask == 0, 0), mask, torch.randint(0, cfg.type_vocab_size, (3, 11), generator=g)


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


def compare(hf, ours, architecture, left=False, outputs=True):
    """Equal fields, hidden states and attention maps of one forward of each (``outputs``: per layer too)."""
    ids, mask, types = batch(hf.config, left)
    if architecture == "MobileBertForMultipleChoice":  # one example, 3 choices
        ids, mask, types = (x.view(1, 3, -1) for x in (ids, mask, types))
    inputs = dict(input_ids=ids, attention_mask=mask, token_type_ids=types)
    inputs.update(targets(architecture, hf.config, ids, mask))
    kw = dict(output_hidden_states=True, output_attentions=True) if outputs else {}
    with torch.no_grad():
        e, o = hf(**inputs, **kw), ours(**inputs, **kw)
    compared = [name for name in FIELDS if getattr(e, name, None) is not None]
    for name in compared:
        torch.testing.assert_close(getattr(o, name), getattr(e, name), **CLOSE, msg=name)
    assert len(compared) >= 2
    if outputs:
        assert len(o.hidden_states) == len(e.hidden_states) == hf.config.num_hidden_layers + 1
        for a, b in zip(o.hidden_states + o.attentions, e.hidden_states + e.attentions, strict=True):
            torch.testing.assert_close(a, b, **CLOSE)


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_outputs_and_losses_equal_transformers(architecture, shape, left):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    assert type(ours).__name__ == architecture
    compare(hf, ours, architecture, left)
    compare(hf, ours, architecture, left, outputs=False)  # the fused attention kernel


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
    from seq2bert.data.tokenization import Tokenizer
    from tests.recipes.test_finetune import BAD, FILLER, GOOD, run, write_sst2

    corpus = tmp_path / "words.txt"
    words = FILLER + GOOD + BAD
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))) + "\n")
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=80, lowercase=True)
    torch.manual_seed(0)
    cfg = MobileBertConfig(vocab_size=tok.vocab_size, hidden_size=32, embedding_size=16, intra_bottleneck_size=16,
                           num_attention_heads=2, intermediate_size=32, num_hidden_layers=2, num_feedforward_networks=2,
                           max_position_embeddings=64, normalization_type="layer_norm")  # fmt: skip
    MobileBertForPreTraining(cfg).save_pretrained(tmp_path / "init", tokenizer=tok)
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert (
        run("sst2", tmp_path / "sst2", tmp_path / "init", tmp_path / "run", "--set", "train.max_epochs=8")
        == 0
    )
    ours, tok = registry.load(tmp_path / "run" / "best")
    assert type(ours).__name__ == "MobileBertForSequenceClassification"
    theirs = transformers.MobileBertForSequenceClassification.from_pretrained(
        tmp_path / "run" / "best"
    ).eval()
    enc = tok.encode_batch(
        ["a superb film", "the story was dull and poor"], padding="longest", return_tensors="pt"
    )
    with torch.no_grad():
        expected = theirs(**dict(enc)).logits
        got = ours(**dict(enc)).logits
    torch.testing.assert_close(got, expected, **CLOSE)
    assert expected.argmax(-1).tolist() == [1, 0]
