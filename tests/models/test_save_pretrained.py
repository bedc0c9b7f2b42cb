"""transformers' habit on every model class of every family: ``model.save_pretrained(dir)`` writes the
family's checkpoint, ``Class.from_pretrained(dir)`` reads it back as that class — the same weights and
config — beside ``seq2bert.from_pretrained``."""

import dataclasses

import pytest
import torch

import seq2bert
from seq2bert.errors import CheckpointError
from seq2bert.models import registry
from seq2bert.models.bert.model import BertForMaskedLM, BertModel
from seq2bert.models.pretrained import SavePretrained
from tests.models.small_configs import small_config

CASES = [
    pytest.param(family, name, id=f"{family.model_type}-{name}")
    for family in registry.FAMILIES.values()
    for name in family.architectures
]


@pytest.mark.parametrize("family, architecture", CASES)
def test_every_class_saves_and_reads_itself_back(family, architecture, tmp_path):
    torch.manual_seed(0)
    cls = family.architectures[architecture]
    assert issubclass(cls, SavePretrained)
    model = family.make(small_config(family), architecture)
    model.save_pretrained(tmp_path / "m")
    back = cls.from_pretrained(tmp_path / "m")
    assert type(back) is cls and not back.training
    assert dataclasses.asdict(back.config) == dataclasses.asdict(model.config)
    ours, theirs = model.state_dict(), back.state_dict()
    assert ours.keys() == theirs.keys()
    for key in ours:
        torch.testing.assert_close(theirs[key], ours[key], rtol=0, atol=0, msg=key)


def test_a_head_models_directory_gives_its_bare_model_and_another_familys_is_refused(tmp_path):
    torch.manual_seed(0)
    bert = registry.get("bert")
    mlm = bert.make(small_config(bert), "BertForMaskedLM").eval()
    mlm.save_pretrained(tmp_path / "mlm")
    bare = BertModel.from_pretrained(tmp_path / "mlm")
    ids = torch.tensor([[1, 5, 7, 2]])
    torch.testing.assert_close(bare(ids).last_hidden_state, mlm.bert(ids).last_hidden_state, rtol=0, atol=0)
    assert type(seq2bert.from_pretrained(tmp_path / "mlm")) is BertForMaskedLM
    gpt2 = registry.get("gpt2")
    gpt2.make(small_config(gpt2), "GPT2Model").save_pretrained(tmp_path / "gpt2")
    with pytest.raises(CheckpointError, match="a gpt2 checkpoint, which has no BertModel"):
        BertModel.from_pretrained(tmp_path / "gpt2")
