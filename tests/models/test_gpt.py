"""GPT-1 and GPT-2 against transformers: random-weight models of odd shapes built by transformers give equal
outputs (≤ 1e-5, fp32) at the real tokens of left- and right-padded batches for every class, with and without
a cache; every checkpoint key is consumed or named; state dicts and directories go both ways."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.models.decoder_only import generation_positions
from seq2bert.models.gpt.config import GPT2Config, OpenAIGPTConfig, gpt1, gpt1_tiny, gpt2_medium, gpt2_tiny
from seq2bert.models.gpt.convert import config_from_hf, config_to_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.pretrained import init_task_model

transformers = pytest.importorskip("transformers")

V, PAD, EOS = 61, 60, 2
SHAPES = {
    "gpt2": {
        "2 layers, d 30, 5 heads, n_inner 20": dict(n_layer=2, n_embd=30, n_head=5, n_inner=20),
        "1 layer, d 24, 3 heads, relu, eps 1e-3, unscaled": dict(
            n_layer=1, n_embd=24, n_head=3, activation_function="relu", layer_norm_epsilon=1e-3,
            scale_attn_weights=False,
        ),
        "3 layers, d 14, 7 heads, gelu, scaled by layer": dict(
            n_layer=3, n_embd=14, n_head=7, activation_function="gelu", scale_attn_by_inverse_layer_idx=True
        ),
    },
    "openai-gpt": {
        "2 layers, d 30, 5 heads": dict(n_layer=2, n_embd=30, n_head=5),
        "1 layer, d 21, 3 heads, relu, eps 1e-3": dict(n_layer=1, n_embd=21, n_head=3, afn="relu",
                                                       layer_norm_epsilon=1e-3),
        "3 layers, d 16, 1 head, silu": dict(n_layer=3, n_embd=16, n_head=1, afn="silu"),
    },
}  # fmt: skip
ARCHITECTURES = {
    "gpt2": ["GPT2Model", "GPT2LMHeadModel", "GPT2DoubleHeadsModel", "GPT2ForSequenceClassification",
             "GPT2ForTokenClassification"],
    "openai-gpt": ["OpenAIGPTModel", "OpenAIGPTLMHeadModel", "OpenAIGPTDoubleHeadsModel",
                   "OpenAIGPTForSequenceClassification"],
}  # fmt: skip
BARE = ("GPT2Model", "OpenAIGPTModel")
FIRST = {model_type: next(iter(shapes)) for model_type, shapes in SHAPES.items()}


def hf_model(model_type, architecture, shape=None, **overrides):
    """A random transformers model; biases and LayerNorms perturbed (a fresh model has them at 0 and 1)."""
    config_class = transformers.GPT2Config if model_type == "gpt2" else transformers.OpenAIGPTConfig
    kw = dict(vocab_size=V, n_positions=40, initializer_range=0.2, pad_token_id=PAD, num_labels=3)
    if model_type == "gpt2":
        kw.update(bos_token_id=1, eos_token_id=EOS)
    cfg = config_class(**{**kw, **SHAPES[model_type][shape or FIRST[model_type]], **overrides})
    cfg._attn_implementation = "eager"  # the attention weights are compared too
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln_" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def ours_from(hf, architecture):
    cfg = config_from_hf(hf.config.to_dict())
    model = registry.get(cfg.model_type).make(cfg, architecture).eval()
    model.load_state_dict(from_hf_state_dict(hf.state_dict(), cfg, architecture))
    return model


def batch(padding="left", rows=3, length=9, seed=3):
    """ids (rows, length) with [PAD] in rows 1 (3 pads) and 2 (5 pads), on the left or the right; the mask;
    LM labels (the ids, −100 on padding)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, PAD, (rows, length), generator=g)
    mask = torch.ones_like(ids)
    for row, pads in ((1, 3), (2, 5)):
        if row < rows:
            mask[row, :pads] = 0
    if padding == "right":
        mask = mask.flip(1)
    ids = ids.masked_fill(mask == 0, PAD)
    return ids, mask, ids.masked_fill(mask == 0, -100)


