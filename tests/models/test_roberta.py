"""RoBERTa against transformers: random-weight models of odd shapes built by transformers — odd vocabularies,
odd widths and heads, <pad> not always 1 — give equal outputs and losses (≤ 1e-5, fp32) on batches padded on
the right and on the left, for every class; directories go both ways; from_pretrained returns the class
config.json names; every checkpoint key is consumed."""

import pytest
import torch
from tokenizers import AddedToken

import seq2bert
from seq2bert.errors import CheckpointError
from seq2bert.models import registry
from seq2bert.models.roberta.config import RobertaConfig, roberta_base
from seq2bert.models.roberta.convert import config_from_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.roberta.model import RobertaEmbeddings, RobertaForMaskedLM, RobertaModel
from seq2bert.models.roberta.pretrained import CLASSES, build_roberta

transformers = pytest.importorskip("transformers")

SHAPES = {
    "2 layers, H 24, 3 heads, V 101, pad 1": dict(vocab_size=101, hidden_size=24, num_hidden_layers=2,
                                                  num_attention_heads=3, intermediate_size=40, pad_token_id=1),
    "1 layer, H 20, 5 heads, V 53, pad 0, gelu_new, 2 types": dict(
        vocab_size=53, hidden_size=20, num_hidden_layers=1, num_attention_heads=5, intermediate_size=36,
        pad_token_id=0, hidden_act="gelu_new", type_vocab_size=2),
    "3 layers, H 12, 1 head, V 77, pad 7, relu": dict(vocab_size=77, hidden_size=12, num_hidden_layers=3,
                                                     num_attention_heads=1, intermediate_size=30, pad_token_id=7,
                                                     hidden_act="relu"),
}  # fmt: skip
ARCHITECTURES = list(CLASSES)
FIRST_SHAPE = next(iter(SHAPES))


def hf_model(architecture, shape, **config):
    fields = {**SHAPES[shape], **config}
    cfg = transformers.RobertaConfig(
        max_position_embeddings=fields["pad_token_id"] + 20,
        initializer_range=0.2,
        layer_norm_eps=1e-5,
        **fields,
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
    model = build_roberta(cfg, architecture, sd).eval()
    model.load_state_dict(from_hf_state_dict(sd, cfg, architecture))
    return model


def batch(cfg, left: bool):
    """Three rows of 11 tokens: <s> … </s> then padding (or padding first), one row unpadded."""
    g = torch.Generator().manual_seed(3)
    pad = cfg.pad_token_id
    ids = torch.randint(0, cfg.vocab_size - 1, (3, 11), generator=g)
    ids = ids + (ids >= pad).long()  # no pad among the real tokens
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 3:] = 0
    if left:
        mask = mask.flip(1)
    ids = ids.masked_fill(mask == 0, pad)
    types = torch.randint(0, cfg.type_vocab_size, (3, 11), generator=g)
    return ids, mask, types


def labels_for(architecture, cfg, ids, mask):
    """The arguments of the loss of ``architecture``, as keywords both sides take."""
    g = torch.Generator().manual_seed(1)
    if architecture == "RobertaForMaskedLM":
        labels = torch.full_like(ids, -100)
        labels[0, 3], labels[1, 5], labels[2, -1 if mask[2, -1] else 1] = 5, 17, 42
        return dict(labels=labels)
    if architecture == "RobertaForQuestionAnswering":
        return dict(start_positions=torch.tensor([2, 0, 40]), end_positions=torch.tensor([4, 0, 41]))
    if architecture == "RobertaForTokenClassification":
        labels = torch.randint(0, cfg.num_labels, ids.shape, generator=g)
        return dict(labels=labels.masked_fill(mask == 0, -100))
    if architecture == "RobertaForMultipleChoice":
        return dict(labels=torch.tensor([2]))
    if architecture == "RobertaForSequenceClassification":
        if cfg.num_labels == 1:
            return dict(labels=torch.tensor([0.5, 3.0, 4.5]))
        if cfg.problem_type == "multi_label_classification":
            return dict(labels=torch.randint(0, 2, (3, cfg.num_labels), generator=g).float())
        return dict(labels=torch.tensor([0, cfg.num_labels - 1, 1]))
    return {}


