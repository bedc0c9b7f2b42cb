"""`seq2bert train-vectors` and `evaluate-vectors` end to end on small made-up text: each method learns which
words share contexts, a killed run resumes to the vectors of an uninterrupted one, and mistakes in the input
are one-line errors."""

import random

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.data.vector_files import WordVectors, read_vectors, write_vectors
from seq2bert.models.static_vectors import word_vectors_at
from seq2bert.recipes import vectors as recipe
from seq2bert.recipes.vectors import evaluate_vectors, method_config, train_vectors

ANIMALS = ["cat", "dog", "horse", "cow", "sheep", "goat"]
METALS = ["iron", "gold", "silver", "copper", "tin", "lead"]


@pytest.fixture(scope="module")
def topics(tmp_path_factory):
    """Paragraphs about animals or about metals, never both: a word's neighbours are its own topic's."""
    rng = random.Random(0)
    paras = []
    for i in range(400):
        words = ANIMALS if i % 2 else METALS
        paras.append(" ".join(rng.choice(words) for _ in range(25)))
    path = tmp_path_factory.mktemp("text") / "topics.txt"
    path.write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    return path


def small(method: str, files, **train):
    cfg = method_config(method)
    model = {"vector_size": 16, "min_count": 1}
    if method != "glove":
        model |= {"negative": 3, "sample": 0.0}
    if method == "fasttext":
        model["bucket"] = 500
    overrides = {"max_epochs": 3 if method != "glove" else 30, **train}
    from dataclasses import replace

    return replace(
        cfg,
        model=replace(cfg.model, **model),
        data=replace(cfg.data, files=[str(f) for f in files], batch_size=64 if method != "glove" else 16),
        evaluation=replace(cfg.evaluation, analogies="", similarity=""),
        train=replace(cfg.train, **overrides),
    )


def cosine(wv: WordVectors, a: str, b: str) -> float:
    return float(torch.nn.functional.cosine_similarity(wv.vector(a), wv.vector(b), dim=0))


@pytest.mark.parametrize("method", ["skipgram", "cbow", "glove", "fasttext"])
def test_each_method_puts_words_of_one_topic_together(method, topics, tmp_path):
    row = train_vectors(small(method, [topics]), tmp_path / "run", progress_bar=False)
    wv = read_vectors(tmp_path / "run" / "vectors.txt")
    assert sorted(wv.words) == sorted(ANIMALS + METALS) and row["vocabulary"] == 12
    same = [cosine(wv, a, b) for t in (ANIMALS, METALS) for a in t for b in t if a < b]
    across = [cosine(wv, a, b) for a in ANIMALS for b in METALS]
    assert min(same) > max(across), (method, min(same), max(across))
    # the run's checkpoint loads through the registry and gives the same vectors
    loaded, model = word_vectors_at(tmp_path / "run")
    assert model is not None and torch.allclose(model.vectors_for(["cat"])[0][0], wv.vector("cat"), atol=1e-6)


def test_fasttext_composes_a_vector_for_a_word_it_never_saw(topics, tmp_path):
    train_vectors(small("fasttext", [topics]), tmp_path / "ft", progress_bar=False)
    _, model = word_vectors_at(tmp_path / "ft")
    vectors, known = model.vectors_for(["copper", "coppers", "zzz"])
    assert known.tolist() == [True, False, False]
    assert cosine(WordVectors(["a", "b"], vectors[:2]), "a", "b") > 0.5  # shares <co, cop, opp, …
    assert vectors[1].norm() > 0


def test_a_killed_run_resumes_to_the_vectors_of_an_uninterrupted_one(topics, tmp_path, monkeypatch):
    cfg = small("skipgram", [topics], save_every=7)
    train_vectors(cfg, tmp_path / "whole", progress_bar=False)
    made = {"n": 0}
    collate = recipe.WindowBatches.collate

    def dies(self, index):
        made["n"] += 1
        if made["n"] == 30:
            raise KeyboardInterrupt
        return collate(self, index)

    monkeypatch.setattr(recipe.WindowBatches, "collate", dies)
    with pytest.raises(KeyboardInterrupt):
        train_vectors(cfg, tmp_path / "killed", progress_bar=False)
    monkeypatch.setattr(recipe.WindowBatches, "collate", collate)
    train_vectors(cfg, tmp_path / "killed", resume=True, progress_bar=False)
    whole, resumed = read_vectors(tmp_path / "whole"), read_vectors(tmp_path / "killed")
    assert whole.words == resumed.words and torch.equal(whole.vectors, resumed.vectors)


def test_evaluate_vectors_scores_a_run_and_a_file_alike(topics, tmp_path):
    questions = tmp_path / "questions.txt"
    questions.write_text(": family\ncat dog iron gold\n: gram1-x\ncow goat tin lead\nfoo bar cat dog\n")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("cat\tdog\t9\ncat\tiron\t1\ngold\tsilver\t8\ncow\ttin\t2\nfoo\tcat\t3\n")
    train_vectors(small("skipgram", [topics]), tmp_path / "run", progress_bar=False)
    ev = recipe.VectorsEvalConfig(analogies=str(questions), similarity=str(pairs))
    row = evaluate_vectors(tmp_path / "run", ev)
    assert row["analogy_oov_rate"] == pytest.approx(1 / 3) and row["wordsim_oov_rate"] == pytest.approx(0.2)
    assert row["wordsim_spearman"] > 50  # same-topic pairs are the similar ones
    write_vectors(tmp_path / "glove.txt", read_vectors(tmp_path / "run"), "glove")
    again = evaluate_vectors(tmp_path / "glove.txt", ev)
    assert {k: v for k, v in again.items() if k != "vectors"} == {
        k: v for k, v in row.items() if k != "vectors"
    }


