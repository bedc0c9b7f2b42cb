"""Word analogies and word similarity: hand-made cases whose answers follow from the equations, bad files, and
parity with gensim's evaluate_word_analogies / most_similar_cosmul / evaluate_word_pairs."""

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from scipy import stats

from seq2bert.errors import ConfigError, DataError
from seq2bert.evaluation import word_vectors as wv


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def counts(result: dict, method: str) -> dict[str, tuple[int, int]]:
    return {name: (s["correct"], s["seen"]) for name, s in result[method]["sections"].items()}


# ---------------------------------------------------------------------------------------------------------
# Hand-made analogies


def test_3cosadd_and_3cosmul_pick_the_answers_their_equations_say(tmp_path):
    # man = e1, king = e2, woman = e3 (mutually orthogonal: every cosine among them is 0)
    # kingly = (0, 24, 0, 7, 0) / 25: cos(·, king) = 0.96, cos(·, man) = cos(·, woman) = 0
    # queen = (0, 1, 1, 0, 2) / √6:   cos(·, king) = cos(·, woman) = 1/√6 = 0.408, cos(·, man) = 0
    # cabbage = −e5:                  every cosine 0
    # 3CosAdd, cos(x, king) − cos(x, man) + cos(x, woman):
    #   kingly 0.96 − 0 + 0 = 0.960,  queen 0.408 + 0.408 = 0.816,  cabbage 0  → kingly
    # 3CosMul, ((1 + cos(x, king))/2 · (1 + cos(x, woman))/2) / ((1 + cos(x, man))/2 + 0.001):
    #   kingly (1.96/2 · 1/2) / 0.501 = 0.49 / 0.501 = 0.978
    #   queen  (1.408/2)² / 0.501     = 0.4958 / 0.501 = 0.990,  cabbage 0.25 / 0.501 = 0.499  → queen
    words = ["man", "king", "woman", "kingly", "queen", "cabbage"]
    vectors = torch.tensor(
        [
            [1.0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 24, 0, 7, 0],
            [0, 1, 1, 0, 2],
            [0, 0, 0, 0, -1],
        ]
    )
    path = write(
        tmp_path, "q.txt", ": expect-queen\nman king woman queen\n: expect-kingly\nman king woman kingly\n"
    )
    result = wv.analogy(words, vectors, path)
    assert counts(result, "3cosadd") == {"expect-queen": (0, 1), "expect-kingly": (1, 1)}
    assert counts(result, "3cosmul") == {"expect-queen": (1, 1), "expect-kingly": (0, 1)}
    # gensim's ε = 10⁻⁶ changes nothing here; the methods can be asked for one at a time
    only_mul = wv.analogy(words, vectors, path, methods="3cosmul", epsilon=1e-6)
    assert set(only_mul) == {"questions", "oov_questions", "oov_rate", "3cosmul"}
    assert counts(only_mul, "3cosmul") == counts(result, "3cosmul")


