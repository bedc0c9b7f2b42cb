"""BERT read left to right — the "LTR & No NSP" model of Devlin et al. (2018), Table 5 — against transformers'
BertModel(is_decoder=True) and BertLMHeadModel: random-weight models of odd shapes give equal outputs and
loss (≤ 1e-5, fp32) on right-padded batches; directories go both ways; no position sees a later token;
incremental generation equals the full forward."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError
from seq2bert.models.bert.config import bert_tiny
from seq2bert.models.bert.convert import config_from_hf, config_to_hf, from_hf_state_dict
from seq2bert.models.bert.model import BertLMHeadModel, BertModel
from seq2bert.models.bert.pretrained import build_bert
from seq2bert.models.pretrained import init_task_model
from seq2bert.models.registry import FAMILIES

transformers = pytest.importorskip("transformers")

SHAPES = {
    "H 30, 5 heads, d_ff 20, vocab 101": dict(hidden_size=30, num_hidden_layers=2, num_attention_heads=5,
                                             intermediate_size=20, vocab_size=101),
    "H 24, 3 heads, gelu_new, vocab 97": dict(hidden_size=24, num_hidden_layers=3, num_attention_heads=3,
                                             intermediate_size=40, hidden_act="gelu_new", vocab_size=97),
    "H 16, 2 heads, relu, eps 1e-5": dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=64, hidden_act="relu", layer_norm_eps=1e-5, vocab_size=89),
}  # fmt: skip


def hf_model(architecture, shape):
    cfg = transformers.BertConfig(
        max_position_embeddings=40, initializer_range=0.2, is_decoder=True, **SHAPES[shape]
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
    assert cfg.is_decoder
    model = build_bert(cfg, architecture, pooler=architecture == "BertModel").eval()
    model.load_state_dict(from_hf_state_dict(hf.state_dict(), cfg, architecture))
    return model


def batch(vocab):
    """Three rows of 11, right-padded (lengths 11, 7, 2); labels are the ids, −100 on padding."""
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, vocab, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 2:] = 0
    ids = ids.masked_fill(mask == 0, 0)
    return ids, mask, ids.masked_fill(mask == 0, -100)


def close(a, b, mask=None):
    if mask is not None:  # padded rows: only the real positions are compared
        a, b = a[mask.bool()], b[mask.bool()]
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_lm_head_model_equals_transformers(shape):
    hf = hf_model("BertLMHeadModel", shape)
    ours = ours_from(hf, "BertLMHeadModel")
    ids, mask, labels = batch(hf.config.vocab_size)
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=mask, labels=labels, output_hidden_states=True,
                    output_attentions=True)  # fmt: skip
        out = ours(ids, mask, labels=labels, output_hidden_states=True, output_attentions=True)
    close(out.logits, theirs.logits, mask)
    close(out.loss, theirs.loss)
    for x, y in zip(out.hidden_states, theirs.hidden_states, strict=True):
        close(x, y, mask)
    for x, y in zip(out.attentions, theirs.attentions, strict=True):
        close(x[0], y[0])  # the unpadded row: every weight above the diagonal is 0 in both


@pytest.mark.parametrize("shape", list(SHAPES)[:2])
def test_decoder_base_model_equals_transformers(shape):
    hf = hf_model("BertModel", shape)
    ours = ours_from(hf, "BertModel")
    ids, mask, _ = batch(hf.config.vocab_size)
    types = torch.randint(0, 2, ids.shape, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=mask, token_type_ids=types)
        out = ours(ids, mask, types)
    close(out.last_hidden_state, theirs.last_hidden_state, mask)
    close(out.pooler_output[:2], theirs.pooler_output[:2])


def test_directories_both_ways(tmp_path):
    hf = hf_model("BertLMHeadModel", list(SHAPES)[0])
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours) is BertLMHeadModel and ours.config.is_decoder
    ours.save_pretrained(tmp_path / "ours")
    again = transformers.BertLMHeadModel.from_pretrained(tmp_path / "ours").eval()
    assert again.config.is_decoder and again.config.architectures == ["BertLMHeadModel"]
    ids, mask, labels = batch(hf.config.vocab_size)
    with torch.no_grad():
        a = hf(input_ids=ids, attention_mask=mask, labels=labels)
        b = again(input_ids=ids, attention_mask=mask, labels=labels)
        c = ours(ids, mask, labels=labels)
    close(b.logits, a.logits, mask)  # eager there, sdpa here
    close(c.logits, a.logits, mask)
    close(b.loss, a.loss)
    assert "pooler.dense.weight" not in " ".join(ours.state_dict())
    assert ours.mlm.decoder.weight is ours.bert.embeddings.word_embeddings.weight  # tied


def test_no_position_sees_a_later_token():
    torch.manual_seed(0)
    model = BertLMHeadModel(bert_tiny(vocab_size=50, is_decoder=True)).eval()
    ids = torch.randint(1, 50, (2, 9))
    changed = ids.clone()
    changed[:, 6] = (ids[:, 6] + 1) % 50
    with torch.no_grad():
        a, b = model(ids).logits, model(changed).logits
    torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=0)
    assert not torch.allclose(a[:, 6:], b[:, 6:])
    encoder = BertModel(bert_tiny(vocab_size=50)).eval()  # is_decoder false: every position sees every token
    with torch.no_grad():
        x, y = encoder(ids).last_hidden_state, encoder(changed).last_hidden_state
    assert not torch.allclose(x[:, :6], y[:, :6])


def test_greedy_generation_with_the_cache_equals_the_full_forward():
    torch.manual_seed(0)
    model = BertLMHeadModel(bert_tiny(vocab_size=60, is_decoder=True, eos_token_id=59)).eval()
    prompt = torch.tensor([[3, 14, 15, 9]])
    out = model.generate(prompt, max_new_tokens=6)
    ids = prompt
    with torch.no_grad():
        for _ in range(6):
            nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
            if int(nxt) == 59:
                break
    assert out[0, : ids.size(1)].tolist() == ids[0].tolist()


def test_config_conversion_reads_is_decoder_and_refuses_cross_attention():
    hf = transformers.BertConfig(vocab_size=50, hidden_size=16, num_attention_heads=2, is_decoder=True)
    hf = hf.to_dict()
    cfg = config_from_hf(hf)
    assert cfg.is_decoder and config_to_hf(cfg, "BertLMHeadModel")["is_decoder"] is True
    with pytest.raises(CheckpointError, match="add_cross_attention"):
        config_from_hf({**hf, "add_cross_attention": True})
    with pytest.raises(CheckpointError, match="absolute"):
        config_from_hf({**hf, "position_embedding_type": "relative_key"})


@pytest.mark.parametrize("head", ["sequence", "tokens"])
def test_a_task_model_reads_a_decoder_directory_bidirectionally(head, tmp_path, caplog):
    torch.manual_seed(0)
    lm = BertLMHeadModel(bert_tiny(vocab_size=50, is_decoder=True))
    lm.save_pretrained(tmp_path / "lm")
    family = FAMILIES["bert"]
    with caplog.at_level("INFO"):
        model, _, new = init_task_model(family, tmp_path / "lm", family.architecture_for(head),
                                        id2label={0: "a", 1: "b"})  # fmt: skip
    assert not model.config.is_decoder and not model.bert.causal
    assert "is_decoder" in caplog.text
    assert not any(k.startswith(("bert.embeddings", "bert.layers")) for k in new)  # the encoder is kept
    kept, pretrained = model.bert.layers[0].self_attn.qkv.weight, lm.bert.layers[0].self_attn.qkv.weight
    torch.testing.assert_close(kept, pretrained)
