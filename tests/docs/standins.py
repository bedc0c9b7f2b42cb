"""Tiny stand-ins for what the README's examples name: ``../shared/data`` (a folder of the real one's layout
— multi30k, sst2, mrpc, conll2003, squad, corpus/gutenberg, wikitext2 — holding a few dozen lines each, made
here, so the examples never read the real data sets) and the files and checkpoints an example reads before
any example makes them (``gpt2/``, ``all-MiniLM-L6-v2/``, ``opus-mt-de-en/``, ``runs/m30k-transformer``,
``runs/mrpc/best``, ELMo's published files, …), made by our own recipes at tiny sizes or saved as tiny random models."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import torch

from seq2bert import config as C
from seq2bert.commands.common import data_dir_overrides
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import BertForSequenceClassification
from seq2bert.models.gpt.config import gpt2_tiny
from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.recipes.translation import TranslationConfig, train

SUBJECTS = [("Ein Hund", "A dog"), ("Eine Frau", "A woman"), ("Ein Mann", "A man"), ("Ein Kind", "A child")]
VERBS = [("läuft", "runs"), ("rennt", "runs"), ("spielt", "plays"), ("fährt", "rides")]
PLACES = [
    ("über die Wiese", "across the meadow"),
    ("durch das Gras", "through the grass"),
    ("am Fluss", "by the river"),
    ("in der Stadt", "in the city"),
]
WORDS = (
    "the a cat dog sat ran on under mat tree river bank money paid into he she it was is of and to in "
    "book story man woman house street old young saw found"
).split()
NAMES = ["Alice", "Sherlock Holmes", "Baker Street", "Paris", "London", "John Smith"]
# 27 books as the real folder holds (language models hold out 5 % of the documents), two named by the docs
BOOKS = ["pg98_a_tale_of_two_cities", "pg2852_hound_of_the_baskervilles", *(f"pg{n}_book" for n in range(25))]
GOOD, BAD = ["gripping", "funny", "great", "lovely"], ["dull", "boring", "awful", "poor"]
TRANSLATION = ["data.max_tokens=400", "model.dropout=0.0", "train.max_steps=2", "train.eval_every=2",
               "train.bf16=false"]  # fmt: skip
SIZES = {
    "bahdanau": ["model.model_type=bahdanau", "model.embedding_dim=16", "model.hidden_size=16",
                 "model.attention_size=16", "model.maxout_size=8"],
    "transformer": ["model.model_type=transformer", "model.d_model=16", "model.encoder_ffn_dim=16",
                    "model.decoder_ffn_dim=16", "model.encoder_layers=1", "model.decoder_layers=1",
                    "model.encoder_attention_heads=2", "model.decoder_attention_heads=2"],
}  # fmt: skip


def sentences(rng, n: int) -> list[str]:
    """Sentences of the corpus words, now and then a name (the entities of the ERNIE example)."""
    out = []
    for _ in range(n):
        words = list(rng.choice(WORDS, size=rng.integers(5, 11)))
        if rng.random() < 0.3:
            words.insert(int(rng.integers(len(words))), str(rng.choice(NAMES)))
        out.append(" ".join(words).capitalize() + " .")
    return out


def text(rng, paragraphs: int) -> str:
    return "\n\n".join(" ".join(sentences(rng, int(rng.integers(3, 6)))) for _ in range(paragraphs)) + "\n"


def write_gz(path: Path, lines: list[str]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def write_multi30k(folder: Path) -> None:
    pairs = [
        (f"{s} {v} {p} .", f"{se} {ve} {pe} .") for s, se in SUBJECTS for v, ve in VERBS for p, pe in PLACES
    ]
    order = np.random.default_rng(0).permutation(len(pairs))
    splits = {"train": order[:48], "val": order[48:56], "test_2016_flickr": order[56:]}
    folder.mkdir(parents=True)
    for split, rows in splits.items():
        for side, lang in enumerate(("de", "en")):
            write_gz(folder / f"{split}.{lang}.gz", [pairs[i][side] for i in rows])


def write_sst2(folder: Path, rng) -> None:
    folder.mkdir(parents=True)
    for split, n in (("train", 24), ("dev", 8)):
        rows = ["sentence\tlabel"]
        for k in range(n):
            words = list(rng.choice(WORDS[:12], size=4)) + [str(rng.choice(GOOD if k % 2 else BAD)), "film"]
            rows.append(f"{' '.join(words)} \t{k % 2}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def write_mrpc(folder: Path, rng) -> None:
    folder.mkdir(parents=True)
    for split, n in (("train", 16), ("dev", 8)):
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for k in range(n):
            a = sentences(rng, 1)[0]
            b = a if k % 2 else sentences(rng, 1)[0]
            rows.append(f"{k % 2}\t{2 * k}\t{2 * k + 1}\t{a}\t{b}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def write_conll(folder: Path, rng) -> None:
    folder.mkdir(parents=True)
    for split, n in (("train", 16), ("valid", 6)):
        lines = ["-DOCSTART- -X- -X- O", ""]
        for _ in range(n):
            words = [(str(w), "O") for w in rng.choice(WORDS, size=rng.integers(2, 6))]
            words.insert(int(rng.integers(len(words) + 1)), (str(rng.choice(["Paris", "Berlin"])), "B-LOC"))
            words[:0] = [("John", "B-PER"), ("Smith", "I-PER")]
            lines += [f"{w} NN B-NP {t}" for w, t in words] + [""]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def data_of_squad(rng):
    """split, n → a SQuAD v1.1 file's JSON of n questions about where a university is."""

    def squad(split: str, n: int) -> dict:
        paragraphs = []
        for i in range(n):
            place = str(rng.choice(["Paris", "Berlin", "Singapore"]))
            context = f"{sentences(rng, 1)[0]} The university is in {place} . {sentences(rng, 1)[0]}"
            answer = {"text": place, "answer_start": context.index(place, context.index("university"))}
            qas = [{"id": f"{split}{i}", "question": "Where is the university?", "answers": [answer]}]
            paragraphs.append({"context": context, "qas": qas})
        return {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}

    return squad