def test_3cosmul_epsilon_sits_where_eq_4_puts_it(tmp_path):
    # a = e1, b = e2, c = e3; y = −e1: cos(y, a) = −1, so (1 + cos(y, a))/2 = 0 and y scores (½ · ½) / ε;
    # z = (−cos θ, sin θ, 0) with θ = 0.003: (1 + cos(z, a))/2 = (1 − cos θ)/2 ≈ θ²/4 = 2.25e-6, and z scores
    # ((1 + sin θ)/2 · ½) / (2.25e-6 + ε) = 0.25075 / (2.25e-6 + ε).
    #   ε = 10⁻³: y 250, z 0.25075 / 0.00100225 = 250.19 → z
    #   ε = 10⁻⁶: y 250,000, z 0.25075 / 3.25e-6 = 77,154 → y
    theta = 0.003
    words = ["a", "b", "c", "y", "z"]
    vectors = torch.tensor(
        [[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [-1, 0, 0], [-math.cos(theta), math.sin(theta), 0]],
    )
    path = write(tmp_path, "q.txt", ": expect-z\na b c z\n: expect-y\na b c y\n")
    paper = wv.analogy(words, vectors, path, methods=("3cosmul",))
    assert counts(paper, "3cosmul") == {"expect-z": (1, 1), "expect-y": (0, 1)}
    gensim = wv.analogy(words, vectors, path, methods=("3cosmul",), epsilon=1e-6)
    assert counts(gensim, "3cosmul") == {"expect-z": (0, 1), "expect-y": (1, 1)}


# a = e1, b = e2, c = e3, d = (e2 + e4)/√2; B is a rarer casing of b, almost b itself.
# 3CosAdd: b and c score 1 − 0 + 0 = 1, B ≈ 1, d only 0.707 − 0 + 0 = 0.707, a −1;
# 3CosMul: b (1 · ½) / 0.501 = 0.998, d (0.854 · ½) / 0.501 = 0.852. So d is the answer only once
# a, b, c — and, case-insensitively, B — are excluded.
EXCLUSION_WORDS = ["a", "b", "c", "d", "B"]
EXCLUSION_VECTORS = torch.tensor(
    [[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1], [0.001, 1, 0, 0]],
)


@pytest.mark.parametrize("method", wv.METHODS)
def test_question_words_and_their_casings_are_no_answers(tmp_path, method):
    path = write(tmp_path, "q.txt", ": s\na b c d\n")
    right = wv.analogy(EXCLUSION_WORDS, EXCLUSION_VECTORS, path, methods=(method,))
    assert counts(right, method) == {"s": (1, 1)}
    # case-sensitively B is another word, so it is a candidate, and it wins
    wrong = wv.analogy(EXCLUSION_WORDS, EXCLUSION_VECTORS, path, methods=(method,), case_insensitive=False)
    assert counts(wrong, method) == {"s": (0, 1)}


# a = e1, b = e2, c = e3, d = (0, 1, 1, 0)/√2, e = e4, x = (−1, 1, 1, 0)/√3
# 3CosAdd: x 3/√3 = 1.732 > d 2/√2 = 1.414 > e 0;
# 3CosMul: x (1.577/2)² / (0.423/2 + 0.001) = 2.93 > d (1.707/2)² / 0.501 = 1.45. x is the answer when known.
ORDER_WORDS = ["a", "b", "c", "d", "e", "x"]
ORDER_VECTORS = torch.tensor(
    [[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 1, 0], [0, 0, 0, 1], [-1, 1, 1, 0]],
)


@pytest.mark.parametrize("method", wv.METHODS)
def test_oov_questions_are_skipped_and_restrict_vocab_limits_questions_and_answers(tmp_path, method):
    path = write(tmp_path, "q.txt", ": s\na b c d\na b c zzz\na b c x\n")
    five = wv.analogy(ORDER_WORDS, ORDER_VECTORS, path, methods=(method,), restrict_vocab=5)
    # x is 6th: the question naming it is skipped, and it is no answer, so d is right
    assert (five["questions"], five["oov_questions"]) == (3, 2)
    assert five["oov_rate"] == pytest.approx(2 / 3)
    assert counts(five, method) == {"s": (1, 1)}
    assert five[method]["total"] == 100.0
    six = wv.analogy(ORDER_WORDS, ORDER_VECTORS, path, methods=(method,), restrict_vocab=6)
    assert six["oov_questions"] == 1
    assert counts(six, method) == {"s": (1, 2)}  # x answers both: "a b c x" right, "a b c d" wrong
    assert six[method]["total"] == 50.0


def test_case_insensitive_takes_the_most_frequent_casing(tmp_path):
    # "A" (e1, first) and "a" (e4, last) are one word case-insensitively, and "A" stands for it:
    # with a = e1, e = (−1, 1, 1, 0)/√3 beats d as above; with a = e4, d scores 0.707 + 0.707 = 1.414 and
    # e only 0.577 + 0.577 = 1.155, so d is right.
    words = ["A", "b", "c", "d", "e", "a"]
    vectors = torch.tensor(
        [[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 1, 0], [-1, 1, 1, 0], [0, 0, 0, 1]]
    )
    path = write(tmp_path, "q.txt", ": s\na b c d\n")
    assert counts(wv.analogy(words, vectors, path), "3cosadd") == {"s": (0, 1)}
    assert counts(wv.analogy(words, vectors, path, case_insensitive=False), "3cosadd") == {"s": (1, 1)}
    # questions are upper-cased too; case-sensitively "A B C D" is not in the vocabulary
    upper = write(tmp_path, "upper.txt", ": s\nA B C D\n")
    assert wv.analogy(words, vectors, upper)["oov_questions"] == 0
    assert wv.analogy(words, vectors, upper, case_insensitive=False)["oov_questions"] == 1


def test_any_casing_of_the_expected_word_is_right(tmp_path):
    # "D" (rarer casing of d) is x's vector (1.732, the best), d itself is e4 (score 0)
    words = ["a", "b", "c", "d", "D"]
    vectors = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [-1, 1, 1, 0]])
    path = write(tmp_path, "q.txt", ": s\na b c d\n")
    assert counts(wv.analogy(words, vectors, path), "3cosadd") == {"s": (1, 1)}
    assert counts(wv.analogy(words, vectors, path, case_insensitive=False), "3cosadd") == {"s": (0, 1)}


