"""ELECTRA against transformers: random-weight models of odd shapes built by transformers (embedding size
≠ hidden size, odd vocabularies) give equal outputs and losses (≤ 1e-5, fp32) on padded batches for every
class; directories go both ways; ``seq2bert.from_pretrained`` returns the class config.json names."""

import logging

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError
from seq2bert.models import pretrained
from seq2bert.models.electra.config import ElectraConfig, generator_config
from seq2bert.models.electra.convert import config_from_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.electra.model import ElectraModel
from seq2bert.models.electra.pretrained import CLASSES, FAMILY

transformers = pytest.importorskip("transformers")

SHAPES = {
    "E 16 → H 24, 2 layers, 3 heads, V 97": dict(embedding_size=16, hidden_size=24, num_hidden_layers=2,
                                                num_attention_heads=3, intermediate_size=40, vocab_size=97),
    "E = H = 32, 1 layer, 8 heads, gelu_new, 3 types, V 101": dict(
        embedding_size=32, hidden_size=32, num_hidden_layers=1, num_attention_heads=8, intermediate_size=20,
        hidden_act="gelu_new", type_vocab_size=3, vocab_size=101),
    "E 40 → H 16, 3 layers, 1 head, relu, eps 1e-5, V 53": dict(
        embedding_size=40, hidden_size=16, num_hidden_layers=3, num_attention_heads=1, intermediate_size=64,
        hidden_act="relu", layer_norm_eps=1e-5, vocab_size=53),
}  # fmt: skip
ARCHITECTURES = list(CLASSES)


def hf_model(architecture, shape, **config):
    cfg = transformers.ElectraConfig(
        max_position_embeddings=40, initializer_range=0.2, **SHAPES[shape], **config
    )
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(cfg).eval()
    with torch.no_grad():  # a fresh model has zero biases and unit LayerNorms: make them count
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    model = CLASSES[architecture](cfg).eval()
    model.load_state_dict(from_hf_state_dict(hf.state_dict(), cfg, architecture))
    return model


def batch(vocab, types=2, rows=3):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, vocab, (rows, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 2:] = 0
    ids = ids.masked_fill(mask == 0, 0)
    return ids, mask, torch.randint(0, types, (rows, 11), generator=g)


def labels_for(architecture, hf, ids, mask):
    """The keyword arguments of the loss of each class."""
    g = torch.Generator().manual_seed(1)
    if architecture == "ElectraForPreTraining":  # 1 = replaced
        return {"labels": torch.randint(0, 2, ids.shape, generator=g)}
    if architecture == "ElectraForMaskedLM":
        labels = torch.full_like(ids, -100)
        labels[0, 3], labels[1, 5], labels[2, 1] = 5, 17, 42
        return {"labels": labels}
    if architecture == "ElectraForTokenClassification":
        labels = torch.randint(0, hf.config.num_labels, ids.shape, generator=g)
        return {"labels": labels.masked_fill(mask == 0, -100)}
    if architecture == "ElectraForQuestionAnswering":  # 40, 41: outside the sequence, ignored
        return {"start_positions": torch.tensor([2, 0, 40]), "end_positions": torch.tensor([4, 0, 41])}
    if architecture == "ElectraForMultipleChoice":
        return {"labels": torch.tensor([2])}
    if architecture == "ElectraForSequenceClassification":
        if hf.config.num_labels == 1:
            return {"labels": torch.tensor([0.5, 3.0, 4.5])}
        if hf.config.problem_type == "multi_label_classification":
            return {"labels": torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])}
        return {"labels": torch.tensor([0, hf.config.num_labels - 1, 1])}
    return {}


def run_both(hf, ours, architecture):
    ids, mask, types = batch(hf.config.vocab_size, hf.config.type_vocab_size)
    if architecture == "ElectraForMultipleChoice":
        ids, mask, types = (x.view(1, 3, -1) for x in (ids, mask, types))  # one example, 3 choices
    targets = labels_for(architecture, hf, ids, mask)
    kw = dict(output_hidden_states=True, output_attentions=True)
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types, **targets, **kw)
        o = ours(ids, mask, types, **targets, **kw)
    return o, e


