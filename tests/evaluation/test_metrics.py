import math

import pytest
import sacrebleu

from seq2bert.evaluation import metrics as M


def test_token_accuracy_counts_missing_positions_as_wrong():
    assert M.token_accuracy([[1, 2, 3]], [[1, 2, 4]]) == pytest.approx(200 / 3)
    assert M.token_accuracy([[1]], [[1, 2]]) == pytest.approx(50.0)
    assert M.token_accuracy([[1, 2, 9, 9]], [[1, 2]]) == pytest.approx(100.0)


def test_exact_match():
    assert M.exact_match(["a b", "c"], ["a b", "d"]) == 50.0


def test_bleu_is_sacrebleu_and_lowercase_differs():
    hyps, refs = ["The cat sat on the mat ."], ["the cat sat on the mat ."]
    assert M.bleu(hyps, refs) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert M.bleu(hyps, refs, lowercase=True) == pytest.approx(100.0)
    assert M.bleu(hyps, refs) < 100.0


def test_perplexity():
    assert M.perplexity(math.log(7.0)) == pytest.approx(7.0)


def test_length_buckets():
    assert [M.bucket_label(n) for n in (1, 5, 6, 10, 30, 31, 99)] == [
        "1-5",
        "1-5",
        "6-10",
        "6-10",
        "26-30",
        ">30",
        ">30",
    ]
    assert M.bucket_label(4, edges=(3,)) == ">3"


def test_bleu_by_length_scores_each_bucket_as_its_own_corpus():
    hyps = ["a cat sat", "the dog ran far away today", "a cat", "the dog ran far away"]
    refs = ["a cat sat", "the dog ran far away today", "a dog", "the dog ran far away"]
    lengths = [3, 7, 2, 6]
    out = M.bleu_by_length(hyps, refs, lengths)
    assert list(out) == ["1-5", "6-10"]  # bucket order, empty buckets left out
    assert out["1-5"]["sentences"] == 2 and out["6-10"]["sentences"] == 2
    assert out["1-5"]["bleu"] == pytest.approx(M.bleu([hyps[0], hyps[2]], [refs[0], refs[2]]))
    assert out["6-10"]["bleu"] == pytest.approx(100.0)
    assert out["1-5"]["bleu"] < 100.0
