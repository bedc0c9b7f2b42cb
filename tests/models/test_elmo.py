"""ELMo's biLM (models/elmo/): shapes and masking on padded batches, the two directions and the token layer,
the pretraining loss (Eq. 1) and its state across segments, checkpoints through the registry, and the
published layout (bilm-tf's options.json + HDF5) checked against TensorFlow's conventions computed in NumPy."""

import json

import numpy as np
import pytest
import torch

from seq2bert.data.characters import batch_char_ids, word_char_ids
from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.models import registry
from seq2bert.models.elmo.config import ELMoConfig
from seq2bert.models.elmo.model import ELMoForPreTraining, ELMoModel
from seq2bert.nn.rnn import reverse_padded

SMALL = dict(
    char_embedding_dim=4, filters=[(1, 4), (2, 4), (3, 8)], projection_dim=6, cell_size=10, dropout=0.0
)


def tiny(cls=ELMoModel, **kw):
    torch.manual_seed(0)
    return cls(ELMoConfig(**{**SMALL, **kw})).eval()


def test_layers_of_a_padded_batch_are_those_of_each_sentence_alone():
    model = tiny()
    sentences = [["the", "river", "bank", "is", "wet"], ["a", "bank"]]
    chars, mask = batch_char_ids(sentences)
    out = model(chars, mask)
    assert len(out.hidden_states) == 3 and out.last_hidden_state.shape == (2, 5, 12)  # L + 1 layers, 2P
    for layer in out.hidden_states:
        assert torch.equal(layer[1, 2:], torch.zeros(3, 12))  # padding
    alone = model(*batch_char_ids(sentences[1:]))
    for a, b in zip(out.hidden_states, alone.hidden_states, strict=True):
        torch.testing.assert_close(a[1, :2], b[0], rtol=0, atol=1e-6)
    # the token layer is [x; x], context-free: "bank" has one vector whatever surrounds it
    x0 = out.hidden_states[0]
    torch.testing.assert_close(x0[..., :6], x0[..., 6:])
    torch.testing.assert_close(x0[0, 2], x0[1, 1], rtol=0, atol=1e-6)
    assert not torch.allclose(out.last_hidden_state[0, 2], out.last_hidden_state[1, 1], atol=1e-4)


def test_the_two_directions_by_hand():
    """Layer j's forward half reads <S> w_1 … w_k, its backward half w_k … w_n </S> from the right; layer 2
    adds its input (the residual connection)."""
    model = tiny()
    words = ["he", "sat", "on", "the", "bank"]
    chars, mask = batch_char_ids([words])
    out = model(chars, mask)
    ids = torch.cat([model.sentence_start[None], chars[0], model.sentence_end[None]])[None]  # (1, 7, W)
    x = model.token_encoder(ids)
    h1, _ = model.forward_lstm[0](x)
    h2, _ = model.forward_lstm[1](h1)
    torch.testing.assert_close(out.hidden_states[2][0, :, :6], (h2 + h1)[0, 1:6], rtol=0, atol=1e-6)
    b1, _ = model.backward_lstm[0](x.flip(1))
    torch.testing.assert_close(out.hidden_states[1][0, :, 6:], b1.flip(1)[0, 1:6], rtol=0, atol=1e-6)
    n = torch.tensor([7])
    assert torch.equal(reverse_padded(x, n), x.flip(1))


def test_the_pretraining_loss_and_the_state_across_segments():
    model = tiny(ELMoForPreTraining, vocab_size=20, softmax_samples=0)
    torch.manual_seed(1)
    chars = torch.from_numpy(np.stack([word_char_ids(w) for w in "abcdefghijkl"])).long()
    f, b = chars[torch.randint(0, 12, (2, 8))], chars[torch.randint(0, 12, (2, 8))]
    y, yb = torch.randint(0, 20, (2, 8)), torch.randint(0, 20, (2, 8))
    out = model(f, b, y, yb)
    ce = torch.nn.functional.cross_entropy
    torch.testing.assert_close(out.forward_loss, ce(out.forward_logits.flatten(0, 1), y.flatten()))
    torch.testing.assert_close(out.loss, (out.forward_loss + out.backward_loss) / 2)
    first = model(f[:, :3], b[:, :3], y[:, :3], yb[:, :3])
    second = model(f[:, 3:], b[:, 3:], y[:, 3:], yb[:, 3:], state=first.state)
    torch.testing.assert_close(torch.cat([first.forward_logits, second.forward_logits], 1), out.forward_logits,
                               rtol=0, atol=1e-5)  # fmt: skip
    torch.testing.assert_close(torch.cat([first.backward_logits, second.backward_logits], 1), out.backward_logits,
                               rtol=0, atol=1e-5)  # fmt: skip
    assert out.state[0].shape == (4, 2, 6) and out.state[1].shape == (4, 2, 10)  # 2L: forward, backward
    # training: a sampled softmax, gradients reach the shared token encoder and softmax from both LMs
    sampled = tiny(ELMoForPreTraining, vocab_size=20, softmax_samples=5).train()
    loss = sampled(f, b, y, yb).loss
    loss.backward()
    assert torch.isfinite(loss) and sampled.softmax.weight.grad.abs().sum() > 0
    assert all(p.grad is not None for p in sampled.parameters() if p.requires_grad)


