"""Data files that are missing, of the wrong kind or silently wrong (issue 41, the data parts of items 4, 5 and
6) end with one line naming the file (and line) and what was expected, exit status 2, no traceback — or, where
the papers' data needs leniency, are read with one warning naming the file and the count:

* a task folder without a file a split reads (every task of the registry, train and dev);
* a CoNLL tag of no IOB / IOB2 / IOBES scheme (``X-FOO``), an empty GLUE sentence (QQP's two kept, warned);
* the same pretraining file given twice (read once, warned);
* old Mac OS files (CR line ends) read line by line, not as one line;
* a translation file without pairs, named;
* a folder where a file is expected, /dev/null, a file where a folder is expected: said as such.

And every real data set in ../shared/data still reads."""

import gzip
import logging
from pathlib import Path

import pytest

from seq2bert.cli import main
from seq2bert.data.config import DataConfig
from seq2bert.data.conll import read_conll
from seq2bert.data.glue import read_glue
from seq2bert.data.parallel import read_lines, read_parallel
from seq2bert.data.pretraining import Skipped, iter_paragraphs, prepare_corpus, text_files
from seq2bert.data.text_files import CHUNK, read_text_lines
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import DataError
from seq2bert.recipes.pretrain_data import lexicon
from seq2bert.recipes.translation import load_pairs
from seq2bert.tasks.data import FinetuneDataConfig, labelled_dev, read_task, task_examples
from seq2bert.tasks.registry import TASKS
from tests.reliability.conftest import one_line

# one good line of each task's files (header and a row), enough for its reader
SST2 = "sentence\tlabel\na fine film \t1\n"
MRPC = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tHe came .\tHe arrived .\n"
CONLL = "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def refused(function, *args) -> str:
    with pytest.raises(DataError) as info:
        function(*args)
    message = str(info.value)
    assert "\n" not in message
    return message


def cli(argv: list, capsys) -> str:
    """The command's one stderr line; its exit status is 2."""
    assert main([str(a) for a in argv]) == 2
    return one_line(capsys)


# --- item 4: a task folder without a file a split reads


@pytest.mark.parametrize("task", sorted(name for name, t in TASKS.items() if not t.user_files))
def test_every_task_names_the_file_a_split_needs(task, tmp_path):
    spec = TASKS[task]
    data = FinetuneDataConfig(task=task, path=str(tmp_path))
    write(tmp_path / "notes.md", "not the task's data\n")
    message = refused(task_examples, data, 0)  # the folder holds neither file: dev, looked for first
    assert message.startswith(f"{tmp_path}: no {task} dev file (expected {' or '.join(spec.files['dev'])};")
    assert message.endswith("the folder holds notes.md)")
    assert refused(labelled_dev, data) == message  # `evaluate --task --data` reads the dev file alone
    dev = spec.files["dev"][0].replace("*", "")
    write(tmp_path / dev, b"")  # the dev file, empty: the task's reader refuses it, or it holds no example
    assert str(tmp_path / dev) in refused(read_task, data)


def test_finetune_and_evaluate_without_dev_or_train_file(bert_runs, tmp_path, capsys):
    """Before: `finetune --task sst2` on a folder without dev.tsv raised a KeyError (issue 41, item 4)."""
    folder, init = tmp_path / "sst2", bert_runs["pretrained"] / "best"
    write(folder / "train.tsv", SST2)
    finetune = ["finetune", "--task", "sst2", "--init", init, "--data", folder, "--out", tmp_path / "run"]
    says = cli(finetune, capsys)
    assert f"{folder}: no sst2 dev file (expected dev.tsv; the folder holds train.tsv)" in says
    assert cli(["evaluate", bert_runs["sequence"], "--task", "sst2", "--data", folder], capsys) == says
    (folder / "train.tsv").rename(folder / "dev.tsv")
    says = cli(finetune, capsys)
    assert f"{folder}: no sst2 train file (expected train.tsv; the folder holds dev.tsv)" in says


# --- item 5: silently wrong task data