def assert_equal_outputs(o, e, architecture):
    fields = {
        "ElectraModel": ["last_hidden_state"],
        "ElectraForQuestionAnswering": ["start_logits", "end_logits"],
    }
    for name in [*fields.get(architecture, ["logits"]), "loss"]:
        if name == "loss" and architecture == "ElectraModel":
            continue
        torch.testing.assert_close(getattr(o, name), getattr(e, name), rtol=0, atol=1e-5, msg=name)
    assert len(o.hidden_states) == len(e.hidden_states) and len(o.attentions) == len(e.attentions)
    for a, b in zip(o.hidden_states + o.attentions, e.hidden_states + e.attentions, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_outputs_equal_transformers(architecture, shape):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    o, e = run_both(hf, ours, architecture)
    assert_equal_outputs(o, e, architecture)
    if architecture == "ElectraForMaskedLM":  # the pretrainer's generator: head and last layer at the labels
        ids, mask, types = batch(hf.config.vocab_size, hf.config.type_vocab_size)
        labels = labels_for(architecture, hf, ids, mask)["labels"]
        with torch.no_grad():
            sparse = ours(ids, mask, types, labels=labels, sparse_prediction=True)
        torch.testing.assert_close(sparse.loss, e.loss, rtol=0, atol=1e-5)
        torch.testing.assert_close(sparse.logits, e.logits[labels != -100], rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "config",
    [
        dict(num_labels=1),  # regression: squared error
        dict(num_labels=5, classifier_dropout=0.3),
        dict(num_labels=3, problem_type="multi_label_classification"),
    ],
)
def test_sequence_classifier_problem_types(config):
    hf = hf_model("ElectraForSequenceClassification", next(iter(SHAPES)), **config)
    ours = ours_from(hf, "ElectraForSequenceClassification")
    o, e = run_both(hf, ours, "ElectraForSequenceClassification")
    assert_equal_outputs(o, e, "ElectraForSequenceClassification")


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_directories_both_ways(architecture, tmp_path):
    shape = next(iter(SHAPES))
    hf = hf_model(architecture, shape)
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours).__name__ == architecture  # the class config.json names
    o, e = run_both(hf, ours, architecture)
    assert_equal_outputs(o, e, architecture)
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(tmp_path / "ours").eval()
    again.config._attn_implementation = "eager"
    o, e = run_both(again, ours, architecture)
    assert_equal_outputs(o, e, architecture)
    back = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    reference = hf.state_dict()
    for key, value in reference.items():
        if key in back:
            torch.testing.assert_close(back[key], value, rtol=0, atol=0, msg=key)
    assert {k for k in reference if not k.endswith(("position_ids", "token_type_ids"))} <= set(back)
    assert type(seq2bert.from_pretrained(tmp_path / "ours")).__name__ == architecture


@pytest.mark.parametrize(
    "config", [dict(summary_use_proj=False, summary_activation=""), dict(summary_activation="relu")]
)
def test_multiple_choice_summaries(config, tmp_path):
    hf = hf_model("ElectraForMultipleChoice", next(iter(SHAPES)), **config)
    ours = ours_from(hf, "ElectraForMultipleChoice")
    o, e = run_both(hf, ours, "ElectraForMultipleChoice")
    assert_equal_outputs(o, e, "ElectraForMultipleChoice")
    ours.save_pretrained(tmp_path)
    assert type(seq2bert.from_pretrained(tmp_path)).__name__ == "ElectraForMultipleChoice"


def test_bare_model_loads_from_any_head_and_unknown_or_missing_keys_are_named():
    hf = hf_model("ElectraForPreTraining", next(iter(SHAPES)))
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    ElectraModel(cfg).load_state_dict(from_hf_state_dict(sd, cfg, "ElectraModel"))  # the head is dropped
    with pytest.raises(CheckpointError, match="extra.weight"):
        from_hf_state_dict(
            {**sd, "electra.encoder.layer.0.extra.weight": torch.zeros(1)}, cfg, "ElectraForPreTraining"
        )
    without = {k: v for k, v in sd.items() if not k.startswith("discriminator_predictions.dense_prediction")}
    with pytest.raises(CheckpointError, match="dense_prediction"):
        from_hf_state_dict(without, cfg, "ElectraForPreTraining")
    with pytest.raises(CheckpointError, match="model_type"):
        config_from_hf({"model_type": "bert"})
    with pytest.raises(CheckpointError, match="embedding_size"):
        config_from_hf({"model_type": "electra", "embedding_size": 0})