def test_the_commands_train_and_evaluate(topics, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["train-vectors", "--method", "cbow", str(topics), "--out", str(out), "--set", "model.min_count=1",
                 "--set", "model.vector_size=8", "--set", "train.max_epochs=1", "--set", "evaluation.analogies=",
                 "--set", "evaluation.similarity="])  # fmt: skip
    assert code == 0 and (out / "vectors.txt").is_file()
    assert "word2vec cbow (8 dimensions)" in capsys.readouterr().out
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("cat\tdog\t9\ncat\tiron\t1\n")
    assert main(["evaluate-vectors", str(out), "--analogies", "", "--similarity", str(pairs), "--json"]) == 0
    assert '"wordsim_spearman"' in capsys.readouterr().out


@pytest.mark.parametrize(
    "text, args, message",
    [
        ("... !!! ---\n", [], r"empty\.txt: no words in the text"),
        (
            "cat dog cat dog\n",
            ["--set", "model.min_count=1"],
            r"2 word\(s\) seen 1 times; negative sampling draws 5",
        ),
    ],
)
def test_bad_text_is_a_one_line_error(text, args, message, tmp_path, capsys):
    f = tmp_path / "empty.txt"
    f.write_text(text)
    assert main(["train-vectors", str(f), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("seq2bert: error:")
    assert __import__("re").search(message, err)


def test_bad_vector_and_test_files_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3\ncat 1 2 3\ndog 1 2\n")
    good = tmp_path / "good.txt"
    good.write_text("2 3\ncat 1 2 3\ndog 1 2 4\n")
    questions = tmp_path / "q.txt"
    questions.write_text(": s\ncat dog cat\n")
    for args, where in [
        ([str(bad)], "bad.txt:3"),
        ([str(good), "--analogies", str(questions), "--similarity", ""], "q.txt:2"),
    ]:
        assert main(["evaluate-vectors", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and where in err, err


def test_embed_gives_a_static_word_one_vector_in_every_sentence(topics, tmp_path, capsys):
    train_vectors(small("skipgram", [topics]), tmp_path / "run", progress_bar=False)
    wv = read_vectors(tmp_path / "run")
    from seq2bert.pipelines import embed, word_vectors

    got = word_vectors(["the cat sat", "a Cat ran off"], "cat", model=tmp_path / "run")
    assert torch.equal(got[0], wv.vector("cat")) and torch.equal(got[1], wv.vector("cat"))
    mean = embed(["cat dog unknownword"], model=tmp_path / "run")[0]
    assert torch.allclose(mean, (wv.vector("cat") + wv.vector("dog")) / 2)  # the words it has, averaged
    assert main(["embed", str(tmp_path / "run"), "the cat sat", "my cat ran", "--word", "cat"]) == 0
    assert "1.000  1.000" in capsys.readouterr().out  # one vector for every sense
    assert main(["embed", str(tmp_path / "run"), "the dog sat", "--word", "cat"]) == 2
    assert "'cat' is not in 'the dog sat'" in capsys.readouterr().err


def test_text_without_context_and_mismatched_methods_are_one_line_errors(tmp_path, capsys):
    alone = tmp_path / "alone.txt"
    alone.write_text("\n\n".join(["cat", "dog", "cow", "tin", "gold", "iron"] * 10) + "\n")
    for method in ("cbow", "skipgram", "glove"):
        assert main(["train-vectors", "--method", method, str(alone), "--out", str(tmp_path / method),
                     "--set", "model.min_count=1", "--set", "model.negative=2"] if method != "glove" else
                    ["train-vectors", "--method", method, str(alone), "--out", str(tmp_path / method),
                     "--set", "model.min_count=1"]) == 2  # fmt: skip
        assert "no two words of the vocabulary share a paragraph" in capsys.readouterr().err
    assert (
        main(["train-vectors", str(alone), "--out", str(tmp_path / "m"), "--set", "model.model_type=glove"])
        == 2
    )
    assert "with --method skipgram's training" in capsys.readouterr().err


def test_a_stale_corpus_in_the_run_directory_is_read_again(topics, tmp_path):
    train_vectors(small("skipgram", [topics]), tmp_path / "a", progress_bar=False)
    import shutil

    shutil.copytree(tmp_path / "a" / "corpus", tmp_path / "b" / "corpus")
    from dataclasses import replace

    cfg = small("skipgram", [topics])
    cfg = replace(cfg, model=replace(cfg.model, min_count=10_000_000))
    with pytest.raises(Exception, match="no word occurs 10000000 times"):
        train_vectors(cfg, tmp_path / "b", progress_bar=False)  # not the cached vocabulary of run a


def test_evaluating_no_vectors_is_a_one_line_error(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("0 16\n")
    assert main(["evaluate-vectors", str(empty)]) == 2
    assert "no vectors to score" in capsys.readouterr().err


def test_word_vectors_are_no_encoder_to_train_sentence_embeddings_from(topics, tmp_path, capsys):
    from tests.recipes.test_sentence_embedding_training import write_sts

    train_vectors(small("skipgram", [topics]), tmp_path / "run", progress_bar=False)
    rng = np.random.default_rng(0)
    train, valid = write_sts(tmp_path / "train.tsv", 16, rng), write_sts(tmp_path / "dev.tsv", 8, rng)
    code = main(["finetune", "--task", "sentence-embedding", "--init", str(tmp_path / "run"), "--train", str(train),
                 "--valid", str(valid), "--out", str(tmp_path / "se")])  # fmt: skip
    assert code == 2 and "sentence embeddings are trained from an encoder" in capsys.readouterr().err