def from_real(labels, mask):
    """LM labels whose every target is predicted from a real token: in a left-padded row the first real token
    is predicted from a pad, whose output is each implementation's own (a pad sees no real key: ours and
    transformers' sdpa attend to nothing, transformers' eager GPT-2 to every key alike, its GPT-1 to the later
    tokens), so it is left out too (test_left_padded_loss_equals_transformers_sdpa_with_plain_labels)."""
    out = labels.clone()
    out[:, 1:] = out[:, 1:].masked_fill(mask[:, :-1] == 0, -100)
    return out


def close(a, b, msg=None):
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=msg)


def per_token(x, real):
    """The rows of (B, T, …) — or of attention weights (B, h, T, T_k) — at the real tokens."""
    return x[real] if x.dim() != 4 else x.transpose(1, 2)[real]


CASES = [(mt, shape, arch) for mt in SHAPES for shape in SHAPES[mt] for arch in ARCHITECTURES[mt]
         if "DoubleHeads" not in arch]  # fmt: skip


@pytest.mark.parametrize("padding", ["left", "right"])
@pytest.mark.parametrize("model_type, shape, architecture", CASES)
def test_outputs_equal_transformers_at_real_tokens(model_type, shape, architecture, padding):
    hf = hf_model(model_type, architecture, shape)
    ours = ours_from(hf, architecture)
    ids, mask, lm_labels = batch(padding)
    real = mask.bool()
    bare = architecture in BARE
    labels = from_real(lm_labels, mask)
    if architecture.endswith("SequenceClassification"):
        labels = torch.tensor([0, 2, 1])
    elif architecture.endswith("TokenClassification"):
        labels = labels.remainder(3).masked_fill(labels == -100, -100)  # 3 tags
    kw = dict(output_hidden_states=True, output_attentions=True, **({} if bare else {"labels": labels}))
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, **kw)
        o = ours(ids, mask, **kw)
    if bare:
        close(per_token(o.last_hidden_state, real), per_token(e.last_hidden_state, real))
    elif architecture.endswith("SequenceClassification"):
        close(o.logits, e.logits)  # pooled at each row's last real token
        close(o.loss, e.loss)
    else:
        close(per_token(o.logits, real), per_token(e.logits, real))
        close(o.loss, e.loss)
    assert len(o.hidden_states) == len(e.hidden_states) == hf.config.n_layer + 1
    for i, (a, b) in enumerate(zip(o.hidden_states, e.hidden_states, strict=True)):
        close(per_token(a, real), per_token(b, real), msg=f"hidden state {i}")
    for i, (a, b) in enumerate(zip(o.attentions, e.attentions, strict=True)):
        close(per_token(a, real), per_token(b, real), msg=f"attention {i}")


def test_left_padded_loss_equals_transformers_sdpa_with_plain_labels():
    """With transformers' default attention (sdpa) a pad that sees no key has a zero attention output, as
    ours: the loss of plain labels (the ids, −100 on padding) is equal, pad-predicted first tokens included."""
    config = transformers.GPT2Config(
        vocab_size=V, n_positions=40, n_layer=2, n_embd=30, n_head=5, pad_token_id=PAD
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(config).eval()
    ours = ours_from(hf, "GPT2LMHeadModel")
    ids, mask, labels = batch("left")
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, labels=labels)
    close(ours(ids, mask, labels=labels).loss, e.loss)
    close(ours(ids, mask).logits, e.logits)  # every position, padding included


