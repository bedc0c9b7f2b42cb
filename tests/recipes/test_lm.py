"""The recurrent language model: the token stream and its TBPTT segments, the state carried across segments,
decoding and sampling through the protocol, and `seq2bert train-lm` end to end with an exact resume."""

import json
import shutil

import numpy as np
import pytest
import torch

from seq2bert.cli import main
from seq2bert.data.lm import StreamBatches, TokenStream
from seq2bert.data.pretraining import Corpus, prepare_corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import DataError
from seq2bert.models import registry
from seq2bert.models.rnn_lm.config import RNNLMConfig
from seq2bert.models.rnn_lm.model import RNNLanguageModel, detach

WORDS = "the a cat dog sat ran on under mat tree big small red green saw ate".split()


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    root = tmp_path_factory.mktemp("books")
    rng = np.random.default_rng(0)
    for b in range(6):
        sents = [" ".join(rng.choice(WORDS, rng.integers(4, 9))).capitalize() + "." for _ in range(40)]
        (root / f"book{b}.txt").write_text(" ".join(sents) + "\n")
    return root


def tiny(cell="lstm", **kw):
    torch.manual_seed(0)
    return RNNLanguageModel(RNNLMConfig(cell=cell, vocab_size=30, embedding_dim=16, hidden_size=16, num_layers=2,
                                        dropout=0.0, **kw)).eval()  # fmt: skip