def write_squad(folder: Path, rng) -> None:
    folder.mkdir(parents=True)
    squad = data_of_squad(rng)
    for split, n in (("train", 8), ("dev", 4)):
        with gzip.open(folder / f"{split}-v1.1.json.gz", "wt", encoding="utf-8") as f:
            json.dump(squad(split, n), f)


def write_corpus(folder: Path, rng) -> None:
    (folder / "gutenberg").mkdir(parents=True)
    for book in BOOKS:
        (folder / "gutenberg" / f"{book}.txt").write_text(text(rng, 2), encoding="utf-8")
    (folder / "tinyshakespeare.txt").write_text(text(rng, 2), encoding="utf-8")


def write_wikitext(folder: Path, rng) -> None:
    folder.mkdir(parents=True)
    body = " ".join(sentences(rng, 12)).replace(" tree ", " <unk> ")
    for split in ("valid", "test"):  # the real folder's two files
        (folder / f"wiki.{split}.tokens").write_text(
            f" \n = Robert <unk> = \n \n {body} \n", encoding="utf-8"
        )


def write_stsb(folder: Path, rng) -> None:
    folder.mkdir(parents=True)
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    for split, n in (("train", 16), ("dev", 8)):
        rows = [header]
        for k in range(n):
            a = sentences(rng, 1)[0]
            b = a if k % 2 else sentences(rng, 1)[0]
            rows.append(
                f"{k}\tmain-captions\tMSRvid\t2012test\t{k}\tnone\tnone\t{a}\t{b}\t{5.0 * (k % 2):.3f}"
            )
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def own_files(workspace: Path, rng) -> None:
    """The user's own files the README's generic-task examples name: reviews.csv (text, label), pairs.jsonl
    (question, answer, label), scores.parquet (text, text2, score), topics.csv (text, topics "a|b"), quiz.csv
    (question, a–d, answer), my-squad.json, each with its -dev file."""
    from seq2bert.data.tables import TableWriter

    def review(k: int) -> dict:
        words = list(rng.choice(WORDS[:12], size=4)) + [str(rng.choice(GOOD if k % 2 else BAD)), "film"]
        return {"text": " ".join(words), "label": "good" if k % 2 else "bad"}

    tables = {
        "reviews": review,
        "pairs": lambda k: {"question": sentences(rng, 1)[0], "answer": sentences(rng, 1)[0], "label": k % 2},
        "scores": lambda k: {"text": sentences(rng, 1)[0], "text2": sentences(rng, 1)[0], "score": k % 5 + 0.5},
        "topics": lambda k: {"text": review(k)["text"], "topics": ["sport", "sport|news", "news"][k % 3]},
        "quiz": lambda k: {"question": sentences(rng, 1)[0], **{c: str(rng.choice(WORDS)) for c in "abcd"},
                           "answer": k % 4},
    }  # fmt: skip
    extensions = {"reviews": "csv", "pairs": "jsonl", "scores": "parquet", "topics": "csv", "quiz": "csv"}
    for name, row in tables.items():
        for suffix, n in (("", 16), ("-dev", 8)):
            with TableWriter(workspace / f"{name}{suffix}.{extensions[name]}") as table:
                table.write_all(row(k) for k in range(n))
    for name in ("reviews-test", "new-reviews"):
        with TableWriter(workspace / f"{name}.csv") as table:
            table.write_all(review(k) for k in range(6))
    squad = data_of_squad(rng)
    for suffix, n in (("", 8), ("-dev", 4)):
        (workspace / f"my-squad{suffix}.json").write_text(
            json.dumps(squad(suffix or "train", n)), encoding="utf-8"
        )