@pytest.mark.parametrize(
    "model_type", list(LM_HEADS := {"gpt2": "GPT2LMHeadModel", "openai-gpt": "OpenAIGPTLMHeadModel"})
)
def test_the_fused_loss_has_transformers_loss_and_gradients(model_type):
    """``loss_only``: the LM head fused with its loss, no logits built — the loss and every gradient (the tied
    embedding's included) as transformers computes them, on a right-padded batch."""
    architecture = LM_HEADS[model_type]
    hf = hf_model(model_type, architecture)
    ours = ours_from(hf, architecture)
    ids, mask, lm_labels = batch("right")
    e = hf(input_ids=ids, attention_mask=mask, labels=lm_labels)
    e.loss.backward()
    o = ours(ids, mask, labels=lm_labels, loss_only=True)
    o.loss.backward()
    assert o.logits is None
    close(o.loss, e.loss)
    theirs = dict(hf.named_parameters())
    expected = to_hf_state_dict(
        {k: p.grad for k, p in ours.named_parameters(remove_duplicate=False)}, ours.config, architecture
    )
    for name, p in theirs.items():  # the tied lm_head is one of them under transformers' name
        close(expected[name], p.grad, msg=name)
    with pytest.raises(ValueError, match="labels"):
        ours(ids, mask, loss_only=True)


@pytest.mark.parametrize("model_type", list(SHAPES))
@pytest.mark.parametrize("shape_index", [0, 1, 2])
def test_double_heads_equal_transformers(model_type, shape_index):
    """(B, C, T) inputs, each choice scored at its last real token. transformers' GPT-1 cannot take a mask
    of that shape: its choices are unpadded (every token real)."""
    architecture = ARCHITECTURES[model_type][2]
    hf = hf_model(model_type, architecture, list(SHAPES[model_type])[shape_index])
    ours = ours_from(hf, architecture)
    ids, mask, labels = batch("right", rows=3, length=8)
    if model_type == "openai-gpt":
        ids, mask, labels = batch("right", rows=1, length=8)
        ids, labels = torch.cat([ids, ids.flip(1)]), torch.cat([labels, labels.flip(1)])
        mask = torch.ones_like(ids)
    ids, mask, labels = (x.view(1, -1, 8).repeat(2, 1, 1) for x in (ids, mask, labels))  # (2, C, 8)
    ids[1] = ids[1].roll(1, dims=0)  # the second example's choices in another order
    mc_token_ids = mask.sum(-1) - 1  # (2, C)
    mc_labels = torch.tensor([0, 1])
    inputs = dict(attention_mask=None if model_type == "openai-gpt" else mask, mc_token_ids=mc_token_ids,
                  labels=labels, mc_labels=mc_labels)  # fmt: skip
    with torch.no_grad():
        e = hf(input_ids=ids, **inputs)
    o = ours(ids, inputs.pop("attention_mask"), **inputs)
    assert o.mc_logits.shape == e.mc_logits.shape == (2, ids.size(1))
    close(o.mc_logits, e.mc_logits)
    close(o.mc_loss, e.mc_loss)
    close(o.loss, e.loss)
    real = torch.ones_like(ids).bool() if model_type == "openai-gpt" else mask.bool()
    close(o.logits[real], e.logits[real])


@pytest.mark.parametrize(
    "summary",
    [dict(summary_activation="tanh", summary_proj_to_labels=False), dict(summary_use_proj=False),
     dict(summary_type="mean", summary_activation="relu")],
)  # fmt: skip
def test_the_summary_options_of_the_multiple_choice_head(summary):
    """transformers' SequenceSummary options: a tanh over d_model outputs, no projection, a mean."""
    hf = hf_model("gpt2", "GPT2DoubleHeadsModel", **summary)
    ours = ours_from(hf, "GPT2DoubleHeadsModel")
    ids = batch("right", rows=1)[0].repeat(2, 1)  # (B, T): transformers' "mean" is over the sequence then
    with torch.no_grad():
        e = hf(input_ids=ids, mc_token_ids=torch.tensor([4, 8]))
    close(ours(ids, mc_token_ids=torch.tensor([4, 8])).mc_logits, e.mc_logits)


@pytest.mark.parametrize(
    "num_labels, labels", [(1, [0.5, -1.0, 2.0]), (3, [[1.0, 0, 1], [0, 0, 1], [0, 1, 0]])]
)
def test_sequence_classification_problem_types_follow_transformers(num_labels, labels):
    """One output: regression; float labels with several outputs: multi-label (transformers' rule)."""
    architecture = "GPT2ForSequenceClassification"
    hf = hf_model("gpt2", architecture, num_labels=num_labels)
    ours = ours_from(hf, architecture)
    ids, mask, _ = batch("left")
    labels = torch.tensor(labels)
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, labels=labels)
    o = ours(ids, mask, labels=labels)
    close(o.logits, e.logits)
    close(o.loss, e.loss)