FIELDS = ("last_hidden_state", "pooler_output", "logits", "start_logits", "end_logits", "loss")


def compare(hf, ours, architecture, left, types=True):
    ids, mask, token_types = batch(hf.config, left)
    if architecture == "RobertaForMultipleChoice":  # one example, 3 choices
        ids, mask, token_types = (x.view(1, 3, -1) for x in (ids, mask, token_types))
    inputs = dict(input_ids=ids, attention_mask=mask, **(dict(token_type_ids=token_types) if types else {}))
    inputs.update(labels_for(architecture, hf.config, ids, mask))
    kw = dict(output_hidden_states=True, output_attentions=True)
    with torch.no_grad():
        e = hf(**inputs, **kw)
        o = ours(**inputs, **kw)
    compared = 0
    for name in FIELDS:
        if getattr(e, name, None) is not None:
            torch.testing.assert_close(getattr(o, name), getattr(e, name), rtol=0, atol=1e-5, msg=name)
            compared += 1
    assert compared >= 1 + ("loss" in getattr(e, "keys", lambda: ())())
    assert len(o.hidden_states) == len(e.hidden_states) and len(o.attentions) == len(e.attentions)
    for a, b in zip(o.hidden_states + o.attentions, e.hidden_states + e.attentions, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    return o, e


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_outputs_and_losses_equal_transformers(architecture, shape, left):
    hf = hf_model(architecture, shape)
    ours = ours_from(hf, architecture)
    assert type(ours).__name__ == architecture
    compare(hf, ours, architecture, left)


@pytest.mark.parametrize(
    "config",
    [
        dict(num_labels=1),  # regression: squared error
        dict(num_labels=5, classifier_dropout=0.3),
        dict(num_labels=3, problem_type="multi_label_classification"),
    ],
)
def test_sequence_classification_problem_types_equal_transformers(config):
    architecture = "RobertaForSequenceClassification"
    hf = hf_model(architecture, FIRST_SHAPE, **config)
    compare(hf, ours_from(hf, architecture), architecture, left=False, types=False)


def test_masked_lm_sparse_prediction_gives_the_same_loss():
    hf = hf_model("RobertaForMaskedLM", FIRST_SHAPE)
    ours = ours_from(hf, "RobertaForMaskedLM")
    ids, mask, _ = batch(hf.config, left=True)
    labels = labels_for("RobertaForMaskedLM", hf.config, ids, mask)["labels"]
    with torch.no_grad():
        e = hf(input_ids=ids, attention_mask=mask, labels=labels)
        o = ours(ids, mask, labels=labels, sparse_prediction=True)
    torch.testing.assert_close(o.loss, e.loss, rtol=0, atol=1e-5)
    torch.testing.assert_close(o.logits, e.logits[labels != -100], rtol=0, atol=1e-5)


def test_positions_skip_the_padding_on_either_side():
    emb = RobertaEmbeddings(RobertaConfig(vocab_size=20, hidden_size=8, num_attention_heads=2, pad_token_id=3,
                                          max_position_embeddings=16))  # fmt: skip
    ids = torch.tensor([[5, 6, 7, 3, 3], [3, 3, 5, 6, 7]])
    assert emb.position_ids(ids).tolist() == [[4, 5, 6, 3, 3], [3, 3, 4, 5, 6]]
    assert (emb.position_embeddings.weight[3] == 0).all() and emb.position_embeddings.padding_idx == 3
    # a left-padded row reads as the unpadded one
    model = RobertaModel(roberta_base(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=16)).eval()  # fmt: skip
    ids = torch.tensor([[1, 1, 0, 9, 4, 2]])
    alone = model(ids[:, 2:]).last_hidden_state
    padded = model(ids, (ids != 1).long()).last_hidden_state[:, 2:]
    torch.testing.assert_close(padded, alone, rtol=0, atol=1e-5)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_directories_both_ways_and_from_pretrained_names_the_class(architecture, tmp_path):
    hf = hf_model(architecture, "1 layer, H 20, 5 heads, V 53, pad 0, gelu_new, 2 types")
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours).__name__ == architecture and not ours.training
    compare(hf, ours, architecture, left=True)
    ours.config.id2label = {i: f"tag{i}" for i in range(ours.config.num_labels)}
    ours.save_pretrained(tmp_path / "ours")
    again = getattr(transformers, architecture).from_pretrained(
        tmp_path / "ours", attn_implementation="eager"
    )
    assert again.config.id2label == ours.config.id2label and again.config.pad_token_id == 0
    compare(again.eval(), ours, architecture, left=False)
    back = seq2bert.from_pretrained(tmp_path / "ours")
    assert type(back) is type(ours) and back.config == ours.config
    reference = hf.state_dict()
    written = to_hf_state_dict(ours.state_dict(), ours.config, architecture)
    for key, value in written.items():
        torch.testing.assert_close(value, reference[key], rtol=0, atol=0, msg=key)
    buffers = ("position_ids", "token_type_ids")
    assert {k for k in reference if not k.endswith(buffers)} == set(written)


