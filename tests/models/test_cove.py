"""CoVe (models/cove.py): a translation model's encoder, taken out with its weights, gives the states the
translation model computes; the BiLSTM reads its top layer at each word's first sub-word, the words bare (no
special tokens, a pair as one text); the recipe trains on it and its checkpoint serves; what it cannot read
is one line."""

import json

import numpy as np
import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.models import registry
from seq2bert.models.attention.bahdanau import RNNSearch
from seq2bert.models.attention.config import BahdanauConfig, LuongConfig
from seq2bert.models.attention.luong import LuongNMT
from seq2bert.models.bilstm.config import BiLSTMConfig, FeaturesConfig
from seq2bert.models.bilstm.model import BiLSTMForSequenceClassification
from seq2bert.models.cove import from_translation
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.models.transformer.model import Transformer
from seq2bert.recipes.scratch import features_encoder
from tests.models.test_bilstm_features import inputs, lstm_input
from tests.recipes.test_finetune_scratch import SMALL, write_sst2

PAIRS = [
    ("the river bank is wet", "das flussufer ist nass"),
    ("a film about a bank", "ein film über eine bank"),
    ("the quokka smiles", "das quokka lächelt"),
]
VOCAB = ["the river bank is wet", "a bank"]


def translation_tokenizer():
    texts = [s for pair in PAIRS for s in pair] * 3
    return Tokenizer.train(texts, kind="bpe", vocab_size=60, min_frequency=1, lowercase=True)


def translation_model(kind: str, tok: Tokenizer, **overrides):
    torch.manual_seed(0)
    V = tok.vocab_size
    shape = dict(
        src_vocab_size=V, tgt_vocab_size=V, embedding_dim=6, hidden_size=5, num_layers=2, dropout=0.3
    )
    if kind == "bahdanau":
        return RNNSearch(BahdanauConfig(**shape, attention_size=4, maxout_size=4, **overrides)).eval()
    if kind == "luong":
        return LuongNMT(LuongConfig(**shape, **overrides)).eval()
    return Transformer(
        TransformerConfig(
            src_vocab_size=V,
            tgt_vocab_size=V,
            d_model=8,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=8,
            decoder_ffn_dim=8,
        )
    ).eval()


@pytest.fixture(scope="module")
def mt_dir(tmp_path_factory):
    tok = translation_tokenizer()
    path = tmp_path_factory.mktemp("mt") / "bahdanau"
    translation_model("bahdanau", tok).save_pretrained(path, tokenizer=tok)
    return path


def padded(tok, texts):
    ids = tok.ids_batch(texts)
    T = max(map(len, ids))
    rows = torch.tensor([i + [tok.pad_token_id] * (T - len(i)) for i in ids])
    return rows, rows.ne(tok.pad_token_id).long(), [len(i) for i in ids]


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_the_top_layer_is_the_translation_encoders_states(kind):
    tok = translation_tokenizer()
    model = translation_model(kind, tok)
    cove = from_translation(model, "mt")
    assert cove.config.cell == ("gru" if kind == "bahdanau" else "lstm")
    assert cove.config.bidirectional == (kind == "bahdanau") and cove.config.feature_layers == 2
    ids, mask, lengths = padded(tok, [s for s, _ in PAIRS])
    out = cove(ids, mask)
    state = model.encode(ids, mask)
    theirs = state.annotations if kind == "bahdanau" else state.memory  # h_j = [h→_j; h←_j], or h̄_s
    assert len(out.hidden_states) == 2 and out.last_hidden_state.shape == theirs.shape
    for b, n in enumerate(lengths):
        torch.testing.assert_close(out.last_hidden_state[b, :n], theirs[b, :n], rtol=0, atol=1e-6)
        assert out.last_hidden_state[b, n:].abs().sum() == 0  # zeros at padding
    # the first layer: the embeddings read by the encoder's layer 0 alone
    first = torch.nn.GRU if kind == "bahdanau" else torch.nn.LSTM
    layer0 = first(6, 5, batch_first=True, bidirectional=kind == "bahdanau")
    layer0.load_state_dict({k: v for k, v in model.encoder.rnn.state_dict().items() if "_l0" in k})
    alone, _ = layer0(model.src_embed(ids[:1, : lengths[0]]))
    torch.testing.assert_close(out.hidden_states[0][:1, : lengths[0]], alone, rtol=0, atol=1e-6)