def test_sequence_classification_without_a_pad_token_takes_one_row_at_a_time():
    hf = hf_model("gpt2", "GPT2ForSequenceClassification", pad_token_id=None)
    ours = ours_from(hf, "GPT2ForSequenceClassification")
    ids = batch()[0][:, :5]
    with torch.no_grad():
        close(ours(ids[:1]).logits, hf(input_ids=ids[:1]).logits)
    with pytest.raises(ValueError, match="no padding token"):
        ours(ids)


@pytest.mark.parametrize("model_type", list(SHAPES))
def test_a_cache_continues_the_forward(model_type):
    """A prefix with use_cache, then the rest (in two pieces) with past_key_values: the logits of the full
    forward — ours and transformers' — at the real tokens, left padding included."""
    architecture = ARCHITECTURES[model_type][1]
    hf = hf_model(model_type, architecture, list(SHAPES[model_type])[2])
    ours = ours_from(hf, architecture)
    ids, mask, _ = batch("left")
    real = mask.bool()
    with torch.no_grad():
        expected = hf(input_ids=ids, attention_mask=mask).logits
        full = ours(ids, mask).logits
        first = ours(ids[:, :4], mask[:, :4], use_cache=True)
        assert first.past_key_values[0].self_attn.length == 4
        second = ours(ids[:, 4:6], mask[:, :6], past_key_values=first.past_key_values)
        third = ours(ids[:, 6:], mask, past_key_values=second.past_key_values)
    assert third.past_key_values[-1].self_attn.length == ids.size(1)
    cached = torch.cat([first.logits, second.logits, third.logits], dim=1)
    close(cached[real], full[real])
    close(cached[real], expected[real])
    if model_type == "gpt2":  # transformers' own cache gives the same continuation
        with torch.no_grad():
            prefix = hf(input_ids=ids[:, :4], attention_mask=mask[:, :4], use_cache=True)
            rest = hf(input_ids=ids[:, 4:], attention_mask=mask, past_key_values=prefix.past_key_values)
        close(third.logits[real[:, 6:]], rest.logits[:, 2:][real[:, 6:]])


@pytest.mark.parametrize("model_type", list(SHAPES))
def test_position_and_token_type_ids_are_honoured(model_type):
    """The positions transformers' generate gives a left-padded batch (real tokens from 0) instead of the
    default 0 … T − 1: the same logits as transformers with the same position_ids."""
    architecture = ARCHITECTURES[model_type][1]
    hf = hf_model(model_type, architecture)
    ours = ours_from(hf, architecture)
    ids, mask, _ = batch("left")
    positions = generation_positions(mask)
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        default = ours(ids, mask).logits
    o = ours(ids, mask, position_ids=positions).logits
    real = mask.bool()
    close(o[real], e[real])
    assert not torch.allclose(o[1:][real[1:]], default[1:][real[1:]])  # the padded rows moved
    close(o[0], default[0])  # the unpadded row did not
    types = torch.randint(0, 3, ids.shape, generator=torch.Generator().manual_seed(0))  # looked up in W_e
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
    close(ours(ids, mask, token_type_ids=types).logits[real], e[real])


@pytest.mark.parametrize("model_type", list(SHAPES))
def test_causality_a_later_token_changes_no_earlier_logit(model_type):
    ours = ours_from(hf_model(model_type, ARCHITECTURES[model_type][1]), ARCHITECTURES[model_type][1])
    ids, mask, _ = batch("left")
    changed = ids.clone()
    changed[:, 6] = (changed[:, 6] + 1) % PAD
    with torch.no_grad():
        a, b = ours(ids, mask).logits, ours(changed, mask).logits
    assert torch.equal(a[:, :6], b[:, :6])
    assert not torch.allclose(a[:, 6:], b[:, 6:])


