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
