"""BERT's "+ BiLSTM" (Table 5) as an option of every encoder: the BiLSTM against torch's LSTM run on each
row's real tokens alone, padding on either side that changes nothing, and checkpoints that keep it (with
SesameBERT's options beside it) while transformers still reads the family's weights."""

import json

import pytest
import torch

from seq2bert.errors import ConfigError
from seq2bert.models import encoder_options, lstm_top, registry, sesame
from seq2bert.models.lstm_top import BiLSTMSettings
from seq2bert.models.pretrained import init_task_model, load, save_hf
from seq2bert.models.sesame import SesameSettings
from seq2bert.nn.bilstm_top import BiLSTMTop
from tests.models.hf_parity import CLOSE
from tests.models.test_sesame import ENCODERS, assert_each_row_as_alone, inputs_of, task_model

ON = BiLSTMSettings(enabled=True)


@pytest.mark.parametrize("left", [False, True])
def test_each_real_span_is_read_as_torchs_bilstm_reads_it_alone(left):
    torch.manual_seed(0)
    top = BiLSTMTop(8, layers=2).eval()
    x = torch.randn(3, 6, 8)
    lengths = [6, 4, 1]
    valid = torch.zeros(3, 6, dtype=torch.bool)
    for b, n in enumerate(lengths):
        valid[b, (6 - n if left else 0) : (6 if left else n)] = True
    y = top(x, valid)
    for b in range(3):
        real = x[b][valid[b]][None]  # (1, n, 8)
        alone, _ = top.lstm.rnn(real)  # torch's nn.LSTM, bidirectional: [→h_t ; ←h_t]
        torch.testing.assert_close(y[b][valid[b]], alone[0])
        torch.testing.assert_close(y[b][~valid[b]], x[b][~valid[b]])  # padding kept as it was
    torch.testing.assert_close(top(x), top.lstm.rnn(x)[0])  # no mask: every position is real


@pytest.mark.parametrize("model_type", ENCODERS)
def test_each_encoder_takes_it_and_a_padded_sentence_gets_the_logits_it_gets_alone(model_type):
    model = encoder_options.attach(task_model(model_type), {"bilstm_top": ON})
    assert isinstance(sesame.encoder_stack(model, "bilstm_top").top, BiLSTMTop)
    left = model_type == "xlnet"
    batch = inputs_of(model, left)
    with torch.no_grad():
        logits = model(**batch).logits
        assert not torch.allclose(logits, task_model(model_type)(**batch).logits)  # it is on the path
        assert_each_row_as_alone(model, batch, logits)


def test_a_decoder_is_one_clear_error():
    with pytest.raises(ConfigError, match="bilstm_top: an option of an encoder of one bidirectional"):
        lstm_top.attach(task_model("gpt2"), ON)
    with pytest.raises(ConfigError, match="bilstm_top.layers: must be >= 1"):
        BiLSTMSettings(enabled=True, layers=0)


def test_a_checkpoint_keeps_both_options_and_a_task_goes_on_training_them(tmp_path):
    transformers = pytest.importorskip("transformers")
    both = {"bilstm_top": ON, "sesame": SesameSettings(squeeze_excitation=True)}
    model = encoder_options.attach(task_model("bert"), both)
    save_hf(registry.get("bert"), model, tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["bilstm_top"] == {"enabled": True, "layers": 1} and config["sesame"]["squeeze_excitation"]
    assert {p.name for p in (tmp_path / "ckpt").glob("*.safetensors")} >= {
        "model.safetensors",
        "sesame.safetensors",
        "bilstm_top.safetensors",
    }
    batch = inputs_of(model)
    loaded, _ = load(tmp_path / "ckpt")
    assert encoder_options.settings_of(loaded) == both
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, model(**batch).logits, **CLOSE)
    again, _, new = init_task_model(registry.get("bert"), tmp_path / "ckpt", "BertForSequenceClassification")
    assert not any("top" in n or "excitation" in n for n in new)  # recorded, trained: they go on
    with torch.no_grad():
        torch.testing.assert_close(again.eval()(**batch).logits, model(**batch).logits, **CLOSE)
    theirs = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "ckpt").eval()
    plain = task_model("bert")
    plain.load_state_dict(encoder_options.split_state(model.state_dict())[0])
    with torch.no_grad():
        torch.testing.assert_close(theirs(**batch).logits, plain(**batch).logits, **CLOSE)
