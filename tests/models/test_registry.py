"""The registry: one family per model_type, found from a directory, a config or a model; clear one-line
errors for what it does not know."""

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError
from seq2bert.models import registry
from seq2bert.models.bert.config import bert_tiny
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.family import Family
from seq2bert.models.transformer.config import TransformerConfig


def test_every_family_is_keyed_by_its_model_type_and_its_heads_name_its_classes():
    for model_type, family in registry.FAMILIES.items():
        assert family.model_type == model_type
        assert family.config_class.__dataclass_fields__["model_type"].default in (model_type, "transformer")
        for head, architecture in family.heads.items():
            assert family.architecture_for(head) == architecture and architecture in family.architectures
    bert = registry.get("bert")
    assert bert.architecture_for("sequence") == "BertForSequenceClassification"
    with pytest.raises(KeyError, match="bert has no 'seq2seq' model"):
        bert.architecture_for("seq2seq")
    with pytest.raises(CheckpointError, match=r"model_type 'gpt3' is not one of seq2seq, cho, .*bert"):
        registry.get("gpt3")


def test_a_config_or_model_finds_its_family_and_a_model_its_architecture():
    cfg = bert_tiny(vocab_size=50)
    assert registry.family_of(cfg) is registry.get("bert")
    model = registry.build_model(cfg, "BertForMaskedLM")
    assert registry.family_of(model).architecture_of(model) == "BertForMaskedLM"
    cfg = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, encoder_attention_heads=2,
                            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32)  # fmt: skip
    assert type(registry.build_model(cfg)).__name__ == "Transformer"


def test_directories_load_through_their_family_with_the_head_asked_for(tmp_path):
    torch.manual_seed(0)
    cfg = bert_tiny(vocab_size=50)
    save_bert(registry.build_model(cfg, "BertForPreTraining"), tmp_path / "b")
    assert registry.family_at(tmp_path / "b") is registry.get("bert")
    assert type(seq2bert.from_pretrained(tmp_path / "b")).__name__ == "BertForPreTraining"  # config.json's
    base, _ = registry.load(tmp_path / "b", head="base")
    assert type(base).__name__ == "BertModel"
    with pytest.raises(CheckpointError, match="bert has no 'seq2seq' model"):
        registry.load(tmp_path / "b", head="seq2seq")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text('{"model_type": "t5"}')
    with pytest.raises(CheckpointError, match=r"c/config.json: model_type 't5' is not one of"):
        seq2bert.from_pretrained(tmp_path / "c")
    with pytest.raises(CheckpointError, match="no such checkpoint or run directory"):
        seq2bert.from_pretrained(tmp_path / "missing")


def test_register_refuses_a_taken_model_type(monkeypatch):
    monkeypatch.setattr(registry, "FAMILIES", dict(registry.FAMILIES))
    clash = Family("bert", object, {"X": torch.nn.Linear})
    with pytest.raises(ValueError, match="'bert' is already registered"):
        registry.register(clash)
    with pytest.raises(ValueError, match="heads name unknown architectures"):
        Family("x", object, {"X": torch.nn.Linear}, heads={"base": "Y"})
