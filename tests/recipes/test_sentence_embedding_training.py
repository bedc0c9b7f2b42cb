"""`seq2bert finetune --task sentence-embedding` end to end with a tiny BERT on pairs whose similarity is plain
from their words (each sentence is about one of a few topics): scored pairs (CoSENT), pairs and triplets
(in-batch negatives), single sentences (unsupervised SimCSE); the best checkpoint is a sentence-transformers
directory that `SentenceTransformer` and `seq2bert embed` read alike; `seq2bert evaluate DIR --task
sentence-embedding --valid FILE` scores any directory as it is; every flaw of a file is one line, exit 2."""

import json

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.models.bert.pretrained import load_bert
from seq2bert.pipelines import embed
from seq2bert.recipes.sentence_embedding import collate_texts, pooled
from seq2bert.tasks.data import FinetuneDataConfig, read_user_files
from tests.recipes.tiny_bert import tiny_bert

FILLER = "the a of on in and to was is it this that".split()
TOPICS = [
    "cat dog horse cow".split(),
    "car bus train plane".split(),
    "red blue green yellow".split(),
    "piano guitar violin drum".split(),
]
STS = ["--text-column", "sentence1", "--pair-column", "sentence2", "--label-column", "score"]
FAST = ["--set", "train.lr=3e-3", "--set", "data.batch_size=16", "--set", "train.log_every=5"]


@pytest.fixture(scope="module")
def init_dir(tmp_path_factory):
    """A tiny, randomly initialised BERT (a pretraining checkpoint: no sentence-transformers modules)."""
    return tiny_bert(tmp_path_factory.mktemp("init"), FILLER + [w for t in TOPICS for w in t])


def sentence(rng, topic):
    words = list(rng.choice(FILLER, size=rng.integers(3, 7))) + list(rng.choice(TOPICS[topic], size=2))
    rng.shuffle(words)
    return " ".join(words)