def test_a_bare_model_drops_heads_and_unknown_keys_are_named():
    hf = hf_model("RobertaForMaskedLM", FIRST_SHAPE)
    cfg = config_from_hf(hf.config.to_dict())
    sd = hf.state_dict()
    encoder = RobertaModel(cfg, add_pooling_layer=False)
    encoder.load_state_dict(from_hf_state_dict(sd, cfg, "RobertaModel"))
    with pytest.raises(CheckpointError, match="extra.weight"):
        from_hf_state_dict(
            {**sd, "roberta.encoder.layer.0.extra.weight": torch.zeros(1)}, cfg, "RobertaForMaskedLM"
        )
    no_head = {k: v for k, v in sd.items() if not k.startswith("lm_head.dense")}
    with pytest.raises(CheckpointError, match="lm_head.dense"):
        from_hf_state_dict(no_head, cfg, "RobertaForMaskedLM")
    with pytest.raises(CheckpointError, match="model_type"):
        config_from_hf({"model_type": "bert"})


def test_any_roberta_checkpoint_initialises_a_head(tmp_path):
    pretrained = hf_model("RobertaForMaskedLM", FIRST_SHAPE)
    pretrained.save_pretrained(tmp_path / "pre")
    family = registry.family_at(tmp_path / "pre")
    assert family.model_type == "roberta" and family.tokenizer == "bytelevel-bpe"
    from seq2bert.models.pretrained import init_task_model

    model, _, new = init_task_model(family, tmp_path / "pre", "RobertaForSequenceClassification")
    assert sorted(new) == [f"classifier.{m}.{p}" for m in ("dense", "out_proj") for p in ("bias", "weight")]
    _, _, new = init_task_model(family, tmp_path / "pre", "RobertaForMultipleChoice")
    assert sorted(new) == [
        "classifier.bias",
        "classifier.weight",
        "roberta.pooler.bias",
        "roberta.pooler.weight",
    ]


def test_masked_lm_decoder_is_tied_and_the_config_has_roberta_defaults():
    cfg = roberta_base(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8
    )
    m = RobertaForMaskedLM(cfg)
    assert m.mlm.decoder.weight is m.roberta.embeddings.word_embeddings.weight
    assert (m.roberta.embeddings.word_embeddings.weight[1] == 0).all()
    assert (cfg.pad_token_id, cfg.type_vocab_size, cfg.max_position_embeddings, cfg.max_input_length) == (
        1,
        1,
        514,
        512,
    )
    with pytest.raises(Exception, match="max_position_embeddings"):
        RobertaConfig(pad_token_id=5, max_position_embeddings=6)


TEXTS = ["Hello world, it's a <mask> day.", " a leading space", "naïve café 🙂 <mask>", "Hello"]
PAIRS = [("Who is there?", "Nobody is there, said the <mask>."), ("a", " b")]