@pytest.mark.parametrize("model_type", list(SHAPES))
def test_every_key_is_consumed_or_named(model_type):
    architecture = ARCHITECTURES[model_type][1]
    hf = hf_model(model_type, architecture)
    cfg = config_from_hf(hf.config.to_dict())
    sd = dict(hf.state_dict())
    assert "lm_head.weight" in sd  # the tied copy, consumed
    with_buffers = {**sd, "transformer.h.0.attn.bias": torch.ones(1, 1, 40, 40),
                    "transformer.h.0.attn.masked_bias": torch.tensor(-1e4)}  # fmt: skip
    assert set(from_hf_state_dict(with_buffers, cfg, architecture)) == set(
        ours_from(hf, architecture).state_dict()
    )
    with pytest.raises(CheckpointError, match=r"keys not used by the conversion: transformer\.extra\.weight"):
        from_hf_state_dict({**sd, "transformer.extra.weight": torch.zeros(1)}, cfg, architecture)
    del sd["transformer.h.1.mlp.c_fc.bias"]
    with pytest.raises(CheckpointError, match=r"no transformer\.h\.1\.mlp\.c_fc\.bias"):
        from_hf_state_dict(sd, cfg, architecture)


def test_heads_load_as_transformers_loads_them():
    """A bare model from a head's checkpoint drops the head; a head model needs its head, unless a task starts
    (new_heads); the LM head is the token embedding, so a bare checkpoint has all it needs."""
    classifier = hf_model("gpt2", "GPT2ForSequenceClassification")
    cfg = config_from_hf(classifier.config.to_dict())
    sd = classifier.state_dict()
    bare = from_hf_state_dict(sd, cfg, "GPT2Model")
    assert "embeddings.token.weight" in bare and not any(k.startswith("score") for k in bare)
    with pytest.raises(CheckpointError, match=r"multiple_choice_head\.summary\.weight"):
        from_hf_state_dict(sd, cfg, "GPT2DoubleHeadsModel")
    with pytest.raises(CheckpointError, match=r"score\.weight"):
        from_hf_state_dict(sd, cfg, "GPT2LMHeadModel")  # a head the LM does not have
    lm = from_hf_state_dict(sd, cfg, "GPT2LMHeadModel", new_heads=True)
    assert torch.equal(lm["lm_head.weight"], sd["transformer.wte.weight"])
    base = hf_model("gpt2", "GPT2Model")
    with pytest.raises(CheckpointError, match=r"no score\.weight"):
        from_hf_state_dict(base.state_dict(), cfg, "GPT2ForSequenceClassification")
    fresh = from_hf_state_dict(base.state_dict(), cfg, "GPT2ForSequenceClassification", new_heads=True)
    assert "score.weight" not in fresh and "transformer.final_norm.weight" in fresh


@pytest.mark.parametrize("architecture", [a for archs in ARCHITECTURES.values() for a in archs])
def test_state_dict_round_trip(architecture):
    model_type = "gpt2" if architecture.startswith("GPT2") else "openai-gpt"
    hf = hf_model(model_type, architecture)
    ours = ours_from(hf, architecture)
    back = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    reference = hf.state_dict()
    assert set(back) == set(reference)
    for key, value in reference.items():
        torch.testing.assert_close(back[key], value, rtol=0, atol=0, msg=key)
    assert config_from_hf(config_to_hf(ours.config, architecture)) == ours.config


def outputs(model, architecture, theirs: bool):
    """The comparable outputs of ``model`` on a right-padded batch ((B, C, T) for DoubleHeads)."""
    ids, mask, labels = batch("right")
    kw = dict(attention_mask=mask)
    if "DoubleHeads" in architecture:
        ids, mask = ids[None], mask[None]
        kw = dict(attention_mask=mask, mc_token_ids=mask.sum(-1) - 1)
        if architecture.startswith("OpenAI"):
            mask, kw = torch.ones_like(ids), dict(mc_token_ids=torch.full((1, 3), 8))
    with torch.no_grad():
        out = model(input_ids=ids, **kw) if theirs else model(ids, kw.pop("attention_mask", None), **kw)
    first = out.last_hidden_state if architecture in BARE else out.logits
    real = mask.bool()
    main = first if architecture.endswith("SequenceClassification") else first[real]
    return (main, out.mc_logits) if "DoubleHeads" in architecture else (main,)