def write_sts(path, n, rng):
    """An STS-B-shaped TSV: two sentences and a 0–5 score (5: the same topic, 0: another)."""
    lines = ["index\tsentence1\tsentence2\tscore"]
    for i in range(n):
        a = int(rng.integers(len(TOPICS)))
        b = a if rng.random() < 0.5 else int(rng.integers(len(TOPICS)))
        lines.append(f"{i}\t{sentence(rng, a)}\t{sentence(rng, b)}\t{5.0 if a == b else 0.0:.3f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def said(rng, words):
    """``words`` among filler words."""
    words = list(rng.choice(FILLER, size=rng.integers(3, 7))) + list(words)
    rng.shuffle(words)
    return " ".join(words)


def write_pairs(path, n, rng, negatives=False):
    """A JSON Lines file of (anchor, positive[, negative]): the positive says the anchor's two content words
    among other filler words, the negative two others."""
    content = [w for t in TOPICS for w in t]
    with open(path, "w") as f:
        for _ in range(n):
            words = rng.choice(content, size=2, replace=False)
            row = {"anchor": said(rng, words), "positive": said(rng, words)}
            if negatives:
                row["negative"] = said(rng, rng.choice([w for w in content if w not in words], size=2))
            f.write(json.dumps(row) + "\n")
    return path


def finetune(init, out, train, valid, *extra):
    return main(
        ["finetune", "--task", "sentence-embedding", "--init", str(init), "--train", str(train),
         "--valid", str(valid), "--out", str(out), *FAST, *extra]
    )  # fmt: skip


def evaluate(directory, valid, capsys, *columns):
    """`seq2bert evaluate DIR --task sentence-embedding --valid FILE`: its metrics, as printed."""
    capsys.readouterr()
    argv = ["evaluate", str(directory), "--task", "sentence-embedding", "--valid", str(valid), *columns]
    assert main(argv) == 0
    header, _, row = capsys.readouterr().out.strip().splitlines()[-3:]
    names = [c.strip() for c in header.strip("|").split("|")]
    return dict(zip(names, [c.strip() for c in row.strip("|").split("|")], strict=True))


def sentence_transformers_vectors(directory, texts):
    st = pytest.importorskip("sentence_transformers")
    return torch.from_numpy(st.SentenceTransformer(str(directory), device="cpu").encode(texts))


TEXTS = ["the cat and a dog", "a red bus on the blue train", "violin", "it was this piano that the drum"]


def test_scored_pairs_learn_and_best_is_a_sentence_transformers_directory(init_dir, tmp_path, capsys):
    rng = np.random.default_rng(0)
    train, valid = write_sts(tmp_path / "train.tsv", 320, rng), write_sts(tmp_path / "dev.tsv", 80, rng)
    before = float(evaluate(init_dir, valid, capsys, *STS)["dev spearman"])  # plain mean pooling
    assert finetune(init_dir, tmp_path / "run", train, valid, *STS, "--set", "train.max_epochs=3") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["loss"] == "cosent" and results["shape"] == "scored" and results["pooling"] == "mean"
    # a binary gold score caps Spearman near 87; plain mean pooling of the random encoder is near 0
    assert results["dev_spearman"] >= 70 and results["dev_spearman"] > before + 40, (before, results)
    best = tmp_path / "run" / "best"
    modules = json.loads((best / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling"]  # not normalised
    assert json.loads((best / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    assert json.loads((best / "config.json").read_text())["architectures"] == ["BertModel"]
    # the validation score of training is the one `seq2bert evaluate` gives the directory as it is
    again = evaluate(best, valid, capsys, *STS)
    assert float(again["dev spearman"]) == pytest.approx(results["dev_spearman"], abs=0.01)
    # predictions.jsonl: each pair's cosine and its gold score in [0, 1]
    predictions = [
        json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    ]
    assert len(predictions) == 80 and {p["label"] for p in predictions} == {0.0, 1.0}
    # sentence-transformers reads the directory with the embeddings `seq2bert embed` gives
    assert main(["embed", str(best), *TEXTS, "--out", str(tmp_path / "v.npy"), "--bf16", "false"]) == 0
    ours = torch.from_numpy(np.load(tmp_path / "v.npy"))
    torch.testing.assert_close(sentence_transformers_vectors(best, TEXTS), ours, rtol=0, atol=1e-5)


def test_pairs_and_triplets_train_on_in_batch_negatives_and_are_scored_by_recall(init_dir, tmp_path, capsys):
    rng = np.random.default_rng(1)
    train = write_pairs(tmp_path / "train.jsonl", 320, rng)
    valid = write_pairs(tmp_path / "valid.jsonl", 64, rng)
    pairs = ["--text-column", "anchor", "--pair-column", "positive"]
    before = evaluate(init_dir, valid, capsys, *pairs)
    assert finetune(init_dir, tmp_path / "pairs", train, valid, *pairs, "--set", "train.max_epochs=2") == 0
    results = json.loads((tmp_path / "pairs" / "results.json").read_text())
    assert results["loss"] == "mnrl" and results["shape"] == "pairs"
    # recall@1: how often the own positive is the nearest of the 64 (1/64 by chance)
    assert results["dev_recall_at_1"] >= float(before["dev recall at 1"]) + 10, (before, results)
    assert results["dev_mrr"] > float(before["dev mrr"])
    log = [json.loads(line) for line in (tmp_path / "pairs" / "log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r["split"] == "train"]
    assert losses[-1] < losses[0]
    # triplets: the negative column, MNRL with the hard negatives (default) or the triplet loss
    train = write_pairs(tmp_path / "t.jsonl", 64, rng, negatives=True)
    triplets = [*pairs, "--set", "data.negative_column=negative", "--set", "train.max_steps=4"]
    for loss in ("mnrl", "triplet"):
        out = tmp_path / f"triplets-{loss}"
        assert finetune(init_dir, out, train, valid, *triplets, "--set", f"embedding.loss={loss}") == 0
        results = json.loads((out / "results.json").read_text())
        assert results["shape"] == "triplets" and results["loss"] == loss and results["steps"] == 4


def test_simcse_trains_on_sentences_with_dropout_as_the_only_augmentation(init_dir, tmp_path, capsys):
    rng = np.random.default_rng(2)
    sentences = tmp_path / "books.txt"
    sentences.write_text("\n".join(sentence(rng, int(rng.integers(len(TOPICS)))) for _ in range(96)) + "\n\n")
    valid = write_sts(tmp_path / "dev.tsv", 48, rng)
    assert finetune(init_dir, tmp_path / "simcse", sentences, valid, *STS, "--set", "train.max_steps=6") == 0
    results = json.loads((tmp_path / "simcse" / "results.json").read_text())
    assert results["loss"] == "simcse" and results["shape"] == "sentences" and results["train_examples"] == 96
    best = tmp_path / "simcse" / "best"
    assert json.loads((best / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    # each sentence is its own positive: the same ids twice, which only dropout tells apart
    data = FinetuneDataConfig(task="sentence-embedding", train=str(sentences), valid=str(valid), **COLUMNS)
    examples = read_user_files(data, ("train",))["train"][:4]
    model, tok = load_bert(best)
    features = data.spec.features(examples, tok, None, data)
    assert all(f["input_ids"][0] == f["input_ids"][1] for f in features)
    batch = collate_texts(features, tok.pad_token_id)
    with torch.no_grad():
        views = pooled(model.train(), batch, "pooling_mode_mean_tokens", False)  # (4, 2, H)
        assert not torch.allclose(views[:, 0], views[:, 1])
        views = pooled(model.eval(), batch, "pooling_mode_mean_tokens", False)
        torch.testing.assert_close(views[:, 0], views[:, 1])


COLUMNS = {"text_column": "sentence1", "pair_column": "sentence2", "label_column": "score"}


def test_a_folder_of_books_is_simcses_sentences_cut_from_their_running_text(tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    (books / "pg1.txt").write_text(
        "The Project Gutenberg eBook of a tiny book\n*** START OF THE PROJECT GUTENBERG EBOOK ***\n"
        "CHAPTER I.\n\nThe cat sat on the mat. It was a warm\nday in the town, and the dog slept.\n\n"
        "“Yes.” Then the rain came down on everyone.\n*** END OF THE PROJECT GUTENBERG EBOOK ***\nLicence text."
    )
    (books / "notes.md").write_text("Not a book at all, and not read by anyone.")
    data = FinetuneDataConfig(task="sentence-embedding", train=str(books), valid=str(books))
    examples = read_user_files(data, ("train",))["train"]
    assert [e.texts for e in examples] == [
        ("The cat sat on the mat.",),
        ("It was a warm day in the town, and the dog slept.",),
        ("Then the rain came down on everyone.",),
    ]


def test_cls_pooling_and_normalisation_are_written_and_read_alike(init_dir, tmp_path):
    rng = np.random.default_rng(3)
    train, valid = write_sts(tmp_path / "train.tsv", 64, rng), write_sts(tmp_path / "dev.tsv", 32, rng)
    settings = [
        "--set",
        "embedding.pooling=cls",
        "--set",
        "embedding.normalize=true",
        "--set",
        "train.max_steps=3",
    ]
    settings += ["--set", "embedding.loss=cosine"]
    assert finetune(init_dir, tmp_path / "run", train, valid, *STS, *settings) == 0
    best = tmp_path / "run" / "best"
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((best / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Normalize"] and (best / "2_Normalize").is_dir()
    assert json.loads((best / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"] is True
    ours = embed(TEXTS, str(best), bf16=False)
    torch.testing.assert_close(ours.norm(dim=-1), torch.ones(len(TEXTS)))
    model, tok = load_bert(best)
    with torch.no_grad():
        cls = model(**dict(tok.encode_batch(TEXTS[:1], return_tensors="pt"))).last_hidden_state[0, 0]
    torch.testing.assert_close(ours[0], torch.nn.functional.normalize(cls, dim=0), rtol=0, atol=1e-6)
    torch.testing.assert_close(sentence_transformers_vectors(best, TEXTS), ours, rtol=0, atol=1e-5)


def test_all_minilm_l6_v2_trains_a_few_steps_and_sentence_transformers_reads_it_alike(minilm_dir, tmp_path):
    rng = np.random.default_rng(4)
    train, valid = write_sts(tmp_path / "train.tsv", 24, rng), write_sts(tmp_path / "dev.tsv", 16, rng)
    settings = ["--set", "train.max_steps=2", "--set", "data.batch_size=12", "--set", "train.lr=2e-5"]
    assert finetune(minilm_dir, tmp_path / "run", train, valid, *STS, *settings) == 0
    best = tmp_path / "run" / "best"
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["pooling"] == "mean" and results["normalize"] is True  # its own modules, kept
    assert json.loads((best / "sentence_bert_config.json").read_text())["max_seq_length"] == 256
    texts = [*TEXTS, "A man is playing a flute while two dogs run across the snowy field."]
    ours = embed(texts, str(best), bf16=False)
    torch.testing.assert_close(sentence_transformers_vectors(best, texts), ours, rtol=0, atol=1e-5)
    assert not torch.allclose(ours, embed(texts, str(minilm_dir), bf16=False), atol=1e-4)  # it trained


BAD = {  # the file's text, the words its one-line error holds
    "empty text": ("sentence1\tsentence2\tscore\na cat\t0\t1\nthe dog\t\t4\n", "train.tsv:3", "is empty"),
    "score not a number": (
        "sentence1\tsentence2\tscore\na cat\tthe cat\thigh\n",
        "train.tsv:2",
        "not a number",
    ),
    "score out of range": (
        "sentence1\tsentence2\tscore\na cat\tthe cat\t7.5\n",
        "train.tsv:2",
        "out of range",
    ),
    "no such column": ("s1\ts2\tscore\na cat\tthe cat\t1\n", "no column 'sentence1'", "s1, s2, score"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_training_file_is_one_line_naming_its_line_and_exit_2(init_dir, tmp_path, capsys, case):
    text, *said = BAD[case]
    (tmp_path / "train.tsv").write_text(text)
    valid = write_sts(tmp_path / "dev.tsv", 8, np.random.default_rng(5))
    assert finetune(init_dir, tmp_path / "run", tmp_path / "train.tsv", valid, *STS) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(s in err for s in said), err
    assert not (tmp_path / "run" / "best").exists()


def test_bad_sentences_settings_and_validation_files_are_one_line_and_exit_2(init_dir, tmp_path, capsys):
    valid = write_sts(tmp_path / "dev.tsv", 8, np.random.default_rng(6))
    (tmp_path / "empty.txt").write_text("\n  \n")
    cases = [  # (training file, validation file, extra flags, the words of the one-line error)
        (tmp_path / "empty.txt", valid, STS, ["empty.txt:1", "no sentences"]),
        (valid, valid, [*STS, "--set", "embedding.loss=triplet"], ["embedding.loss", "scored"]),
        (valid, valid, [*STS, "--set", "embedding.pooling=sum"], ["embedding.pooling", "sum"]),
        (valid, tmp_path / "empty.txt", STS, ["empty.txt:1", "no sentences"]),
        (valid, valid, ["--text-column", "sentence1"], ["dev.tsv", "validation file needs pairs"]),
        (valid, valid, [*STS, "--model", "bilstm"], ["model", "--init"]),
        (valid, valid, [*STS, "--set", "train.lora.r=8"], ["train.lora.r", "sentence-embedding"]),
    ]
    for i, (train, dev, extra, said) in enumerate(cases):
        assert finetune(init_dir, tmp_path / f"run{i}", train, dev, *extra) == 2, said
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and all(s in err for s in said), (said, err)


@pytest.mark.data
def test_stsb_is_read_by_the_generic_reader_and_scored_as_sentence_transformers_scores_it(
    shared_data, minilm_dir
):
    scipy = pytest.importorskip("scipy.stats")
    folder = shared_data / "stsb"
    data = FinetuneDataConfig(
        task="sentence-embedding", train=str(folder / "train.tsv"), valid=str(folder / "dev.tsv"), **COLUMNS
    )
    splits = read_user_files(data, ("train", "dev"))
    assert len(splits["train"]) == 5749 and len(splits["dev"]) == 1500  # GLUE's STS-B
    first = splits["dev"][0]
    assert first.texts == ("A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.")
    assert first.score == 1.0 and all(0 <= e.score <= 1 for e in splits["train"])
    assert splits["train"][2103].texts[0] == "\"Oh, you're such a good person!"  # a quote is text in a TSV
    from seq2bert.recipes.sentence_embedding import evaluate_embeddings

    n = 200
    data.max_eval_examples = n
    row = evaluate_embeddings(minilm_dir, data)
    dev = splits["dev"][:n]
    a = sentence_transformers_vectors(minilm_dir, [e.texts[0] for e in dev])
    b = sentence_transformers_vectors(minilm_dir, [e.texts[1] for e in dev])
    cosines = torch.nn.functional.cosine_similarity(a, b).numpy()
    expected = 100 * scipy.spearmanr([e.score for e in dev], cosines)[0]
    assert row["examples"] == n and row["dev_spearman"] == pytest.approx(expected, abs=1e-3)


def test_a_run_resumes_from_its_last_checkpoint(init_dir, tmp_path):
    rng = np.random.default_rng(7)
    train, valid = write_sts(tmp_path / "train.tsv", 48, rng), write_sts(tmp_path / "dev.tsv", 16, rng)
    assert finetune(init_dir, tmp_path / "run", train, valid, *STS, "--set", "train.max_steps=2") == 0
    assert finetune(init_dir, tmp_path / "run", train, valid, *STS, "--set", "train.max_steps=2") == 2
    more = [*STS, "--set", "train.max_steps=4", "--resume"]
    assert finetune(init_dir, tmp_path / "run", train, valid, *more) == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["steps"] == 4
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert (
        steps == sorted(steps) and steps[-1] == 4 and (tmp_path / "run" / "best" / "modules.json").is_file()
    )
