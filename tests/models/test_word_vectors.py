"""word2vec, fastText and GloVe against their papers' equations, and their checkpoints through the registry."""

import math

import numpy as np
import torch

from seq2bert.data.char_ngrams import char_ngrams, fnv1a
from seq2bert.data.word_corpus import Vocabulary
from seq2bert.models import registry
from seq2bert.models.fasttext.config import FastTextConfig
from seq2bert.models.fasttext.model import FastText
from seq2bert.models.glove.config import GloVeConfig
from seq2bert.models.glove.model import GloVe
from seq2bert.models.word2vec.config import Word2VecConfig
from seq2bert.models.word2vec.model import Word2Vec
from seq2bert.objectives.negative_sampling import negative_sampling_loss

WORDS = Vocabulary(["the", "cat", "sat", "on", "mat"], np.array([9, 5, 4, 3, 2]))


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def randomised(model: torch.nn.Module) -> torch.nn.Module:
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    return model


def test_negative_sampling_is_eq_4_summed_with_noise_equal_to_the_target_left_out():
    scores = torch.tensor([[1.0, 0.5, -2.0], [0.2, 3.0, 0.1]])
    mask = torch.tensor([[True, True], [False, True]])
    expected = -(
        math.log(sigmoid(1.0)) + math.log(sigmoid(-0.5)) + math.log(sigmoid(2.0))
        + math.log(sigmoid(0.2)) + math.log(sigmoid(-0.1))
    )  # fmt: skip
    assert math.isclose(float(negative_sampling_loss(scores, mask)), expected, rel_tol=1e-6)


def test_skipgram_scores_the_centres_input_vector_against_output_vectors():
    m = randomised(Word2Vec(Word2VecConfig(vocab_size=5, vector_size=4)))
    centers, pair_center = torch.tensor([1, 2]), torch.tensor([0, 0, 1])
    contexts, negatives = torch.tensor([2, 0, 4]), torch.tensor([[3, 4], [2, 2], [4, 1]])
    out = m.skipgram(centers, pair_center, contexts, negatives)
    v, vp = m.input.weight.detach(), m.output.weight.detach()
    loss = 0.0
    for c, o, noise in zip([1, 1, 2], [2, 0, 4], negatives.tolist(), strict=True):
        loss -= math.log(sigmoid(float(vp[o] @ v[c])))
        loss -= sum(math.log(sigmoid(-float(vp[n] @ v[c]))) for n in noise if n != o)
    assert out.pairs == 3 and math.isclose(float(out.loss), loss, rel_tol=1e-5)
    out.loss.backward()
    assert m.input.weight.grad.is_sparse and m.output.weight.grad.is_sparse  # only touched rows move


def test_cbow_averages_the_window_inside_its_mask():
    m = randomised(Word2Vec(Word2VecConfig(vocab_size=5, vector_size=4, architecture="cbow")))
    contexts, mask = torch.tensor([[0, 1, 3, 4]]), torch.tensor([[False, True, True, False]])
    targets, negatives = torch.tensor([2]), torch.tensor([[4, 0]])
    v, vp = m.input.weight.detach(), m.output.weight.detach()
    h = (v[1] + v[3]) / 2
    expected = -math.log(sigmoid(float(vp[2] @ h))) - sum(
        math.log(sigmoid(-float(vp[n] @ h))) for n in (4, 0)
    )
    assert math.isclose(
        float(m(contexts=contexts, context_mask=mask, targets=targets, negatives=negatives).loss),
        expected,
        rel_tol=1e-5,
    )


def test_word2vec_starts_as_word2vec_c():
    m = Word2Vec(Word2VecConfig(vocab_size=1000, vector_size=50))
    assert float(m.input.weight.abs().max()) <= 0.5 / 50 and float(m.output.weight.abs().max()) == 0.0


