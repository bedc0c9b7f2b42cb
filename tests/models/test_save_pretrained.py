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

# small sizes, set where a family's config has the field
SMALL = dict(
    vocab_size=40,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    embedding_size=8,
    max_position_embeddings=32,
    n_embd=16,
    n_layer=1,
    n_head=2,
    n_positions=32,
    dim=16,
    n_layers=1,
    n_heads=2,
    hidden_dim=32,
    d_model=16,
    d_k=8,
    d_v=8,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    src_vocab_size=40,
    tgt_vocab_size=40,
    embedding_dim=8,
    num_layers=1,
    maxout_size=8,
    attention_size=8,
    cell_size=32,
    projection_dim=16,
    filters=[[1, 4], [2, 8]],
    char_embedding_dim=4,
    num_highway=1,
    intra_bottleneck_size=8,
)
OWN = {"rnn-lm": dict(embedding_dim=16)}  # its output layer is its embedding matrix


def small_config(family):
    names = {f.name for f in dataclasses.fields(family.config_class)}
    sizes = {**SMALL, **OWN.get(family.model_type, {})}
    return dataclasses.replace(family.config_class(), **{k: v for k, v in sizes.items() if k in names})


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