def test_sections_named_gram_are_syntactic_the_others_semantic(tmp_path):
    # with ORDER_* (x is the answer): "a b c x" is right, "a b c d" wrong
    text = (
        ": capital-common-countries\na b c x\n"
        ": my-relations\na b c d\n"
        ": gram2-opposite\na b c x\n"
        ": gram9-plural-verbs\na b c x\na b c d\n"
        ": empty\n"
        ": my-relations\na b c x\n"  # a repeated name adds to its section
    )
    result = wv.analogy(ORDER_WORDS, ORDER_VECTORS, write(tmp_path, "q.txt", text))
    for method in wv.METHODS:
        assert counts(result, method) == {
            "capital-common-countries": (1, 1),
            "my-relations": (1, 2),
            "gram2-opposite": (1, 1),
            "gram9-plural-verbs": (1, 2),
            "empty": (0, 0),
        }
        assert result[method]["semantic"] == pytest.approx(100 * 2 / 3)
        assert result[method]["syntactic"] == pytest.approx(100 * 2 / 3)
        assert result[method]["total"] == pytest.approx(100 * 4 / 6)
    semantic_only = wv.analogy(ORDER_WORDS, ORDER_VECTORS, write(tmp_path, "s.txt", ": family\na b c x\n"))
    assert semantic_only["3cosadd"]["semantic"] == 100.0
    assert math.isnan(semantic_only["3cosadd"]["syntactic"])


def test_all_questions_unknown_gives_nan_accuracy(tmp_path):
    result = wv.analogy(ORDER_WORDS, ORDER_VECTORS, write(tmp_path, "q.txt", ": s\np q r s\n"))
    assert (result["questions"], result["oov_questions"], result["oov_rate"]) == (1, 1, 1.0)
    assert math.isnan(result["3cosadd"]["total"])


def test_bad_arguments(tmp_path):
    path = write(tmp_path, "q.txt", ": s\na b c d\n")
    with pytest.raises(ConfigError, match="3cosfoo"):
        wv.analogy(ORDER_WORDS, ORDER_VECTORS, path, methods=("3cosfoo",))
    with pytest.raises(ValueError, match="one vector per word"):
        wv.analogy(ORDER_WORDS[:3], ORDER_VECTORS, path)
    with pytest.raises(ConfigError, match="restrict_vocab"):
        wv.similarity(ORDER_WORDS, ORDER_VECTORS, write(tmp_path, "p.tsv", "a\tb\t1\n"), restrict_vocab=0)