def test_checkpoints_load_through_the_registry(tmp_path):
    from seq2bert.data.tokenization import Tokenizer

    model = tiny(ELMoForPreTraining, vocab_size=12)
    tok = Tokenizer.train(["the river bank"], kind="word", vocab_size=12, min_frequency=1)
    model.save_pretrained(tmp_path / "elmo", tokenizer=tok)
    loaded, loaded_tok = registry.load(tmp_path / "elmo")
    assert type(loaded) is ELMoForPreTraining and loaded_tok.vocab_size == tok.vocab_size
    base, _ = registry.load(tmp_path / "elmo", head="base")
    assert type(base) is ELMoModel
    chars, mask = batch_char_ids([["the", "bank"]])
    torch.testing.assert_close(base(chars, mask).last_hidden_state, model.elmo(chars, mask).last_hidden_state)
    with pytest.raises(ConfigError, match="projection_dim"):
        ELMoConfig(projection_dim=16, cell_size=16)


# --- the published layout, written with random arrays
def write_bilm_tf(directory, rng, cell_clip=0.5, proj_clip=0.3):
    h5py = pytest.importorskip("h5py")
    filters, d, P, C, F = [[1, 4], [2, 3]], 3, 4, 6, 7
    options = {"char_cnn": {"activation": "relu", "embedding": {"dim": d}, "filters": filters, "n_highway": 1,
                            "max_characters_per_token": 50, "n_characters": 262},
               "lstm": {"dim": C, "projection_dim": P, "n_layers": 2, "cell_clip": cell_clip, "proj_clip": proj_clip,
                        "use_skip_connections": True}}  # fmt: skip
    (directory / "options.json").write_text(json.dumps(options))
    a = {"char_embed": rng.normal(size=(261, d)), "CNN_proj/W_proj": rng.normal(size=(F, P)),
         "CNN_proj/b_proj": rng.normal(size=P)}  # fmt: skip
    for i, (w, n) in enumerate(filters):
        a[f"CNN/W_cnn_{i}"], a[f"CNN/b_cnn_{i}"] = rng.normal(size=(1, w, d, n)), rng.normal(size=n)
    for name in ("W_carry", "W_transform", "b_carry", "b_transform"):
        a[f"CNN_high_0/{name}"] = rng.normal(size=(F, F) if name[0] == "W" else F)
    for direction in (0, 1):
        for j in (0, 1):
            cell = f"RNN_{direction}/RNN/MultiRNNCell/Cell{j}/LSTMCell"
            a[f"{cell}/W_0"], a[f"{cell}/B"] = rng.normal(size=(2 * P, 4 * C)), rng.normal(size=4 * C)
            a[f"{cell}/W_P_0"] = rng.normal(size=(C, P))
    with h5py.File(directory / "weights.hdf5", "w") as f:
        for name, array in a.items():
            f.create_dataset(name, data=array.astype(np.float32))
    return {k: v.astype(np.float32).astype(np.float64) for k, v in a.items()}


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_the_published_layout_equals_tensorflows_computation(tmp_path):
    from seq2bert.models.elmo.convert import load_bilm_tf

    a = write_bilm_tf(tmp_path, np.random.default_rng(0))
    model = load_bilm_tf(tmp_path / "options.json", tmp_path / "weights.hdf5")
    assert model.config.cell_clip == 0.5 and model.config.residual and model.config.num_characters == 262
    # the character CNN, as bilm-tf computes it on its unshifted ids (ours are + 1)
    word = "bank"
    theirs = word_char_ids(word) - 1  # 258 (begin word), bytes, 259 (end word), 260 (padding)…
    e = a["char_embed"][theirs]  # (50, d)
    pooled = []
    for i in range(2):
        W, b = a[f"CNN/W_cnn_{i}"][0], a[f"CNN/b_cnn_{i}"]  # (w, d, n)
        w = W.shape[0]
        conv = np.stack([np.einsum("kc,kcn->n", e[t : t + w], W) + b for t in range(50 - w + 1)])
        pooled.append(np.maximum(conv.max(0), 0))
    y = np.concatenate(pooled)
    carry = sigmoid(y @ a["CNN_high_0/W_carry"] + a["CNN_high_0/b_carry"])
    y = carry * np.maximum(y @ a["CNN_high_0/W_transform"] + a["CNN_high_0/b_transform"], 0) + (1 - carry) * y
    x = y @ a["CNN_proj/W_proj"] + a["CNN_proj/b_proj"]  # (P,)
    ours = model.token_encoder(torch.from_numpy(word_char_ids(word))[None, None])[0, 0]
    np.testing.assert_allclose(ours.detach().numpy(), x, rtol=0, atol=1e-4)

    # two steps of the backward LM's first layer: TensorFlow's LSTMCell (gates i, j, f, o; forget bias 1.0
    # added at run time; the cell clipped, then projected and clipped)
    def tf_step(inputs, m, c, cell="RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell"):
        i, j, f, o = np.split(np.concatenate([inputs, m]) @ a[f"{cell}/W_0"] + a[f"{cell}/B"], 4)
        c = np.clip(sigmoid(f + 1.0) * c + sigmoid(i) * np.tanh(j), -0.5, 0.5)
        return np.clip((sigmoid(o) * np.tanh(c)) @ a[f"{cell}/W_P_0"], -0.3, 0.3), c

    x2 = np.random.default_rng(1).normal(size=4)
    m, c = tf_step(x, np.zeros(4), np.zeros(6))
    m, c = tf_step(x2, m, c)
    inputs = torch.tensor(np.stack([x, x2]), dtype=torch.float32)[None]  # (1, 2, P)
    out, (r, c_ours) = model.backward_lstm[0](inputs)
    np.testing.assert_allclose(out[0, 1].detach().numpy(), m, rtol=0, atol=1e-5)
    np.testing.assert_allclose(c_ours[0].detach().numpy(), c, rtol=0, atol=1e-5)
    chars, mask = batch_char_ids([["the", "bank"], ["a"]])
    assert model(chars, mask).last_hidden_state.shape == (2, 2, 8)