def test_glove_loss_is_eq_8_on_a_hand_computed_matrix():
    m = randomised(GloVe(GloVeConfig(vocab_size=3, vector_size=2, x_max=10.0, alpha=0.75)))
    X = {(0, 1): 2.0, (1, 0): 2.0, (0, 0): 1.0, (1, 2): 30.0}
    rows, cols = torch.tensor([k[0] for k in X]), torch.tensor([k[1] for k in X])
    counts = torch.tensor(list(X.values()))
    w, wc = m.word.weight.detach(), m.context.weight.detach()
    b, bc = m.word_bias.weight.detach()[:, 0], m.context_bias.weight.detach()[:, 0]
    J = 0.0
    for (i, j), x in X.items():
        f = (x / 10.0) ** 0.75 if x < 10.0 else 1.0  # Eq. 9
        J += f * (float(w[i] @ wc[j]) + float(b[i]) + float(bc[j]) - math.log(x)) ** 2  # Eq. 8
    assert math.isclose(float(m(rows, cols, counts).loss), J, rel_tol=1e-5)
    m.set_vocabulary(Vocabulary(["a", "b", "c"], np.array([3, 2, 1])))
    assert torch.allclose(m.word_vectors(), w + wc)  # W + W̃ (Sect. 4.2)


def test_fasttext_vectors_are_the_mean_of_the_word_and_its_ngrams_and_unseen_words_get_theirs():
    cfg = FastTextConfig(vocab_size=5, vector_size=3, bucket=97, min_n=3, max_n=4)
    m = randomised(FastText(cfg))
    with torch.no_grad():
        m.input.bag.weight[-1].zero_()  # the padding row
    m.set_vocabulary(WORDS)
    z = m.input.bag.weight.detach()
    rows = [1] + [5 + fnv1a(g) % 97 for g in char_ngrams("cat", 3, 4)]
    assert torch.allclose(m.word_vectors()[1], z[rows].mean(0), atol=1e-6)
    vectors, known = m.vectors_for(["cat", "cats"])
    assert known.tolist() == [True, False]
    assert torch.allclose(vectors[0], z[rows].mean(0), atol=1e-6)
    unseen = [5 + fnv1a(g) % 97 for g in char_ngrams("cats", 3, 4)]
    assert torch.allclose(vectors[1], z[unseen].mean(0), atol=1e-6)  # its n-grams alone


def test_a_checkpoint_of_each_family_loads_back_with_its_vocabulary(tmp_path):
    for cfg, cls in [
        (Word2VecConfig(vocab_size=5, vector_size=4), Word2Vec),
        (FastTextConfig(vocab_size=5, vector_size=4, bucket=50), FastText),
        (GloVeConfig(vocab_size=5, vector_size=4), GloVe),
    ]:
        m = randomised(cls(cfg))
        m.set_vocabulary(WORDS)
        out = tmp_path / cfg.model_type
        m.save_pretrained(out)
        assert registry.family_at(out).word_vectors
        loaded, vocab = registry.load(out)
        assert (
            type(loaded) is cls
            and vocab.words == WORDS.words
            and loaded.vocab.counts.tolist() == [9, 5, 4, 3, 2]
        )
        assert torch.allclose(loaded.word_vectors(), m.word_vectors())
        assert torch.allclose(loaded.vectors_for(["cat", "dog"])[0], m.vectors_for(["cat", "dog"])[0])


def test_cbow_and_fasttext_give_every_part_of_a_mean_the_whole_gradient_as_their_code_does():
    from seq2bert.models.word2vec.model import code_mean

    parts = torch.randn(3, 4, requires_grad=True)
    h = code_mean(parts.sum(0), torch.tensor(3.0))
    assert torch.allclose(h, parts.mean(0))  # the forward pass is the mean …
    g = torch.randn(4)
    (h * g).sum().backward()
    assert torch.allclose(parts.grad, g.expand(3, 4))  # … each part takes ∂L/∂h whole (word2vec.c's neu1e)
    m = randomised(Word2Vec(Word2VecConfig(vocab_size=5, vector_size=4, architecture="cbow")))
    out = m(contexts=torch.tensor([[0, 1, 3]]), context_mask=torch.tensor([[True, True, False]]),
            targets=torch.tensor([2]), negatives=torch.tensor([[4]]))  # fmt: skip
    out.loss.backward()
    grad = m.input.weight.grad.coalesce().to_dense()
    assert torch.allclose(grad[0], grad[1]) and grad[3].abs().sum() == 0  # both context words alike; 3 masked