def test_the_stream_and_its_segments(books, tmp_path):
    tok = Tokenizer.train(sorted(books.glob("*.txt")), kind="word", vocab_size=40)
    prepare_corpus(sorted(books.glob("*.txt")), tok, tmp_path / "c", documents="file", progress=False)
    corpus = Corpus(tmp_path / "c")
    docs = np.array([1, 3])
    stream = TokenStream(corpus, docs, separator=tok.sep_token_id)
    whole = []
    for d in docs:
        s, e = corpus.doc_sentences[d], corpus.doc_sentences[d + 1]
        whole += corpus.span(int(s), int(e)) + [tok.sep_token_id]
    assert len(stream) == len(whole)
    assert stream.read(0, len(whole)).tolist() == whole
    assert (
        stream.read(len(whole) // 2 - 3, len(whole) // 2 + 5).tolist()
        == whole[len(whole) // 2 - 3 : len(whole) // 2 + 5]
    )
    batches = StreamBatches(stream, batch_size=3, bptt=7)
    L = batches.row_length
    rows = [[] for _ in range(3)]
    for [i] in batches.batches(0):
        b = batches.collate([i])
        assert torch.equal(b["input_ids"][:, 1:], b["labels"][:, :-1])  # labels are the next tokens
        for r in range(3):
            rows[r] += b["input_ids"][r].tolist()
    for r in range(3):  # the segments of a row continue each other: row r is its slice of the stream
        assert rows[r] == whole[r * L : r * L + L]
    with pytest.raises(DataError, match="too few"):
        StreamBatches(stream, batch_size=len(whole), bptt=7)


@pytest.mark.parametrize("cell", ["rnn_tanh", "irnn", "lstm", "gru"])
def test_the_state_carried_across_segments_equals_one_pass(cell):
    model = tiny(cell)
    x = torch.randint(0, 30, (2, 12))
    full = model(x).logits
    first = model(x[:, :5])
    second = model(x[:, 5:], state=detach(first.state))
    torch.testing.assert_close(torch.cat([first.logits, second.logits], 1), full, rtol=0, atol=1e-5)
    if cell == "irnn":
        w = model.rnn.rnn.weight_hh_l0
        assert torch.equal(w, torch.eye(16))
    assert model.output.weight is model.embed.weight  # tied


def test_prompts_left_padded_decode_as_alone_and_sampling_is_seeded():
    model = tiny()
    prompts = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    both = model.generate(prompts, mask, max_new_tokens=6)
    alone = model.generate(prompts[:1, 2:], max_new_tokens=6)
    assert both.shape == (2, 11) and both[0, 5:].tolist() == alone[0, 3:].tolist()
    # greedy by hand: the most probable token, fed back
    ids, out = prompts[1:], []
    for _ in range(6):
        nxt = model(ids).logits[0, -1].argmax()
        out.append(int(nxt))
        ids = torch.cat([ids, nxt.view(1, 1)], 1)
    assert both[1, 5:].tolist() == out
    a = model.generate(prompts, mask, max_new_tokens=8, do_sample=True, temperature=1.5, seed=3)
    b = model.generate(prompts, mask, max_new_tokens=8, do_sample=True, temperature=1.5, seed=3)
    c = model.generate(prompts, mask, max_new_tokens=8, do_sample=True, temperature=1.5, seed=4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    top1 = model.generate(prompts, mask, max_new_tokens=6, do_sample=True, top_k=1, seed=0)
    assert torch.equal(top1, both)  # sampling from the top-1 is greedy
    beams = model.generate(prompts, mask, max_new_tokens=6, num_beams=3)
    assert beams.shape[0] == 2


def test_train_lm_learns_saves_samples_and_resumes_exactly(books, tmp_path, capsys):
    args = ["--set", "model.hidden_size=32", "--set", "model.embedding_dim=32", "--set", "model.num_layers=1",
            "--set", "data.tokenizer_kind=word", "--set", "data.vocab_size=40", "--set", "data.batch_size=4",
            "--set", "data.bptt=16", "--set", "data.valid_fraction=0.2", "--set", "train.max_steps=12",
            "--set", "train.eval_every=6", "--set", "train.log_every=3", "--set", "train.lr=0.01",
            "--set", "model.dropout=0.0"]  # fmt: skip
    assert main(["train-lm", str(books), "--out", str(tmp_path / "a"), *args]) == 0
    row = json.loads((tmp_path / "a" / "results.json").read_text())
    model, tok = registry.load(tmp_path / "a" / "best")
    assert row["steps"] == 12 and row["valid_perplexity"] < 0.8 * tok.vocab_size  # uniform would be V
    assert row["valid_word_perplexity"] > 0
    assert type(model) is RNNLanguageModel and tok is not None
    capsys.readouterr()
    assert (
        main(["sample", str(tmp_path / "a" / "best"), "--prompt", "the cat", "--seed", "1", "-n", "2"]) == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("the cat") for line in lines)
    best = str(tmp_path / "a" / "best")  # greedy with int8 weights: its output layer's (weight-only int8)
    assert main(["sample", best, "--prompt", "the cat", "--temperature", "0", "--int8"]) == 0
    assert capsys.readouterr().out.startswith("the cat")

    held_out = tmp_path / "held-out.txt"
    held_out.write_text("The cat sat on the mat. A dog ran under the tree. The zebra flew.\n")
    capsys.readouterr()
    assert main(["evaluate-lm", str(tmp_path / "a"), str(held_out), "--max-unknown", "0.5"]) == 0
    table = capsys.readouterr().out
    assert "perplexity (token)" in table and "perplexity (word)" in table and "[UNK] tokens" in table
    from seq2bert.recipes.lm import evaluate_lm

    scored = evaluate_lm(tmp_path / "a", [str(held_out)], max_unknown=0.5)
    assert scored["words"] == 15 and scored["unk_tokens"] >= 2  # "zebra" and "flew" are not in the vocabulary
    assert 1 < scored["perplexity"] < tok.vocab_size
    # WikiText's placeholder for removed words: read as [UNK], neither scored nor counted as a word
    placeholders = tmp_path / "placeholders.txt"
    placeholders.write_text("The cat sat on the <unk> mat. A <unk> ran under the tree.\n")
    everything = evaluate_lm(tmp_path / "a", [str(placeholders)], max_unknown=0.5)
    skipped = evaluate_lm(tmp_path / "a", [str(placeholders)], max_unknown=0.5, unk_token="<unk>")
    ids = tok.encode(
        "The cat sat on the [UNK] mat. A [UNK] ran under the tree.", add_special_tokens=False
    ).ids
    assert skipped["unscored_words"] == 2 and skipped["words"] == everything["words"] - 2 == 11
    assert skipped["unk_tokens"] == everything["unk_tokens"] - 2  # the others: words the vocabulary lacks
    unknown = ids[1:].count(tok.unk_token_id)  # placeholders and the others: no [UNK] target is scored
    assert skipped["tokens"] == everything["tokens"] - unknown and unknown >= 2
    assert skipped["perplexity"] != everything["perplexity"]
    foreign = tmp_path / "foreign.txt"
    foreign.write_text("Der Hund lief unter den Baum. Die Katze schlief.\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    for text, message in ((foreign, "does not cover this text: 9 of its"), (empty, "no text")):
        capsys.readouterr()
        assert main(["evaluate-lm", str(tmp_path / "a"), str(text)]) == 2
        line = error_line(capsys.readouterr().err)
        assert message in line and str(text) in line

    assert_resumes_exactly(books, tmp_path, args, last=12)


def assert_resumes_exactly(books, tmp_path, args, last):
    """A run killed after its checkpoint before ``last`` and resumed ends where the uninterrupted run
    (``tmp_path / "a"``) ended; returns the resumed run's folder."""
    from safetensors.torch import load_file

    b = tmp_path / "b"
    assert main(["train-lm", str(books), "--out", str(b), *args]) == 0
    for name in (f"checkpoint-{last}", "best", "results.json"):
        path = b / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert main(["train-lm", "--out", str(b), "--resume"]) == 0
    a_last, b_last = (load_file(d / f"checkpoint-{last}" / "model.safetensors") for d in (tmp_path / "a", b))
    assert a_last.keys() == b_last.keys() and all(torch.equal(a_last[k], b_last[k]) for k in a_last)
    return b


def error_line(err: str) -> str:
    """The one error line of a failed command (progress bars may precede it), and no traceback."""
    lines = [line for line in err.splitlines() if line.startswith("seq2bert: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_bad_input_is_one_line(tmp_path, capsys):
    (tmp_path / "one.txt").write_text("Just one document here.\n")
    assert main(["train-lm", str(tmp_path / "one.txt"), "--out", str(tmp_path / "r")]) == 2
    assert "no held-out part" in capsys.readouterr().err
    assert main(["train-lm", str(tmp_path / "missing"), "--out", str(tmp_path / "r2")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "empty").mkdir()
    for corpus, message in ((tmp_path / "empty.txt", "no text"), (tmp_path / "empty", "no text files")):
        assert main(["train-lm", str(corpus), "--out", str(tmp_path / "r3")]) == 2
        assert message in error_line(capsys.readouterr().err)
    (tmp_path / "two.txt").write_text("First document.\n\nSecond document.\n")
    argv = ["train-lm", str(tmp_path / "two.txt"), "--valid", str(tmp_path / "empty.txt"), "--out"]
    assert main([*argv, str(tmp_path / "r4"), "--set", "data.documents=blank_line"]) == 2
    assert "empty.txt: no text" in error_line(capsys.readouterr().err)


ELMO = ["--set", "model.model_type=elmo", "--set", "model.cell_size=24", "--set", "model.projection_dim=8",
        "--set", "model.filters=[[1, 8], [2, 8], [3, 8]]", "--set", "model.softmax_samples=8",
        "--set", "data.vocab_size=15", "--set", "data.batch_size=4", "--set", "data.bptt=12",
        "--set", "data.valid_fraction=0.2", "--set", "train.max_steps=10", "--set", "train.eval_every=5",
        "--set", "train.lr=0.01", "--set", "train.log_every=2"]  # fmt: skip


def test_train_lm_trains_elmo_and_resumes_exactly(books, tmp_path):
    """`train-lm --set model.model_type=elmo`: the biLM on a word softmax (words outside it predict [UNK]
    and are read by their spelling), forward and backward perplexity, a checkpoint the registry loads, and
    a killed run resumed ends where the uninterrupted one ended."""
    from safetensors.torch import load_file

    from seq2bert.models.elmo.model import ELMoForPreTraining

    assert main(["train-lm", str(books), "--out", str(tmp_path / "a"), *ELMO]) == 0
    row = json.loads((tmp_path / "a" / "results.json").read_text())
    model, tok = registry.load(tmp_path / "a" / "best")
    assert type(model) is ELMoForPreTraining and model.config.vocab_size == 15 < tok.vocab_size
    for key in ("valid_forward_perplexity", "valid_backward_perplexity"):
        assert 1 < row[key] < 15  # better than uniform over the softmax
    assert row["valid_perplexity"] == pytest.approx(
        (row["valid_forward_perplexity"] + row["valid_backward_perplexity"]) / 2
    )
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r.get("split") == "train" and "loss" in r]
    assert losses[-1] < losses[0]
    b = assert_resumes_exactly(books, tmp_path, ELMO, last=10)
    state = load_file(b / "checkpoint-10" / "lm_state.safetensors")
    assert state["h"].shape == (4, 4, 8) and state["c"].shape == (4, 4, 24)  # 2 layers × 2 directions


def test_elmo_bad_input_is_one_line(books, tmp_path, capsys):
    assert (
        main(
            ["train-lm", str(books), "--out", str(tmp_path / "r"), *ELMO, "--set", "data.tokenizer_kind=bpe"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "data.tokenizer_kind: elmo predicts words: expected 'word', got 'bpe'" in err
        and "Traceback" not in err
    )
    assert main(["train-lm", str(books), "--out", str(tmp_path / "r2"), "--set", "model.model_type=elmo",
                 "--set", "model.projection_dim=600"]) == 2  # fmt: skip
    assert "projection_dim (600) must be below cell_size (512)" in capsys.readouterr().err