def test_conll_tag_of_no_scheme_is_refused_naming_file_and_line(bert_runs, tmp_path, capsys):
    """Before: X-FOO became a label, seqeval warned four times, exit 0."""
    valid = write(tmp_path / "ner" / "valid.txt", CONLL + "Paris NNP B-NP X-FOO\n")
    write(tmp_path / "ner" / "train.txt", CONLL)
    assert refused(read_conll, valid) == (
        f"{valid}:5: NER tag 'X-FOO' in the last column (expected O or an IOB/IOB2/IOBES tag: B-, I-, E- or S- "
        "and the entity type, e.g. B-PER)"
    )
    for tag in ("PER", "B-", "L-PER", "b-PER", "B_PER"):
        assert f":5: NER tag {tag!r}" in refused(read_conll, write(valid, CONLL + f"Paris NNP B-NP {tag}\n"))
    # the schemes seqeval's entities are made of all read: IOB (I- opens an entity), IOB2, IOBES
    iobes = write(tmp_path / "iobes.txt", "New B-LOC\nYork E-LOC\nis O\nParis S-LOC\n\nin I-LOC\n")
    assert [s.tags for s in read_conll(iobes)] == [["B-LOC", "E-LOC", "O", "S-LOC"], ["I-LOC"]]
    write(valid, CONLL + "Paris NNP B-NP X-FOO\n")
    argv = ["finetune", "--task", "conll2003", "--init", bert_runs["pretrained"] / "best"]
    says = cli([*argv, "--data", tmp_path / "ner", "--out", tmp_path / "run"], capsys)
    assert f"{valid}:5: NER tag 'X-FOO'" in says


@pytest.mark.parametrize(
    "task, text, line, column",
    [
        ("sst2", SST2 + " \t0\n", 3, "sentence"),  # SST-2's sentences end with a space: blank is empty
        ("sst2", SST2 + "\t1\n", 3, "sentence"),
        ("mrpc", MRPC + "0\t3\t4\tA dog .\t\n", 3, "#2 String"),
        ("mrpc", MRPC + "0\t3\t4\t\tA dog .\n", 3, "#1 String"),
        ("rte", "index\tsentence1\tsentence2\tlabel\n0\tA .\t \tentailment\n", 2, "sentence2"),
        ("cola", "gj04\t1\t\tThey left .\nclc95\t0\t*\t\n", 2, "sentence"),
    ],
)
def test_empty_glue_sentence_is_refused_naming_file_and_line(task, text, line, column, tmp_path):
    """Before: an empty SST-2 sentence or MRPC string was an example like any other."""
    path = write(tmp_path / "train.tsv", text)
    assert refused(read_glue, task, path) == f"{path}:{line}: empty {column!r} (expected a sentence)"


def test_qqp_empty_questions_are_kept_and_warned_once(tmp_path, caplog):
    """GLUE's QQP train.tsv holds two pairs with an empty question2, which BERT trained on: read, one
    warning naming the file, the count and the lines."""
    header = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
    rows = [
        "1\t1\t2\tWhy ?\tHow ?\t0",
        "2\t3\t4\tHow can I create an Android app?\t\t0",
        "3\t5\t6\tWho ?\t\t0",
    ]
    path = write(tmp_path / "train.tsv", header + "\n".join(rows) + "\n")
    with caplog.at_level(logging.WARNING, logger="seq2bert.data.glue"):
        examples = read_glue("qqp", path)
    assert [e.text_b for e in examples] == ["How ?", "", ""]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"{path}: 2 qqp example(s) with an empty text, kept as the GLUE data has them (lines 3, 4)"
    ]


def test_task_file_without_examples_is_named(tmp_path, capsys):
    write(tmp_path / "train.tsv", SST2)
    write(tmp_path / "dev.tsv", "sentence\tlabel\n")  # a header alone
    message = refused(read_task, FinetuneDataConfig(task="sst2", path=str(tmp_path)))
    assert message == f"{tmp_path / 'dev.tsv'}: no sst2 examples (expected the dev examples)"


# --- item 5: the same pretraining file given twice