def test_a_reversed_source_and_a_transformer_are_refused():
    tok = translation_tokenizer()
    with pytest.raises(ConfigError, match="reads its sources reversed; CoVe reads words in order"):
        from_translation(translation_model("luong", tok, reverse_source=True), "mt")
    with pytest.raises(ConfigError, match="is a transformer translation model; CoVe takes the recurrent"):
        from_translation(translation_model("transformer", tok), "mt")


def task_model(mt_dir, layers="last"):
    encoder, encoder_tok = features_encoder(str(mt_dir), "bilstm")
    family = registry.family_of(encoder)
    feats = FeaturesConfig(
        path=str(mt_dir), encoder=family.write_config(encoder.config, "CoVeModel"), layers=layers
    )
    tok = Tokenizer.train(VOCAB, kind="word", min_frequency=1)
    torch.manual_seed(0)
    model = BiLSTMForSequenceClassification(
        BiLSTMConfig(vocab_size=tok.vocab_size, embedding_dim=4, hidden_size=5, features=feats)
    )
    words = model.bilstm.features
    words.encoder.load_state_dict(encoder.state_dict())
    words.tokenizer = encoder_tok
    return model.eval(), tok, encoder


def test_the_bilstm_reads_the_top_layer_at_each_words_first_sub_word_and_a_pair_as_one_text(mt_dir):
    model, tok, cove = task_model(mt_dir)
    mt_tok = model.bilstm.features.tokenizer
    texts = ["The quokka smiles", ("the river", "a bank")]
    words = [["the", "quokka", "smiles"], ["the", "river", "a", "bank"]]
    batch, aligned = inputs(model, tok, texts)  # one batch of both: the shorter row padded
    e = lstm_input(model, batch)
    for b, row in enumerate(words):
        pieces = mt_tok.encode_words([row], add_special_tokens=False)[0]
        assert pieces.ids == sum(mt_tok.ids_batch(row), [])  # bare sub-words: no special token
        top = cove(torch.tensor([pieces.ids])).last_hidden_state[0]  # the row alone
        index = aligned[b][1]
        for n in range(len(row)):  # BiLSTM position of word n → CoVe at the word's first piece
            torch.testing.assert_close(e[b, index.index(n), 4:], top[pieces.word_ids.index(n)])
        assert e[b, 0, 4:].abs().max() == 0  # [CLS] stands for no word
    # a text without a word: no sub-word for the encoder, zeros for its [CLS] and [SEP]
    empty, _ = inputs(model, tok, [""])
    assert lstm_input(model, empty)[0, :, 4:].abs().max() == 0


def finetune_on(features, tmp_path, *extra) -> int:
    """`seq2bert finetune --task sst2 --model bilstm --features FEATURES` on a small SST-2 of its own."""
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    data = ["--data", str(tmp_path / "sst2"), "--out", str(tmp_path / "run")]
    return main(
        ["finetune", "--task", "sst2", "--model", "bilstm", "--features", str(features), *data, *extra]
    )


def test_the_recipe_trains_on_cove_and_its_checkpoint_serves(mt_dir, tmp_path):
    assert finetune_on(mt_dir, tmp_path, "--set", "features.layers=mix", *SMALL) == 0
    run = tmp_path / "run"
    results = json.loads((run / "results.json").read_text())
    assert len(results["feature_layer_weights"]["s"]) == 2  # the encoder's two layers
    translation, _ = registry.load(mt_dir)
    theirs = from_translation(translation, "mt").state_dict()
    ours = registry.load(run / "best")[0].bilstm.features.encoder.state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    config = json.loads((run / "best" / "config.json").read_text())
    assert config["features"]["encoder"]["model_type"] == "cove"
    assert config["features"]["encoder"]["translation"] == "bahdanau"
    assert (run / "best" / "features" / "tokenizer.json").is_file()
    served = seq2bert.classify(["a gripping film", "a dull film"], model=str(run / "best"), bf16=False)
    model, tok = registry.load(run / "best")
    probs = model(**inputs(model, tok, ["a gripping film", "a dull film"])[0]).logits.softmax(-1)
    assert [r["score"] for r in served] == pytest.approx(probs.max(-1).values.tolist(), abs=1e-6)


def test_a_transformer_run_is_one_line(tmp_path, capsys):
    tok = translation_tokenizer()
    translation_model("transformer", tok).save_pretrained(tmp_path / "mt", tokenizer=tok)
    code = finetune_on(tmp_path / "mt", tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and "CoVe takes the recurrent encoder of an attention model" in err, err
    assert len(err.strip().splitlines()) == 1
