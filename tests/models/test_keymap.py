"""Every family's declarative key map (models/keymap.py HeadLayout), tested the ways STYLE.md #5 asks, for
each of its architectures at once: every key of a transformers model of that class is consumed, and nothing
else is made up; our state dict round-trips through theirs. That outputs then match transformers is each
family's own test (tests/models/test_bert.py, test_roberta.py, …: <= 1e-5)."""

import pytest
import torch
import transformers

from seq2bert.models import registry
from seq2bert.models.albert.convert import layout as albert
from seq2bert.models.bert.convert import layout as bert
from seq2bert.models.distilbert.convert import layout as distilbert
from seq2bert.models.electra.convert import layout as electra
from seq2bert.models.gpt.convert import layout as gpt
from seq2bert.models.mobilebert.convert import layout as mobilebert
from seq2bert.models.roberta.convert import layout as roberta
from tests.models.small_configs import small_config

LAYOUTS = {
    "bert": bert,
    "roberta": roberta,
    "albert": albert,
    "electra": electra,
    "distilbert": distilbert,
    "mobilebert": mobilebert,
    "openai-gpt": gpt,
    "gpt2": gpt,
}
CASES = [
    pytest.param(model_type, architecture, id=f"{model_type}-{architecture}")
    for model_type in LAYOUTS
    for architecture in registry.get(model_type).architectures
]


@pytest.mark.parametrize("model_type, architecture", CASES)
def test_our_state_dict_round_trips_through_theirs(model_type, architecture):
    torch.manual_seed(0)
    family = registry.get(model_type)
    cfg = small_config(family)
    ours = family.make(cfg, architecture).state_dict()
    layout = LAYOUTS[model_type](cfg)
    back = layout.from_hf(layout.to_hf(ours, architecture), architecture)  # every key consumed, or an error
    assert back.keys() == ours.keys()
    for key in ours:
        assert torch.equal(back[key], ours[key]), key


@pytest.mark.parametrize("model_type, architecture", CASES)
def test_every_key_of_the_transformers_class_is_consumed_and_written_back(model_type, architecture):
    hf_class = getattr(transformers, architecture, None)
    if hf_class is None:
        pytest.skip(f"{architecture} is seq2bert's own (no transformers class)")
    torch.manual_seed(0)
    family = registry.get(model_type)
    cfg = small_config(family)
    hf_config = transformers.AutoConfig.for_model(**family.write_config(cfg, architecture))
    theirs = hf_class(hf_config).state_dict()
    ours = family.read_state(theirs, cfg, architecture, "transformers", False)  # an unused key: an error
    model = family.make(cfg, architecture, theirs)
    assert ours.keys() == model.state_dict().keys()
    written = family.write_state(ours, cfg, architecture)
    buffers = {k for k in theirs if k.endswith(LAYOUTS[model_type](cfg).buffers)}
    assert written.keys() == theirs.keys() - buffers
    for key in written:
        assert torch.equal(written[key], theirs[key]), key