def shared_data(root: Path) -> Path:
    """``root/shared/data``: every data set the examples name, a few dozen lines each."""
    data, rng = root / "shared" / "data", np.random.default_rng(0)
    write_multi30k(data / "multi30k")
    write_sst2(data / "sst2", rng)
    write_mrpc(data / "mrpc", rng)
    write_conll(data / "conll2003", rng)
    write_squad(data / "squad", rng)
    write_stsb(data / "stsb", rng)
    write_corpus(data / "corpus", rng)
    write_wikitext(data / "wikitext2", rng)
    return data


def translation_run(out: Path, model_type: str, data: Path) -> None:
    """A translation run of ``model_type`` trained for two steps on the multi30k stand-in."""
    files = data_dir_overrides(data / "multi30k", "de", "en", "val", "test_2016_flickr")
    cfg = C.build(TranslationConfig, overrides=[*files, *TRANSLATION, *SIZES[model_type]])
    train(cfg, out, progress_bar=False)


def gpt2_dir(out: Path, corpus: Path) -> None:
    """A tiny random GPT-2 with a byte-level BPE trained on the corpus stand-in."""
    tok = Tokenizer.train(
        sorted(corpus.rglob("*.txt")), kind="bytelevel-bpe", vocab_size=300, min_frequency=1
    )
    eot = tok.eos_token_id
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        gpt2_tiny(vocab_size=tok.vocab_size, bos_token_id=eot, eos_token_id=eot, n_positions=128)
    )
    model.save_pretrained(out, tokenizer=tok)


def mrpc_run(out: Path, corpus: Path) -> None:
    """A run directory whose best/ is a tiny random BERT sentence-pair classifier with MRPC's labels."""
    tok = Tokenizer.train(sorted(corpus.rglob("*.txt")), kind="wordpiece", vocab_size=200, lowercase=True)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=64,
        id2label={0: "0", 1: "1"},
    )
    save_bert(BertForSequenceClassification(cfg), out / "best", tok)


def elmo_files(workspace: Path) -> None:
    """bilm-tf's published layout (elmo_options.json, elmo_weights.hdf5) with tiny random weights."""
    from tests.models.test_elmo import write_bilm_tf

    folder = workspace / ".elmo"
    folder.mkdir()
    write_bilm_tf(folder, np.random.default_rng(0))
    (folder / "options.json").rename(workspace / "elmo_options.json")
    (folder / "weights.hdf5").rename(workspace / "elmo_weights.hdf5")
    folder.rmdir()


def glove_file(path: Path) -> None:
    """Published GloVe vectors' text layout (no header: a word and its 100 numbers a line), random."""
    from seq2bert.data.vector_files import WordVectors, write_vectors

    vectors = torch.from_numpy(np.random.default_rng(3).normal(size=(len(WORDS), 100)).astype(np.float32))
    write_vectors(path, WordVectors(list(WORDS), vectors), "glove")


def marian_dir(workspace: Path) -> None:
    """``opus-mt-de-en/``: a tiny random MarianMT directory as transformers writes it."""
    from tests.models.test_marian_dir import write_marian_dir

    folder = workspace / ".marian"
    folder.mkdir()
    write_marian_dir(folder, "opus-mt-de-en").rename(workspace / "opus-mt-de-en")
    shutil.rmtree(folder)


def readme_workspace(workspace: Path, data: Path, minilm: Path) -> None:
    """What the README's examples read before any of them makes it, at the paths they name."""
    workspace.mkdir(parents=True)
    corpus = data / "corpus"
    (workspace / "all-MiniLM-L6-v2").symlink_to(minilm, target_is_directory=True)
    (workspace / "path" / "to").mkdir(parents=True)
    shutil.copy(minilm / "vocab.txt", workspace / "path" / "to" / "vocab.txt")
    shutil.copy(corpus / "tinyshakespeare.txt", workspace / "corpus.txt")
    shutil.copytree(corpus / "gutenberg", workspace / "books")
    (workspace / "held-out.txt").write_text(text(np.random.default_rng(1), 2), encoding="utf-8")
    (workspace / "long.txt").write_text(
        " ".join(["Ein Hund läuft über die Wiese ."] * 60) + "\n", encoding="utf-8"
    )
    gpt2_dir(workspace / "gpt2", corpus)
    mrpc_run(workspace / "runs" / "mrpc", corpus)
    for model_type in SIZES:
        translation_run(workspace / "runs" / f"m30k-{model_type}", model_type, data)
    elmo_files(workspace)
    glove_file(workspace / "glove.6B.100d.txt")
    marian_dir(workspace)
    own_files(workspace, np.random.default_rng(2))