def test_the_same_pretraining_file_twice_is_read_once_with_a_warning(tmp_path, caplog):
    """Before: `pretrain a.txt a.txt` (or a folder and a file in it) doubled the file's documents silently.
    Read once — the files named are a set; a file's weight is doubled by a copy, not a repeated argument —
    with one warning naming it."""
    a = write(tmp_path / "books" / "a.txt", "One document here.\n\nAnother one there.\n")
    b = write(tmp_path / "books" / "sub" / "b.txt", "A third document.\n")
    (tmp_path / "link.txt").symlink_to(a)
    with caplog.at_level(logging.WARNING, logger="seq2bert.data.pretraining"):
        files = text_files(
            [str(a), str(tmp_path / "books"), str(a), str(tmp_path / "link.txt")], "data.files"
        )
    assert files == [a, b]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"data.files: 1 file(s) given more than once, each read once: {a} (4 times)"]
    tok = Tokenizer.train([a, b], kind="wordpiece", vocab_size=60, lowercase=True)
    once = prepare_corpus([a, b], tok, tmp_path / "once", progress=False)
    twice = prepare_corpus([a, a, b], tok, tmp_path / "twice", progress=False)  # the Python API too
    assert once["documents"] == twice["documents"] == 3 and once["tokens"] == twice["tokens"]


# --- item 6: old Mac OS files (CR line ends)


def test_cr_line_ends_are_read_as_lines(tmp_path):
    """Before: a CR-only file was one line — "train.de has 1 lines but train.en has 3"."""
    de = write(tmp_path / "train.de", "ein Hund\rzwei Katzen\rdrei Pferde\r")
    en = write(tmp_path / "train.en", "a dog\ntwo cats\nthree horses\n")
    expected = [("ein Hund", "a dog"), ("zwei Katzen", "two cats"), ("drei Pferde", "three horses")]
    assert read_parallel(de, en).pairs == expected
    gz = write(tmp_path / "train.de.gz", gzip.compress(b"ein Hund\rzwei Katzen\rdrei Pferde"))
    crlf = write(tmp_path / "crlf.en", "a dog\r\ntwo cats\r\nthree horses\r\n")
    assert read_parallel(gz, crlf).pairs == expected
    assert read_lines(write(tmp_path / "tab.tsv", "a\r\rb")) == ["a", "", "b"]
    sst2 = write(tmp_path / "dev.tsv", SST2.replace("\n", "\r") + "bleak \t0\r")
    assert [(e.text_a, e.label) for e in read_glue("sst2", sst2)] == [("a fine film ", 1), ("bleak ", 0)]
    conll = write(tmp_path / "valid.txt", CONLL.replace("\n", "\r"))
    assert [s.words for s in read_conll(conll)] == [["EU", "rejects"], ["Peter"]]
    # a pretraining corpus: its blank lines still end documents
    books = write(tmp_path / "book.txt", "One .\rTwo .\r\rThree .\r")
    assert list(iter_paragraphs(books, "blank_line", False, Skipped())) == [
        "One . Two .",
        None,
        "Three .",
        None,
    ]
    assert list(read_text_lines(books)) == ["One .", "Two .", "", "Three ."]  # a vocabulary's training text


def test_line_ends_across_reads(tmp_path):
    """A CRLF cut between two reads stays one line end; CR-only lines longer than a read stay whole; a CR
    inside a line of an LF file stays in its line."""
    long = "x" * (CHUNK + 10)
    cut = write(tmp_path / "cut.txt", "y" * (CHUNK - 1) + "\r\nsecond\r\n")
    assert list(read_text_lines(cut)) == ["y" * (CHUNK - 1), "second"]
    cr = write(tmp_path / "cr.txt", f"{long}\rshort\r{long}")
    assert list(read_text_lines(cr)) == [long, "short", long]
    lf = write(tmp_path / "lf.txt", f"{long}\nin a\rline\nlast")
    assert list(read_text_lines(lf)) == [long, "in a\rline", "last"]


# --- item 6: the file without pairs, a folder or a device where a file is expected, and the reverse


def test_translation_file_without_pairs_is_named(tmp_path, capsys):
    """Before: "data: no training pairs", naming no file."""
    de, en = write(tmp_path / "train.de", ""), write(tmp_path / "train.en", "")
    says = cli(["train", "--data", tmp_path, "--src", "de", "--tgt", "en", "--out", tmp_path / "run"], capsys)
    assert f"{de} + {en}: no train pairs (no lines; expected a sentence pair a line)" in says
    write(de, "\n \n"), write(en, "\n\n")
    skipping = DataConfig(task="files", train_src=str(de), train_tgt=str(en), skip_bad=True)
    message = refused(load_pairs, skipping)
    assert message == f"{de} + {en}: no train pairs (all 2 skipped as bad; expected a sentence pair a line)"