def test_the_real_questions_words_file(tmp_path):
    path, _ = wv.default_test_sets()
    if path is None:
        pytest.skip("needs gensim's test data (pip install gensim)")
    sections = wv.read_analogies(path)
    words = sorted({w for _, questions in sections for q in questions for w in q})
    vectors = torch.randn(len(words), 16, generator=torch.Generator().manual_seed(0))
    result = wv.analogy(words, vectors, path)
    seen = {name: s["seen"] for name, s in result["3cosadd"]["sections"].items()}
    # Mikolov et al. 2013, Table 1: 8,869 semantic and 10,675 syntactic questions in 14 sections
    assert (result["questions"], result["oov_questions"], len(seen)) == (19544, 0, 14)
    assert sum(n for name, n in seen.items() if not name.startswith("gram")) == 8869
    assert sum(n for name, n in seen.items() if name.startswith("gram")) == 10675


# ---------------------------------------------------------------------------------------------------------
# Word similarity


def test_similarity_correlates_cosines_with_scores(tmp_path):
    words = ["Tiger", "cat", "dog", "car", "tiger"]
    vectors = torch.tensor([[1.0, 0.0], [1.0, 0.2], [1.0, 1.0], [0.0, 1.0], [-1.0, 0.5]])
    text = (
        "# a comment\n"
        "tiger\tcat\t9.0\n"  # case-insensitively tiger is "Tiger" = (1, 0): cos 0.981
        "tiger\tdog\t3.0\n"  # cos 0.707
        "tiger\tcar\t5.0\n"  # cos 0
        "\n"
        "cat\tunicorn\t5.0\n"  # skipped: unicorn is unknown
    )
    path = write(tmp_path, "pairs.tsv", text)
    cosines = [1 / math.sqrt(1.04), 1 / math.sqrt(2), 0.0]
    gold = [9.0, 3.0, 5.0]
    result = wv.similarity(words, vectors, path)
    assert (result["pairs"], result["oov_pairs"]) == (4, 1)
    assert result["oov_rate"] == 0.25
    assert result["spearman"] == pytest.approx(100 * stats.spearmanr(gold, cosines).statistic)  # 50
    assert result["pearson"] == pytest.approx(100 * stats.pearsonr(gold, cosines).statistic, abs=1e-4)
    # case-sensitively "tiger" = (−1, 0.5): cosines −0.77, −0.32, 0.45, ranked the other way
    sensitive = wv.similarity(words, vectors, path, case_insensitive=False)
    assert sensitive["spearman"] == pytest.approx(-50.0)
    # restrict_vocab=3 leaves car unknown: two pairs, a perfect rank correlation
    assert wv.similarity(words, vectors, path, restrict_vocab=3)["spearman"] == pytest.approx(100.0)


def test_similarity_with_fewer_than_two_known_pairs_is_nan(tmp_path):
    result = wv.similarity(["a", "b"], torch.eye(2), write(tmp_path, "p.tsv", "a\tb\t1\nx\ty\t2\n"))
    assert (result["pairs"], result["oov_pairs"]) == (2, 1)
    assert math.isnan(result["spearman"]) and math.isnan(result["pearson"])


# ---------------------------------------------------------------------------------------------------------
# Bad files


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        (": s\na b c\n", 2, "expected 4 words"),
        (": s\na b c d\na b c d e\n", 3, "expected 4 words"),
        ("a b c d\n: s\n", 1, "before any section header"),
        (": s\na b c d\n: \n", 3, "section name"),
        (b": s\na b \xff d\n", 2, "not UTF-8"),
    ],
)
def test_malformed_analogy_lines_name_the_file_and_line(tmp_path, text, line, expected):
    path = tmp_path / "q.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DataError, match=expected) as error:
        wv.analogy(ORDER_WORDS, ORDER_VECTORS, path)
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("a\tb\t1\na b 2\n", 2, "3 tab-separated fields"),
        ("a\tb\n", 1, "3 tab-separated fields"),
        ("a\tb\t1\tx\n", 1, "3 tab-separated fields"),
        ("#\na\tb\tsimilar\n", 2, "a number as the score"),
        ("a\tb\tnan\n", 1, "a number as the score"),
    ],
)
def test_malformed_similarity_lines_name_the_file_and_line(tmp_path, text, line, expected):
    path = write(tmp_path, "pairs.tsv", text)
    with pytest.raises(DataError, match=expected) as error:
        wv.similarity(ORDER_WORDS, ORDER_VECTORS, path)
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("evaluate", "text", "expected"),
    [
        (wv.analogy, None, "no such file"),
        (wv.analogy, "", "no analogy questions"),
        (wv.analogy, ": s\n\n: t\n", "no analogy questions"),
        (wv.similarity, None, "no such file"),
        (wv.similarity, "# only a comment\n\n", "no word pairs"),
    ],
)
def test_missing_or_empty_files(tmp_path, evaluate, text, expected):
    path = tmp_path / "test-set.txt"
    if text is not None:
        path.write_text(text)
    with pytest.raises(DataError, match=expected) as error:
        evaluate(ORDER_WORDS, ORDER_VECTORS, path)
    assert str(error.value).startswith(f"{path}: ")


