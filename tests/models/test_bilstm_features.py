"""Feature-based transfer into the BiLSTM (models/bilstm/features.py): the LSTM reads [E x_t; f_t] with f_t the
frozen encoder's mix (ELMo) or last / last-four layers (BERT) at the word's first piece, zeros at [CLS] and
[SEP]; padded rows give their own logits; the encoder stays frozen; an [UNK] word keeps its spelling; the
layers computed once equal those of every step; checkpoints are self-contained and serve the pipelines; and
the recipe trains it end to end, bad settings being one line."""

import json

import numpy as np
import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.data.characters import batch_char_ids
from seq2bert.data.finetuning import aligned_words, collate
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models import registry
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertModel
from seq2bert.models.bilstm.config import BiLSTMConfig, FeaturesConfig
from seq2bert.models.bilstm.model import BiLSTMForSequenceClassification, BiLSTMForTokenClassification
from seq2bert.models.elmo.config import ELMoConfig
from seq2bert.models.elmo.model import ELMoModel
from seq2bert.recipes.scratch import batch_of, cache_word_layers
from tests.recipes.test_finetune import write_conll
from tests.recipes.test_finetune_scratch import PEOPLE, PLACES, SMALL, write_sst2

TEXTS = ["the river bank is wet", "a bank", "the zyzzyva and the quokka"]  # the last two words: [UNK]
VOCAB = ["the river bank is wet", "a bank"]


@pytest.fixture(scope="module")
def elmo_dir(tmp_path_factory):
    torch.manual_seed(0)
    cfg = ELMoConfig(char_embedding_dim=4, filters=[(1, 4), (2, 4), (3, 8)], projection_dim=6, cell_size=10)
    path = tmp_path_factory.mktemp("elmo") / "elmo"
    ELMoModel(cfg).save_pretrained(path, tokenizer=Tokenizer.train(VOCAB, kind="word", min_frequency=1))
    return path


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    torch.manual_seed(0)
    tok = Tokenizer.train(["the river bank is wet", "a quokka and a zyzzyva"] * 3, kind="wordpiece",
                          vocab_size=40, min_frequency=1, lowercase=True)  # fmt: skip
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=8, num_hidden_layers=4, num_attention_heads=2,
                     intermediate_size=16, hidden_dropout_prob=0.5)  # fmt: skip
    path = tmp_path_factory.mktemp("bert") / "bert"
    BertModel(cfg).save_pretrained(path, tokenizer=tok)
    return path


def task_model(path, head=BiLSTMForSequenceClassification, **features):
    """A BiLSTM reading the encoder at ``path`` (weights and tokenizer copied in), and its word tokenizer."""
    encoder, encoder_tok = registry.load(path, head="base")
    family = registry.family_of(encoder)
    feats = FeaturesConfig(path=str(path), encoder=family.write_config(encoder.config, family.base_architecture),
                           **features)  # fmt: skip
    tok = Tokenizer.train(VOCAB, kind="word", min_frequency=1)
    torch.manual_seed(0)
    config = BiLSTMConfig(vocab_size=tok.vocab_size, embedding_dim=4, hidden_size=5, features=feats,
                          id2label={0: "a", 1: "b", 2: "c"})  # fmt: skip
    model = head(config)
    words = model.bilstm.features
    words.encoder.load_state_dict(
        {k: v for k, v in encoder.state_dict().items() if k in words.encoder.state_dict()}
    )
    words.tokenizer = encoder_tok
    return model.eval(), tok


def inputs(model, tok, texts=TEXTS):
    batch = tok.encode_batch(texts, padding="longest", return_tensors="pt")
    aligned = [
        aligned_words(e, [t] if isinstance(t, str) else list(t))
        for e, t in zip(batch.encodings, texts, strict=True)
    ]
    index = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(i) for _, i in aligned], batch_first=True, padding_value=-1
    )
    return {**batch, "word_index": index, **model.feature_inputs([w for w, _ in aligned])}, aligned


def lstm_input(model, batch):
    seen = {}

    def keep(module, args):
        seen["e"] = args[0]

    hook = model.bilstm.lstm.register_forward_pre_hook(keep)
    model(**batch)
    hook.remove()
    return seen["e"]


def test_the_lstm_reads_the_embedding_and_the_elmo_mix_of_each_word(elmo_dir):
    model, tok = task_model(elmo_dir)
    with torch.no_grad():
        model.bilstm.features.mix.weights.copy_(torch.tensor([0.3, -0.5, 1.0]))
        model.bilstm.features.mix.gamma.fill_(1.7)
    batch, aligned = inputs(model, tok)
    e = lstm_input(model, batch)  # (B, T, E + 2P): dropout is off in eval mode
    elmo, _ = registry.load(elmo_dir, head="base")
    s, gamma = model.bilstm.features.mix.s, 1.7
    for b, (words, index) in enumerate(aligned):
        layers = elmo(*batch_char_ids(words)).hidden_states  # the sentence's words alone
        mix = gamma * sum(s_j * h[0] for s_j, h in zip(s, layers, strict=True))  # γ Σ_j s_j h_j
        n = int(batch["attention_mask"][b].sum())  # [CLS] w_1 … w_k [SEP]
        torch.testing.assert_close(e[b, :n, :4], model.bilstm.embeddings(batch["input_ids"][b, :n]))
        assert index[0] == index[n - 1] == -1 and e[b, 0, 4:].abs().max() == 0 == e[b, n - 1, 4:].abs().max()
        torch.testing.assert_close(e[b, 1 : n - 1, 4:], mix, rtol=0, atol=1e-5)  # [CLS] w… [SEP]