def test_a_bad_published_file_is_one_clear_error(tmp_path):
    h5py = pytest.importorskip("h5py")
    from seq2bert.models.elmo.convert import load_bilm_tf

    write_bilm_tf(tmp_path, np.random.default_rng(0))
    with h5py.File(tmp_path / "weights.hdf5", "a") as f:
        del f["CNN_high_0/W_carry"]
    with pytest.raises(CheckpointError, match=r"weights.hdf5: no dataset CNN_high_0/W_carry"):
        load_bilm_tf(tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "options.json").write_text('{"lstm": {}}')
    with pytest.raises(CheckpointError, match=r"options.json: not a bilm-tf options file"):
        load_bilm_tf(tmp_path / "options.json", tmp_path / "weights.hdf5")


def test_convert_elmo_writes_a_checkpoint_every_command_reads(tmp_path, capsys):
    from seq2bert.cli import main
    from seq2bert.models.elmo.convert import load_bilm_tf
    from seq2bert.pipelines import embed

    write_bilm_tf(tmp_path, np.random.default_rng(0))
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\nbank\n")
    out = tmp_path / "converted"
    argv = ["convert-elmo", str(tmp_path / "options.json"), str(tmp_path / "weights.hdf5"), "--out", str(out)]
    assert main([*argv, "--vocab", str(tmp_path / "vocab.txt")]) == 0
    assert "2 layers of 6 cells projected to 4" in capsys.readouterr().out
    model, tok = registry.load(out)
    assert type(model) is ELMoModel and tok.token_to_id("bank") is not None
    direct = load_bilm_tf(tmp_path / "options.json", tmp_path / "weights.hdf5")
    chars, mask = batch_char_ids([["the", "river", "bank"]])
    torch.testing.assert_close(model(chars, mask).last_hidden_state, direct(chars, mask).last_hidden_state)
    vectors = embed(["the river bank", "the bank"], model=out)
    assert vectors.shape == (2, 8) and not torch.allclose(
        torch.as_tensor(vectors[0]), torch.as_tensor(vectors[1])
    )
    assert main(["convert-elmo", str(tmp_path / "options.json"), str(tmp_path / "nope.hdf5"), "--out",
                 str(tmp_path / "x")]) == 2  # fmt: skip
    assert "nope.hdf5: no such file" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_convert_elmo_without_a_vocabulary_keeps_the_special_tokens_alone(tmp_path, capsys):
    """The README's `seq2bert convert-elmo elmo_options.json elmo_weights.hdf5 --out models/elmo-small`, no
    --vocab: the biLM reads every word by its spelling, so the special tokens alone (at the ids a trained word
    vocabulary gives them) make its tokenizer, and embed reads the checkpoint."""
    from seq2bert.cli import main
    from seq2bert.data.special_tokens import SPECIAL_TOKENS
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.pipelines import embed

    write_bilm_tf(tmp_path, np.random.default_rng(0))
    out = tmp_path / "elmo-small"
    assert main(["convert-elmo", str(tmp_path / "options.json"), str(tmp_path / "weights.hdf5"), "--out",
                 str(out)]) == 0  # fmt: skip
    assert "2 layers of 6 cells projected to 4" in capsys.readouterr().out
    _, tok = registry.load(out)
    trained = Tokenizer.train(["the bank"], kind="word", vocab_size=16, min_frequency=1)
    assert tok.vocab_size == len(SPECIAL_TOKENS)
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == [trained.token_to_id(t) for t in SPECIAL_TOKENS]
    assert tok.encode("the bank").ids == [trained.cls_token_id, trained.unk_token_id, trained.unk_token_id,
                                          trained.sep_token_id]  # fmt: skip
    vectors = embed(["the river bank", "the bank"], model=out)
    assert vectors.shape == (2, 8) and not torch.allclose(
        torch.as_tensor(vectors[0]), torch.as_tensor(vectors[1])
    )