@pytest.mark.parametrize("what", ["file", "/dev/null", "missing"])
def test_wrong_kind_of_path_is_said_as_such(what, bert_runs, tmp_path, capsys):
    """Before: "no such file or folder" / "no such folder" / "no such file" for all three."""
    path = {"file": write(tmp_path / "a.txt", "a line\n"), "/dev/null": Path("/dev/null")}.get(what)
    path = path or tmp_path / "nope"
    kind = {"file": "a file", "/dev/null": "a character device"}.get(what)
    init, out = bert_runs["pretrained"] / "best", tmp_path / "run"
    # a folder expected: the task's, the translation data's
    says = cli(["finetune", "--task", "sst2", "--init", init, "--data", path, "--out", out], capsys)
    wanted = f"{kind}, not a folder" if kind else "no such folder"
    assert f"data.path {path}: {wanted} (expected the sst2 task's data folder, given by --data)" in says
    says = cli(["train", "--data", path, "--src", "de", "--tgt", "en", "--out", out], capsys)
    assert f"--data {path}: {wanted} (expected a folder of parallel text files" in says
    if what == "missing":
        return
    # a text file (or a folder of them) expected
    says = cli(["pretrain", path, "--out", out], capsys) if what != "file" else None
    if says is not None:
        assert f"{path}: {kind} (data.files: expected a text file or a folder of *.txt files)" in says
        says = cli(["train-lm", path, "--out", out], capsys)
        assert f"{path}: {kind} (data.files: expected a text file or a folder of *.txt files)" in says
        argv = ["train", "--set", "data.task=files", "--set", f"data.train_src={path}", "--out", out]
        assert f"data.train_src: {path} is {kind} (expected a text file, plain or gzip)" in cli(argv, capsys)
        assert refused(read_parallel, path) == f"{path} is {kind} (expected a text file)"
    assert refused(read_parallel, tmp_path) == f"{tmp_path} is a directory (expected a text file)"


def test_tokenizer_and_lexicon_files_of_the_wrong_kind(tmp_path):
    """Before: "/dev/null: no such file" for a tokenizer; "no such file (data.phrases)" for /dev/null or a
    folder, and a traceback (UnicodeDecodeError) for a phrases file that is not UTF-8."""
    says = refused(Tokenizer.from_file, "/dev/null")
    assert says.startswith("/dev/null: a character device; expected a tokenizer.json")
    tok = Tokenizer.train(
        [write(tmp_path / "t.txt", "new york is a city\n")], kind="wordpiece", vocab_size=40
    )
    for path, found in (("/dev/null", "a character device, not a file"), (tmp_path, "a folder, not a file")):
        says = refused(lexicon, str(path), tok, "data.phrases")
        assert (
            says == f"data.phrases {path}: {found} (expected a text file of phrases or entities, one a line)"
        )
    bad = write(tmp_path / "phrases.txt", b"new york\nk\xf6ln\n")
    assert refused(lexicon, str(bad), tok, "data.entities").startswith(f"{bad}:2: invalid UTF-8")


def test_a_folder_without_text_files_is_named(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "a.txt", "One document.\n\nAnother.\n")
    says = cli(["pretrain", tmp_path / "a.txt", tmp_path / "empty", "--out", tmp_path / "run"], capsys)
    assert f"{tmp_path / 'empty'}: no text files (*.txt) in this folder (data.files)" in says


# --- every real data set still reads


@pytest.mark.data
def test_every_real_data_set_still_reads(shared_data):
    for task in ("sst2", "mrpc", "rte", "cola", "stsb"):
        for split in ("train", "dev"):
            assert read_glue(task, shared_data / task / f"{split}.tsv")
    assert len(read_glue("qnli", shared_data / "qnli" / "dev.tsv")) == 5463
    assert len(read_conll(shared_data / "conll2003" / "valid.txt")) == 3250
    m30k = shared_data / "multi30k"
    assert len(read_parallel(m30k / "val.de.gz", m30k / "val.en.gz")) == 1014
    books = text_files([str(shared_data / "corpus")], "data.files")
    assert len(books) == len({p.resolve() for p in books}) == 28