def test_an_unk_word_keeps_its_spelling(elmo_dir):
    model, tok = task_model(elmo_dir)
    batch, aligned = inputs(model, tok)
    assert (
        tok.id_to_token(int(batch["input_ids"][2, 2]))
        == tok.id_to_token(int(batch["input_ids"][2, 5]))
        == "[UNK]"
    )
    assert aligned[2][0] == [["the", "zyzzyva", "and", "the", "quokka"]]
    e = lstm_input(model, batch)
    assert torch.equal(e[2, 2, :4], e[2, 5, :4])  # one embedding for both [UNK]s …
    assert (e[2, 2, 4:] - e[2, 5, 4:]).abs().max() > 1e-3  # … but ELMo spells zyzzyva and quokka


@pytest.mark.parametrize("head", [BiLSTMForSequenceClassification, BiLSTMForTokenClassification])
@pytest.mark.parametrize(
    "encoder, layers", [("elmo", "mix"), ("bert", "last"), ("bert", "sum_last_four"), ("bert", "mix")]
)
def test_padded_rows_give_their_own_logits_and_cached_layers_the_same(request, head, encoder, layers):
    model, tok = task_model(
        request.getfixturevalue(f"{encoder}_dir"),
        head,
        layers=layers,
        layer_norm=layers == "mix" and encoder == "bert",
    )
    batch, _ = inputs(model, tok)
    together = model(**batch).logits
    for b, text in enumerate(TEXTS):
        alone = model(**inputs(model, tok, [text])[0]).logits[0]
        n = len(alone) if head is BiLSTMForTokenClassification else None
        torch.testing.assert_close(together[b, :n] if n else together[b], alone, rtol=0, atol=1e-5)
    # the recipe's features, computed once (cache) or in every step: equal logits
    features = [{"input_ids": e.ids, "token_type_ids": e.type_ids, "words": w, "word_index": i}
                for e, (w, i) in zip(tok.encode_batch(TEXTS).encodings, inputs(model, tok)[1], strict=True)]  # fmt: skip
    every_step = model(**batch_of(model, features, 0)).logits
    cache_word_layers(model, features, batch_size=2)
    assert "words" not in features[0] and features[2]["word_layers"].shape[0] == 5
    torch.testing.assert_close(model(**collate(features, 0)).logits, every_step, rtol=0, atol=1e-5)


def test_bert_features_are_the_first_piece_of_each_word_and_pairs_read_as_bert_does(bert_dir):
    model, tok = task_model(bert_dir, layers="last")
    encoder = model.bilstm.features.encoder
    pieces = model.bilstm.features.tokenizer.encode_words([["the", "zyzzyva"]])[0]
    assert pieces.word_ids.count(1) > 1  # zyzzyva is several pieces
    hidden = encoder(torch.tensor([pieces.ids])).last_hidden_state[0]
    batch, _ = inputs(model, tok, ["The zyzzyva"])
    e = lstm_input(model, batch)
    torch.testing.assert_close(e[0, 1, 4:], hidden[pieces.word_ids.index(0)])  # The → "the" (uncased)
    torch.testing.assert_close(e[0, 2, 4:], hidden[pieces.word_ids.index(1)])  # its first piece
    pair = ("the river", "a bank")
    batch, aligned = inputs(model, tok, [pair])
    assert aligned[0] == ([["the", "river"], ["a", "bank"]], [-1, 0, 1, -1, 2, 3, -1])
    bert_pair = model.bilstm.features.tokenizer.encode_words([(["the", "river"], ["a", "bank"])])[0]
    hidden = encoder(
        torch.tensor([bert_pair.ids]), token_type_ids=torch.tensor([bert_pair.type_ids])
    ).last_hidden_state[0]
    torch.testing.assert_close(
        lstm_input(model, batch)[0, 5, 4:],
        hidden[list(zip(bert_pair.sequence_ids, bert_pair.word_ids, strict=True)).index((1, 1))],
    )


