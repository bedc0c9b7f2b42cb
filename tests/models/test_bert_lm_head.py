"""BERT read left to right — the "LTR & No NSP" model of Devlin et al. (2018), Table 5 — against transformers'
BertModel(is_decoder=True) and BertLMHeadModel: random-weight models of odd shapes give equal outputs and
loss (≤ 1e-5, fp32) on right-padded batches; directories go both ways; no position sees a later token;
incremental generation equals the full forward."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError
from seq2bert.models.bert.config import bert_tiny
from seq2bert.models.bert.convert import config_from_hf, config_to_hf
from seq2bert.models.bert.model import BertLMHeadModel, BertModel
from seq2bert.models.pretrained import init_task_model
from seq2bert.models.registry import FAMILIES
from tests.models.test_bert import batch, hf_model, ours_from

transformers = pytest.importorskip("transformers")

SHAPES = {  # test_bert.py's shapes made odder: (its shape, vocabulary size, transformers' fields changed)
    "H 30, 5 heads, d_ff 20, vocab 101": ("2 layers, H 24, 3 heads", 101, dict(hidden_size=30,
                                          num_attention_heads=5, intermediate_size=20)),
    "H 24, 3 layers, gelu_new, vocab 97": ("2 layers, H 24, 3 heads", 97, dict(num_hidden_layers=3,
                                           hidden_act="gelu_new")),
    "H 16, 1 head, relu, eps 1e-5, vocab 89": ("3 layers, H 16, 1 head, relu, eps 1e-5", 89, {}),
}  # fmt: skip


def decoder(architecture, shape):
    """transformers' ``architecture`` with is_decoder, random weights (biases and LayerNorms too), eval mode."""
    base, vocab, fields = SHAPES[shape]
    return hf_model(architecture, base, vocab, is_decoder=True, **fields)


def close(a, b, mask=None):
    if mask is not None:  # padded rows: only the real positions are compared
        a, b = a[mask.bool()], b[mask.bool()]
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def lm_batch(vocab):
    """test_bert.py's three rows of 11, right-padded (lengths 11, 7, 2); labels: the ids, −100 on padding."""
    ids, mask, types, _ = batch(vocab)
    return ids, mask, types, ids.masked_fill(mask == 0, -100)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_lm_head_model_equals_transformers(shape):
    hf = decoder("BertLMHeadModel", shape)
    ours = ours_from(hf, "BertLMHeadModel")
    assert ours.config.is_decoder and ours.bert.pooler is None
    ids, mask, _, labels = lm_batch(hf.config.vocab_size)
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
    hf = decoder("BertModel", shape)
    ours = ours_from(hf, "BertModel")
    ids, mask, types, _ = lm_batch(hf.config.vocab_size)
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=mask, token_type_ids=types)
        out = ours(ids, mask, types)
    close(out.last_hidden_state, theirs.last_hidden_state, mask)
    close(out.pooler_output[:2], theirs.pooler_output[:2])


def test_directories_both_ways(tmp_path):
    hf = decoder("BertLMHeadModel", list(SHAPES)[0])
    hf.save_pretrained(tmp_path / "theirs")
    ours = seq2bert.from_pretrained(tmp_path / "theirs")
    assert type(ours) is BertLMHeadModel and ours.config.is_decoder
    ours.save_pretrained(tmp_path / "ours")
    again = transformers.BertLMHeadModel.from_pretrained(tmp_path / "ours").eval()
    assert again.config.is_decoder and again.config.architectures == ["BertLMHeadModel"]
    ids, mask, _, labels = lm_batch(hf.config.vocab_size)
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