def test_a_task_starts_from_a_discriminator_checkpoint(tmp_path, caplog):
    hf = hf_model("ElectraForPreTraining", next(iter(SHAPES)))
    hf.save_pretrained(tmp_path / "disc")
    with caplog.at_level(logging.INFO):
        model, _, new = pretrained.init_task_model(
            FAMILY, tmp_path / "disc", "ElectraForSequenceClassification", id2label={0: "a", 1: "b", 2: "c"}
        )
    assert sorted(new) == [f"classifier.{m}.{p}" for m in ("dense", "out_proj") for p in ("bias", "weight")]
    ids, mask, types = batch(hf.config.vocab_size)
    with torch.no_grad():
        expected = hf.electra(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        got = model.eval().electra(ids, mask, types).last_hidden_state
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def test_generator_config_is_a_fraction_of_the_discriminator():
    disc = ElectraConfig(hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    gen = generator_config(disc, 0.25)
    assert (gen.hidden_size, gen.num_attention_heads, gen.intermediate_size) == (64, 1, 256)
    assert (gen.embedding_size, gen.num_hidden_layers, gen.vocab_size) == (128, 12, disc.vocab_size)
    half = generator_config(disc, 0.5)
    assert (half.hidden_size, half.num_attention_heads) == (128, 2)


def tiny_pretrainer(balanced=False, **overrides):
    from seq2bert.models.electra.pretrainer import ElectraPretrainer

    cfg = ElectraConfig(vocab_size=61, embedding_size=12, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=16, **overrides)  # fmt: skip
    torch.manual_seed(0)
    return ElectraPretrainer(cfg, generator_size=0.5, balanced=balanced)


def masked_batch():
    ids, mask, types = batch(61)
    labels = torch.full_like(ids, -100)
    for row, col in ((0, 3), (0, 8), (1, 5), (2, 1)):
        labels[row, col] = int(ids[row, col])
        ids[row, col] = 4  # [MASK]
    return ids, mask, types, labels


def test_pretrainer_shares_the_embeddings_and_sizes_the_generator():
    model = tiny_pretrainer()
    gen, disc = model.generator.electra.embeddings, model.discriminator.electra.embeddings
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings", "norm"):
        assert getattr(gen, name) is getattr(disc, name)
    assert model.generator.mlm.decoder.weight is disc.word_embeddings.weight
    assert gen.project is not disc.project  # each projects E to its own width
    assert (model.generator.config.hidden_size, model.generator.config.num_attention_heads) == (16, 2)
    names = {n for n, _ in model.named_parameters()}  # shared parameters are listed once
    assert not any(n.startswith("generator.electra.embeddings.word_embeddings") for n in names)


def test_pretrainer_loss_labels_and_reproducible_sampling():
    model = tiny_pretrainer(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ids, mask, types, labels = masked_batch()
    out = model(ids, mask, types, labels, generator=torch.Generator().manual_seed(0))
    again = model(ids, mask, types, labels, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out.corrupted_ids, again.corrupted_ids)
    masked = labels != -100
    original = torch.where(masked, labels, ids)
    assert torch.equal(out.corrupted_ids[~masked], original[~masked])  # only masked positions change
    assert torch.equal(out.replaced, (out.corrupted_ids != original).long())
    assert out.generator_logits.shape == (4, 61) and out.discriminator_logits.shape == ids.shape
    torch.testing.assert_close(out.loss, out.mlm_loss + 50 * out.disc_loss)
    d = model.discriminator(out.corrupted_ids, mask, types, labels=out.replaced)
    torch.testing.assert_close(out.disc_loss, d.loss)


def test_tying_all_weights_gives_the_generator_the_discriminators_encoder():
    """Sect. 3.1, "tying all encoder weights": one encoder under both heads — the MLM loss trains it too."""
    from seq2bert.models.electra.pretrainer import ElectraPretrainer

    cfg = ElectraConfig(vocab_size=61, embedding_size=12, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=16)  # fmt: skip
    model = ElectraPretrainer(cfg, generator_size=1.0, tie_weights="all")
    assert model.generator.electra is model.discriminator.electra
    ids, mask, types, labels = masked_batch()
    out = model(ids, mask, types, labels)
    out.mlm_loss.backward()
    layer = model.discriminator.electra.layers[0]
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())
    with pytest.raises(ValueError, match="as wide"):
        ElectraPretrainer(cfg, generator_size=0.5, tie_weights="all")


def test_the_balanced_pretrainer_weighs_the_replaced_and_the_original_tokens_alike():
    from seq2bert.objectives.replaced_token_detection import replaced_token_detection_loss

    model = tiny_pretrainer(balanced=True, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ids, mask, types, labels = masked_batch()
    out = model(ids, mask, types, labels, generator=torch.Generator().manual_seed(0))
    assert 0 < int(out.replaced.sum()) < int(mask.sum())
    weighted = replaced_token_detection_loss(out.discriminator_logits, out.replaced, mask, balanced=True)
    plain = replaced_token_detection_loss(out.discriminator_logits, out.replaced, mask)
    torch.testing.assert_close(out.disc_loss, weighted)
    assert not torch.allclose(weighted, plain)


def test_no_gradient_flows_from_the_discriminator_loss_into_the_generator():
    model = tiny_pretrainer()
    ids, mask, types, labels = masked_batch()
    out = model(ids, mask, types, labels, generator=torch.Generator().manual_seed(0))
    out.disc_loss.backward()
    own = [(n, p) for n, p in model.generator.named_parameters() if not n.startswith("electra.embeddings.")
           or n.startswith("electra.embeddings.project")]  # fmt: skip
    assert own and all(p.grad is None for _, p in own), [n for n, p in own if p.grad is not None]
    assert model.discriminator.electra.embeddings.word_embeddings.weight.grad is not None  # shared: D's
    model.zero_grad()
    model(ids, mask, types, labels, generator=torch.Generator().manual_seed(0)).loss.backward()
    assert all(p.grad is not None for n, p in own if not n.startswith("mlm.decoder.weight"))


def test_two_stage_electra_trains_the_generator_then_the_discriminator_from_its_weights():
    """Sect. 3.2's two-stage ELECTRA: n steps of L_MLM alone (the discriminator not run), then the discriminator
    initialised with the generator's weights and trained on L_Disc, the generator frozen."""
    from seq2bert.models.electra.pretrainer import ElectraPretrainer

    cfg = ElectraConfig(vocab_size=61, embedding_size=12, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=16)  # fmt: skip
    torch.manual_seed(0)
    model = ElectraPretrainer(cfg, generator_size=1.0, two_stage_steps=2).train()
    ids, mask, types, labels = masked_batch()
    gen, disc = model.generator.electra, model.discriminator.electra
    layer = "layers.0.self_attn.qkv.weight"
    assert not torch.equal(gen.state_dict()[layer], disc.state_dict()[layer])
    for step in (0, 1):  # the generator's stage
        model.begin_step(step)
        model.zero_grad()
        out = model(ids, mask, types, labels)
        assert out.disc_loss is None and out.discriminator_logits is None
        torch.testing.assert_close(out.loss, out.mlm_loss)
        out.loss.backward()
        assert all(p.grad is None for p in model.discriminator.electra.layers.parameters())
        assert all(p.grad is None for p in model.discriminator.rtd.parameters())
        assert gen.layers[0].self_attn.qkv.weight.grad.abs().sum() > 0
    with torch.no_grad():
        gen.layers[0].self_attn.qkv.weight.add_(1.0)  # the generator's weights, as training left them
    model.begin_step(2)  # the discriminator's stage starts from the generator's encoder
    assert model.copied and all(torch.equal(v, disc.state_dict()[k]) for k, v in gen.state_dict().items())
    model.zero_grad()
    out = model(ids, mask, types, labels)
    torch.testing.assert_close(out.loss, out.mlm_loss + 50 * out.disc_loss)
    out.loss.backward()
    assert all(
        p.grad is None
        for n, p in model.generator.named_parameters()
        if ".embeddings." not in n or "project" in n
    )
    assert disc.layers[0].self_attn.qkv.weight.grad.abs().sum() > 0
    assert (
        disc.embeddings.word_embeddings.weight.grad is not None
    )  # shared: they train with the discriminator
    before = disc.layers[0].self_attn.qkv.weight.detach().clone()
    model.begin_step(3)  # later steps copy nothing
    assert torch.equal(disc.layers[0].self_attn.qkv.weight, before)
    model.eval()  # the held-out evaluation runs both networks in either stage
    assert model(ids, mask, types, labels).disc_loss is not None
    with pytest.raises(ValueError, match="as wide"):
        ElectraPretrainer(cfg, generator_size=0.5, two_stage_steps=2)
