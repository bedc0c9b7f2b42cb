"""The data side of `seq2bert pretrain` (recipes/pretrain_data.py): whole words on ALBERT's SentencePiece and
RoBERTa's byte-level vocabularies as on BERT's WordPieces (data/word_pieces.py) for every strategy that masks
words and for the phrases of n-gram statistics; the masking budget that follows max_seq_length; ERNIE's
stages checked once the family's defaults are known."""

import numpy as np
import pytest

from seq2bert.data.masking import mask_tokens, words
from seq2bert.data.pretraining import Corpus, prepare_corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.models.albert.tokenizer import train_tokenizer as albert_tokenizer
from seq2bert.models.roberta.tokenizer import train_tokenizer as roberta_tokenizer
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.recipes.pretrain_data import (
    PretrainDataConfig,
    corpus_sentences,
    corpus_spaces,
    family_data,
    masking_config,
)

SHORT = "the a cat dog sat ran on under big red saw".split()
LONG = "extraordinary catastrophe photosynthesis unbelievable marmalade".split()  # several pieces each


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    """Sentences of short and long words; "extraordinary catastrophe" often, a collocation."""
    rng = np.random.default_rng(0)
    sentences = []
    for _ in range(400):
        sentence = [str(w) for w in rng.choice(SHORT + LONG, size=8)]
        if rng.random() < 0.3:
            at = int(rng.integers(0, 7))
            sentence[at : at + 2] = ["extraordinary", "catastrophe"]
        sentences.append(" ".join(sentence).capitalize() + ".")
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text("\n\n".join(" ".join(sentences[i : i + 5]) for i in range(0, 400, 5)) + "\n")
    return path


@pytest.fixture(scope="module")
def tokenizers(text):
    return {
        "albert": albert_tokenizer([text], 120),  # SentencePiece unigram: "▁" starts a word
        "roberta": roberta_tokenizer([text], 300),  # byte-level BPE: "Ġ" (the space) starts a word
        "bert": Tokenizer.train([text], kind="wordpiece", vocab_size=80),  # "##" continues one
    }


@pytest.mark.parametrize("family", ["albert", "roberta", "bert"])
@pytest.mark.parametrize("strategy", ["whole_word", "span", "ngram", "knowledge"])
def test_words_of_several_pieces_are_masked_whole_on_every_vocabulary(tokenizers, family, strategy):
    tok = tokenizers[family]
    cfg = masking_config(PretrainDataConfig(masking_strategy=strategy, masked_lm_prob=0.3), tok)
    is_continuation = set(cfg.continuation).__contains__
    # words unseen in training, so split in pieces; no punctuation, so the pre-tokenizer's words are the words
    text = "the extraordinarily red catmarmalade saw unbelievably big dogcatastrophes on a redsaw"
    enc = tok.encode(text)  # with its specials
    special = np.array([w is None for w in enc.word_ids])
    pieces = {}  # word → its positions
    for i, w in enumerate(enc.word_ids):
        if w is not None:
            pieces.setdefault(w, []).append(i)
    assert max(len(p) for p in pieces.values()) >= 3  # words of 2–3 pieces and more
    assert words(enc.ids, special, is_continuation) == list(pieces.values())
    long_masked = 0
    for seed in range(30):
        _, labels = mask_tokens(enc.ids, special, cfg, np.random.default_rng(seed), is_continuation)
        for positions in pieces.values():
            masked = [labels[i] != IGNORE_INDEX for i in positions]
            assert all(masked) or not any(masked), (seed, [enc.tokens[i] for i in positions], masked)
            long_masked += len(positions) > 1 and all(masked)
    assert long_masked > 10


@pytest.mark.parametrize("family", ["albert", "roberta", "bert"])
def test_phrases_of_n_gram_statistics_are_word_n_grams(tokenizers, family, text, tmp_path):
    tok = tokenizers[family]
    prepare_corpus([text], tok, tmp_path / "corpus", progress=False, **corpus_spaces(tok, causal=False))
    corpus = Corpus(tmp_path / "corpus")
    sentences = corpus_sentences(corpus, range(corpus.num_documents))
    data = PretrainDataConfig(masking_strategy="knowledge", phrase_ngrams=5)
    phrases = masking_config(data, tok, sentences).phrases
    assert phrases
    for phrase in phrases:  # two or more whole words, never pieces of one
        found = tok.decode(list(phrase)).lower().replace(".", " . ").split()  # a full stop is a word
        assert len(found) >= 2 and set(found) <= {*SHORT, *LONG, "."}, found
    assert "extraordinary catastrophe" in [tok.decode(list(p)).strip().lower() for p in phrases]


def test_a_byte_level_corpus_keeps_the_space_before_each_sentence(tokenizers, tmp_path):
    tok = tokenizers["roberta"]
    (tmp_path / "a.txt").write_text("The cat sat. The dog ran.\nThe end came.\n\nThe next paragraph.\n")
    (tmp_path / "b.txt").write_text("The second document.\n")
    prepare_corpus([tmp_path / "a.txt", tmp_path / "b.txt"], tok, tmp_path / "corpus", documents="file",
                   progress=False, **corpus_spaces(tok, causal=False))  # fmt: skip
    corpus = Corpus(tmp_path / "corpus")
    first = [tok.id_to_token(int(corpus.sentence(s)[0])) for s in range(len(corpus.lengths))]
    # a document's first word has no space before it; every other sentence's, paragraphs' too, has one
    assert [t.startswith("Ġ") for t in first] == [False, True, True, True, False]
    a = "The cat sat. The dog ran. The end came. The next paragraph."
    assert corpus.tokens(0, 4).tolist() == tok.encode(a).ids[1:-1]  # as fine-tuning text reads
    albert = tokenizers["albert"]  # SentencePiece's pieces do not depend on the space: none kept
    assert corpus_spaces(albert, causal=False)["spaces"] is False
    assert corpus_spaces(albert, causal=True)["spaces"] is True  # a causal LM's text decodes back


@pytest.mark.parametrize(
    "max_seq_length, masked_lm_prob, said, expected",
    [(128, 0.15, "auto", 20), (512, 0.15, "auto", 77), (100, 0.15, "auto", 15), (512, 0.15, 76, 76)],
)
def test_max_predictions_per_seq_follows_the_length_unless_given(
    max_seq_length, masked_lm_prob, said, expected
):
    tok = Tokenizer.train(["the cat sat on the mat"] * 5, kind="wordpiece", vocab_size=40)
    data = PretrainDataConfig(max_seq_length=max_seq_length, masked_lm_prob=masked_lm_prob,
                              max_predictions_per_seq=said)  # fmt: skip
    assert masking_config(data, tok).max_predictions_per_seq == expected
    assert PretrainDataConfig().max_predictions_per_seq == "auto"
    with pytest.raises(ConfigError, match="max_predictions_per_seq: must be at least 1"):
        PretrainDataConfig(max_predictions_per_seq=0)


def test_knowledge_stages_are_checked_once_the_family_says_how_it_masks():
    stages = PretrainDataConfig(masking_strategy="knowledge", knowledge_schedule=["word", "entity"])
    roberta = family_data(stages, {"sentence_task": "full_sentences", "masking": "dynamic"})
    assert roberta.masking == "dynamic"  # RoBERTa's own: no need to write it out
    with pytest.raises(ConfigError, match="knowledge_schedule: needs masking=dynamic"):
        family_data(stages, {})  # BERT's auto is static
    with pytest.raises(ConfigError, match="knowledge_schedule: needs masking=dynamic"):
        PretrainDataConfig(masking_strategy="knowledge", knowledge_schedule=["word"], masking="static")