@pytest.fixture
def bpe_files(tmp_path):
    """vocab.json + merges.txt of a small byte-level BPE with RoBERTa's specials first."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    backend.train_from_iterator(
        ["Hello world, it is a fine day.", "Who is there? Nobody is there."] * 5, trainer
    )
    directory = tmp_path / "tok"
    directory.mkdir()
    backend.model.save(str(directory))  # vocab.json, merges.txt; <mask> is added after the vocabulary
    return directory


def test_the_tokenizer_equals_transformers_roberta_tokenizer(bpe_files, tmp_path):
    from seq2bert.models.roberta.tokenizer import load_tokenizer

    ours = load_tokenizer(bpe_files)
    # <mask> takes the space before it, as in the published RoBERTa's tokenizer.json (and transformers 4's
    # RobertaTokenizerFast); transformers 5 reading bare vocab.json + merges.txt needs telling
    mask = AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)
    theirs = transformers.RobertaTokenizer.from_pretrained(bpe_files, mask_token=mask)
    for text in TEXTS:
        assert ours.encode(text).ids == theirs(text)["input_ids"], text
    for a, b in PAIRS:
        assert ours.encode(a, b).ids == theirs(a, b)["input_ids"], (a, b)
    ids = ours.encode(TEXTS[0]).ids
    assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=True) == TEXTS[0].replace(" <mask>", "")
    assert (ours.cls_token_id, ours.pad_token_id, ours.sep_token_id, ours.unk_token_id) == (0, 1, 2, 3)
    assert ours.mask_token_id == theirs.mask_token_id and ours.bos_token_id == 0 and ours.eos_token_id == 2
    padded = ours.encode_batch(TEXTS, padding="longest")
    assert padded["input_ids"] == theirs(TEXTS, padding="longest")["input_ids"]

    # a model saved with it: transformers reads the tokenizer as we do, and so do we
    hf = hf_model("RobertaForMaskedLM", FIRST_SHAPE, vocab_size=ours.vocab_size)
    model = ours_from(hf, "RobertaForMaskedLM")
    model.save_pretrained(tmp_path / "m", tokenizer=ours)
    again = transformers.AutoTokenizer.from_pretrained(tmp_path / "m")
    _, back = registry.load(tmp_path / "m")
    for text in TEXTS:
        assert again(text)["input_ids"] == back.encode(text).ids == ours.encode(text).ids
    assert again.model_max_length == model.config.max_input_length


def test_the_pipelines_read_a_roberta_directory(bpe_files, tmp_path):
    from seq2bert.models.roberta.tokenizer import load_tokenizer

    tok = load_tokenizer(bpe_files)
    hf = hf_model("RobertaForMaskedLM", FIRST_SHAPE, vocab_size=tok.vocab_size)
    ours_from(hf, "RobertaForMaskedLM").save_pretrained(tmp_path / "m", tokenizer=tok)
    text = "Who is <mask>?"
    best = seq2bert.fill_mask(text, str(tmp_path / "m"), top_k=3)
    ids = torch.tensor([tok.encode(text).ids])
    with torch.no_grad():
        logits = hf(input_ids=ids).logits[0, ids[0].tolist().index(tok.mask_token_id)]
    assert [r["token_id"] for r in best] == logits.topk(3).indices.tolist()
    vectors = seq2bert.embed(["Hello world", "Who is there?"], str(tmp_path / "m"))
    assert vectors.shape[-1] == hf.config.hidden_size


def test_finetune_trains_a_roberta_classifier_that_transformers_reads(bpe_files, tmp_path):
    """`seq2bert finetune` from a RoBERTa directory: the <s> classification head learns SST-2-shaped data and
    the best checkpoint is a RobertaForSequenceClassification transformers reads with equal logits."""
    import numpy as np

    from seq2bert.models.roberta.tokenizer import load_tokenizer
    from tests.recipes.test_finetune import run, write_sst2

    tok = load_tokenizer(bpe_files)
    torch.manual_seed(0)
    cfg = roberta_base(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=130)  # fmt: skip
    RobertaForMaskedLM(cfg).save_pretrained(tmp_path / "init", tokenizer=tok)
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    assert (
        run("sst2", tmp_path / "sst2", tmp_path / "init", tmp_path / "run", "--set", "train.max_epochs=3")
        == 0
    )
    ours, tok = registry.load(tmp_path / "run" / "best")
    assert type(ours).__name__ == "RobertaForSequenceClassification"
    theirs = transformers.RobertaForSequenceClassification.from_pretrained(tmp_path / "run" / "best").eval()
    enc = tok.encode_batch(
        ["a superb film", "the story was dull and poor"], padding="longest", return_tensors="pt"
    )
    with torch.no_grad():
        expected = theirs(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
        got = ours(enc["input_ids"], enc["attention_mask"]).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    assert expected.argmax(-1).tolist() == [1, 0]