# ---------------------------------------------------------------------------------------------------------
# Where the test sets come from


def test_default_test_sets_find_gensim_without_importing_it():
    code = (
        "import sys\n"
        "from seq2bert.evaluation.word_vectors import default_test_sets\n"
        "questions, pairs = default_test_sets()\n"
        "assert 'gensim' not in sys.modules\n"
        "print(questions, pairs)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    try:
        import importlib.util

        installed = importlib.util.find_spec("gensim") is not None
    except ValueError:
        installed = True
    if installed:
        assert out[0].endswith("questions-words.txt") and out[1].endswith("wordsim353.tsv")
        assert all(Path(p).is_file() for p in out)
    else:
        assert out == ["None", "None"]


def test_default_test_sets_without_gensim(monkeypatch):
    monkeypatch.setattr(wv.importlib.util, "find_spec", lambda name: None)
    assert wv.default_test_sets() == (None, None)


# ---------------------------------------------------------------------------------------------------------
# Parity with gensim


def _vocabulary_for(questions: list[tuple[str, list]], pair_words: list[str], seed: int = 0):
    """~2,000 words with vectors in which each section's relation is roughly an offset (so some answers are
    right), rarer casings of some question words close to them, some words missing, and fillers."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    base = list(dict.fromkeys([w for _, qs in questions for q in qs for w in q] + pair_words))
    base = [w for w in base if rng.random() > 0.03]  # ~3% out of vocabulary
    d = 32
    vector = {w: torch.randn(d, generator=generator) for w in base}
    derived = set()
    for _, qs in questions:
        offset = torch.randn(d, generator=generator)
        for a, b, c, e in qs:
            for first, second in ((a, b), (c, e)):
                if first in vector and second in vector and second not in derived:
                    vector[second] = vector[first] + offset + 1.5 * torch.randn(d, generator=generator)
                    derived.add(second)
    words = list(base)
    for w in base:
        if rng.random() < 0.15:
            variant = w.lower() if w != w.lower() else w.upper()
            if variant not in vector:
                vector[variant] = vector[w] + 0.3 * torch.randn(d, generator=generator)
                words.insert(words.index(w) + (1 if rng.random() < 0.7 else 0), variant)
    rng.shuffle(words)
    words += [f"filler{i}" for i in range(2000 - len(words))]
    for w in words[len(vector) :]:
        vector[w] = torch.randn(d, generator=generator)
    return words, torch.stack([vector[w] for w in words])


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    pytest.importorskip("gensim")
    questions_path, pairs_path = wv.default_test_sets()
    tmp = tmp_path_factory.mktemp("parity")
    # the first 40 questions of each of the 14 sections of the real file
    subset = [(name, qs[:40]) for name, qs in wv.read_analogies(questions_path)]
    subset_path = tmp / "questions-subset.txt"
    subset_path.write_text(
        "".join(f": {name}\n" + "".join(" ".join(q) + "\n" for q in qs) for name, qs in subset)
    )
    pair_words = [w for a, b, _ in wv.read_word_pairs(pairs_path) for w in (a, b)]
    words, vectors = _vocabulary_for(subset, pair_words)
    return words, vectors, subset, subset_path, pairs_path


def _keyed_vectors(words, vectors):
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=vectors.shape[1])
    kv.add_vectors(words, vectors.numpy())
    return kv


RESTRICT = 1800


@pytest.mark.parametrize("case_insensitive", [True, False])
def test_3cosadd_and_similarity_match_gensim(parity, case_insensitive):
    words, vectors, _, questions_path, pairs_path = parity
    kv = _keyed_vectors(words, vectors)
    ours = wv.analogy(
        words,
        vectors,
        questions_path,
        restrict_vocab=RESTRICT,
        case_insensitive=case_insensitive,
        methods=("3cosadd",),
    )
    score, sections = kv.evaluate_word_analogies(
        str(questions_path), restrict_vocab=RESTRICT, case_insensitive=case_insensitive
    )
    theirs = {
        s["section"]: (len(s["correct"]), len(s["correct"]) + len(s["incorrect"])) for s in sections[:-1]
    }
    assert counts(ours, "3cosadd") == theirs
    assert ours["3cosadd"]["total"] == pytest.approx(100 * score)
    # the vectors make some answers right, not all (about a third)
    right = sum(c for c, _ in theirs.values())
    assert 0.1 < right / sum(n for _, n in theirs.values()) < 0.9
    assert 0 < ours["oov_questions"] < ours["questions"]

    ours = wv.similarity(
        words, vectors, pairs_path, restrict_vocab=RESTRICT, case_insensitive=case_insensitive
    )
    pearson, spearman, oov_percent = kv.evaluate_word_pairs(
        str(pairs_path), restrict_vocab=RESTRICT, case_insensitive=case_insensitive
    )
    assert ours["spearman"] == pytest.approx(100 * spearman[0], rel=1e-12)
    assert ours["pearson"] == pytest.approx(100 * pearson[0], rel=1e-5)
    assert 100 * ours["oov_rate"] == pytest.approx(oov_percent)
    assert 0 < ours["oov_pairs"] < ours["pairs"]


@pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")
@pytest.mark.parametrize("case_insensitive", [True, False])
def test_3cosmul_matches_gensims_most_similar_cosmul(parity, tmp_path, case_insensitive):
    words, vectors, subset, _, _ = parity
    # gensim's most_similar_cosmul searches every vector (it ignores restrict_vocab): give it the first RESTRICT
    kv = _keyed_vectors(words[:RESTRICT], vectors[:RESTRICT])
    sample = [(name, qs[::4]) for name, qs in subset]
    path = tmp_path / "sample.txt"
    path.write_text("".join(f": {name}\n" + "".join(" ".join(q) + "\n" for q in qs) for name, qs in sample))

    # evaluate_word_analogies' loop, with most_similar_cosmul in place of most_similar
    key = str.upper if case_insensitive else str
    ok_vocab = {key(k): kv.get_index(k) for k in reversed(kv.index_to_key)}
    theirs = {}
    for name, qs in sample:
        correct = seen = 0
        for question in qs:
            a, b, c, expected = (key(w) for w in question)
            if not all(w in ok_vocab for w in (a, b, c, expected)):
                continue
            original, kv.key_to_index = kv.key_to_index, ok_vocab
            answers = kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=5)
            kv.key_to_index = original
            for word, _ in answers:
                predicted = key(word)
                if predicted in ok_vocab and predicted not in {a, b, c}:
                    break
            correct, seen = correct + (predicted == expected), seen + 1
        theirs[name] = (correct, seen)

    ours = wv.analogy(
        words,
        vectors,
        path,
        restrict_vocab=RESTRICT,
        case_insensitive=case_insensitive,
        methods=("3cosmul",),
        epsilon=1e-6,  # gensim's
    )
    assert counts(ours, "3cosmul") == theirs
    assert sum(c for c, _ in theirs.values()) > 0
