"""TinyBERT's augmentation (data/augment.py, recipes/distill_augment.py): words replaced with probability p_t
by one of their candidates, reproducibly, pairs sentence by sentence; candidates from the nearest whole words
in an embedding space or from a masked LM, never the word itself nor a word piece."""

import numpy as np
import pytest
import torch

from seq2bert.data.augment import AugmentConfig, augment_examples, augment_words
from seq2bert.data.glue import TextExample
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertForMaskedLM
from seq2bert.recipes.distill_augment import MaskedLMCandidates, Neighbours

WORDS = "the a film story great superb awful dull was is very quite".split()


def fixed(words, i):
    return [words[i].upper()]


def test_each_word_is_replaced_with_probability_p():
    rng = np.random.default_rng(0)
    words = ["w"] * 20000
    out = augment_words(words, fixed, 0.4, rng)
    assert abs(sum(w == "W" for w in out) / len(out) - 0.4) < 0.01
    assert augment_words(["a", "b"], fixed, 1.0, rng) == ["A", "B"]
    assert augment_words(["a", "b"], lambda w, i: [], 1.0, rng) == ["a", "b"]  # no candidate: kept


def test_copies_follow_their_sources_reproducibly_and_pairs_augment_both_sentences():
    examples = [TextExample("1", "a good film", "it was fine", 1), TextExample("2", "dull", None, 0)]
    cfg = AugmentConfig(copies=3, p=1.0)
    out = augment_examples(examples, cfg, fixed, seed=0)
    assert [e.id for e in out] == ["1", "2", "1-aug1", "1-aug2", "1-aug3", "2-aug1", "2-aug2", "2-aug3"]
    assert out[2].text_a == "A GOOD FILM" and out[2].text_b == "IT WAS FINE" and out[2].label == 1
    assert out[5].text_b is None and out[5].label == 0
    half = AugmentConfig(copies=2, p=0.5)
    assert augment_examples(examples, half, fixed, seed=1) == augment_examples(examples, half, fixed, seed=1)
    with pytest.raises(ConfigError):
        AugmentConfig(p=0.0)


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    f = tmp_path_factory.mktemp("aug") / "w.txt"
    f.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\nfilmography\n")
    return Tokenizer.train([f], kind="wordpiece", vocab_size=200, lowercase=True)


def test_neighbours_are_the_nearest_whole_words_by_cosine(tok):
    V = tok.vocab_size
    E = torch.randn(V, 8, generator=torch.Generator().manual_seed(0))
    great, superb = tok.token_to_id("great"), tok.token_to_id("superb")
    assert great is not None and superb is not None
    E[superb] = 3 * E[great] + 0.01  # the same direction: superb is great's nearest word
    near = Neighbours(E, tok, k=3)
    found = near(["a", "great", "film"], 1)
    assert found[0] == "superb" and "great" not in found and len(found) == 3
    assert not any(w.startswith("##") or w.startswith("[") for w in found)


def test_a_masked_lms_candidates_are_its_most_probable_whole_words(tok):
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32)  # fmt: skip
    model = BertForMaskedLM(cfg).eval()
    lm = MaskedLMCandidates(
        model, tok, 4, Neighbours(model.bert.embeddings.word_embeddings.weight, tok, 4), "cpu"
    )
    words = ["the", "film", "was", "great"]
    found = lm(words, 3)
    ids = tok.encode("the film was [MASK]").ids
    logits = model(input_ids=torch.tensor([ids])).logits[0, ids.index(tok.mask_token_id)]
    ranked = [tok.id_to_token(i) for i in logits.argsort(descending=True).tolist()]
    expected = [w for w in ranked if w.isalpha() and w != "great"][:4]
    assert found == expected