def test_the_encoder_stays_frozen_through_a_training_step(elmo_dir):
    model, tok = task_model(elmo_dir)
    model.train()
    words = model.bilstm.features
    assert not words.encoder.training and words.mix.training  # eval inside, whatever the task model's mode
    before = {k: v.clone() for k, v in words.encoder.state_dict().items()}
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.1)
    batch, _ = inputs(model, tok)
    loss = model(**batch, labels=torch.tensor([0, 1, 2])).loss
    loss.backward()
    optimizer.step()
    assert all(p.grad is None for p in words.encoder.parameters())
    assert all(torch.equal(v, before[k]) for k, v in words.encoder.state_dict().items())
    assert words.mix.weights.grad is not None and words.mix.weights.grad.abs().sum() > 0  # s_j learn


def test_checkpoints_are_self_contained_and_serve_the_pipelines(elmo_dir, bert_dir, tmp_path):
    for i, (path, head) in enumerate(
        [(elmo_dir, BiLSTMForSequenceClassification), (bert_dir, BiLSTMForTokenClassification)]
    ):
        model, tok = task_model(path, head, layers="mix")
        model.save_pretrained(tmp_path / str(i), tokenizer=tok)
        assert (tmp_path / str(i) / "features" / "tokenizer.json").is_file()
        config = json.loads((tmp_path / str(i) / "config.json").read_text())
        assert config["features"]["encoder"]["model_type"] == registry.family_at(path).model_type
        again, again_tok = registry.load(tmp_path / str(i))
        batch, _ = inputs(again, again_tok)
        torch.testing.assert_close(
            again(**batch).logits, model(**inputs(model, tok)[0]).logits, rtol=0, atol=0
        )
    # the pipelines on the directories: the features of each text's words, as the task model was trained
    classifier, tok = registry.load(tmp_path / "0")
    probs = classifier(**inputs(classifier, tok, ["the zyzzyva", "a bank"])[0]).logits.softmax(-1)
    best = [{"label": "abc"[int(k)], "score": float(p)} for p, k in zip(*probs.max(-1), strict=True)]
    served = seq2bert.classify(["the zyzzyva", "a bank"], model=str(tmp_path / "0"), bf16=False)
    assert [r["label"] for r in served] == [r["label"] for r in best]
    assert [r["score"] for r in served] == pytest.approx([r["score"] for r in best], abs=1e-6)
    assert isinstance(seq2bert.tag("the river zyzzyva", model=str(tmp_path / "1"), aggregate=False), list)


def test_the_recipe_trains_a_tagger_on_elmo_features_and_reports_the_layer_weights(
    elmo_dir, tmp_path, capsys
):
    write_conll(tmp_path / "conll", np.random.default_rng(2), PLACES, PEOPLE, "Smith")
    args = ["finetune", "--task", "conll2003", "--model", "bilstm", "--features", str(elmo_dir), "--data",
            str(tmp_path / "conll"), "--out", str(tmp_path / "run"), *SMALL, "--set", "train.max_epochs=6"]  # fmt: skip
    assert main(args) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_f1"] >= 90, results
    weights = results["feature_layer_weights"]
    assert len(weights["s"]) == 3 and abs(sum(weights["s"]) - 1) < 1e-3 and weights["gamma"] > 0
    entities = seq2bert.tag("Mary Smith lives in Rome .", model=str(tmp_path / "run" / "best"))
    assert [(e["entity_group"], e["word"]) for e in entities] == [("PER", "Mary Smith"), ("LOC", "Rome")]
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run")]) == 0
    assert f"{results['dev_f1']:.2f}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--features", "{run}"], "features: {run} is a bilstm checkpoint; the features come from an encoder"),
        (["--features", "{elmo}", "--set", "features.layers=first"], "features.layers: expected one of 'mix' | 'last' | 'sum_last_four', got 'first'"),
        (["--features", "{elmo}", "--set", "features.layers=sum_last_four"], "features.layers: sum_last_four needs an encoder of at least 4 layers"),
        (["--set", "model_config.features=1"], "model_config.features: set by the recipe"),
    ],
)  # fmt: skip
def test_bad_features_are_one_line(elmo_dir, tmp_path, capsys, args, message):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    run = tmp_path / "first"
    BiLSTMForSequenceClassification(BiLSTMConfig(vocab_size=10)).save_pretrained(
        run, tokenizer=Tokenizer.train(VOCAB, kind="word", min_frequency=1)
    )
    args = [a.format(run=run, elmo=elmo_dir) for a in args]
    base = ["finetune", "--task", "sst2", "--data", str(tmp_path / "sst2"), "--out", str(tmp_path / "r")]
    code = main([*base, "--model", "bilstm", *args])
    err = capsys.readouterr().err
    assert code == 2 and message.format(run=run) in err and len(err.strip().splitlines()) == 1, err


def test_features_without_a_model_from_scratch_are_one_line(elmo_dir, tmp_path, capsys):
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    code = main(["finetune", "--task", "sst2", "--init", str(elmo_dir), "--features", str(elmo_dir),
                 "--data", str(tmp_path / "sst2"), "--out", str(tmp_path / "r")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "features: read by a model trained from scratch (--model bilstm)" in err, err