@pytest.mark.parametrize("architecture", [a for archs in ARCHITECTURES.values() for a in archs])
def test_directories_both_ways(architecture, tmp_path):
    model_type = "gpt2" if architecture.startswith("GPT2") else "openai-gpt"
    hf = hf_model(model_type, architecture)
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours).__name__ == architecture  # config.json's architectures
    assert registry.family_of(ours).kind == "decoder"
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(tmp_path / "ours").eval()
    for a, b, c in zip(outputs(hf, architecture, True), outputs(again, architecture, True),
                       outputs(ours, architecture, False), strict=True):  # fmt: skip
        close(b, a)
        close(c, a)


def test_a_task_starts_from_a_language_model_directory(tmp_path):
    hf_model("gpt2", "GPT2LMHeadModel").save_pretrained(tmp_path)
    family = registry.get("gpt2")
    model, tokenizer, new = init_task_model(family, tmp_path, family.architecture_for("sequence"),
                                            id2label={0: "no", 1: "yes"})  # fmt: skip
    assert type(model).__name__ == "GPT2ForSequenceClassification" and new == ["score.weight"]
    assert model.score.weight.shape == (2, 30) and tokenizer is None


def test_configs_are_validated_and_builders_have_the_papers_sizes():
    assert (gpt1().n_layer, gpt1().n_embd, gpt1().n_head, gpt1().n_positions) == (12, 768, 12, 512)
    assert (gpt2_medium().n_layer, gpt2_medium().n_embd, gpt2_medium().n_head) == (24, 1024, 16)
    assert gpt2_medium().d_ff == 4096 and GPT2Config(n_inner=100).d_ff == 100
    assert gpt2_tiny().model_type == "gpt2" and gpt1_tiny().model_type == "openai-gpt"
    for bad, field in [(dict(n_embd=30, n_head=4), "n_head"), (dict(resid_pdrop=1.0), "resid_pdrop"),
                       (dict(summary_type="attn"), "summary_type"), (dict(eos_token_id=-2), "eos_token_id")]:  # fmt: skip
        with pytest.raises(ConfigError, match=field):
            GPT2Config(**bad)
    with pytest.raises(ConfigError, match="afn"):
        OpenAIGPTConfig(afn="gelu_new")  # not one transformers' GPT-1 knows
    with pytest.raises(ConfigError, match="activation_function"):
        GPT2Config(activation_function="tanh")
    for refused, message in [(dict(add_cross_attention=True), "cross-attention"),
                             (dict(tie_word_embeddings=False), "tied"), (dict(model_type="gpt3"), "gpt3")]:  # fmt: skip
        with pytest.raises(CheckpointError, match=message):
            config_from_hf({**config_to_hf(gpt2_tiny(), "GPT2Model"), **refused})


def test_gpt2_initialisation_scales_the_residual_projections():
    """Radford et al. 2019, Sect. 2.3: W^O and W_2 from N(0, 0.02/√(2·n_layer)); the rest N(0, 0.02)."""
    torch.manual_seed(0)
    model = registry.build_model(gpt2_tiny(n_layer=8, n_embd=256, n_head=4), "GPT2LMHeadModel")
    layer = model.transformer.layers[0]
    assert abs(layer.self_attn.out.weight.std().item() - 0.02 / 4) < 5e-4
    assert abs(layer.feed_forward.w_2.weight.std().item() - 0.02 / 4) < 5e-4
    assert abs(layer.self_attn.qkv.weight.std().item() - 0.02) < 1e-3
    assert model.lm_head.weight is model.transformer.embeddings.token.weight
    gpt = registry.build_model(gpt1_tiny(n_layer=8, n_embd=256, n_head=4), "OpenAIGPTModel")
    assert abs(gpt.layers[0].self_attn.out.weight.std().item() - 0.02) < 1e-3
    assert gpt.final_norm is None and not gpt.layers[0].norm_first and layer.norm_first
