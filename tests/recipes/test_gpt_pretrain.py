"""`seq2bert pretrain --set model.model_type=gpt2` (and openai-gpt): the causal-LM objective on the corpus shards
of BERT's pretraining — contiguous blocks of the documents' stream, each document ended by the end-of-text
token; held-out perplexity that is exp(mean NLL); samples at the end; checkpoints transformers reads; an exact
resume after a kill."""

import json
import math
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import seq2bert
from seq2bert import config as config_io
from seq2bert.cli import main
from seq2bert.data.lm import Blocks, TokenStream
from seq2bert.data.pretraining import Corpus, prepare_corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.gpt.config import gpt2_tiny
from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.recipes.pretrain import PretrainConfig, evaluate_causal_lm, words_per_token

WORDS = "the a cat dog sat ran on under mat tree big small red green saw ate".split()


def documents(rng, n):
    return [
        " ".join(
            " ".join(WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(4, 10))).capitalize() + "."
            for _ in range(rng.integers(2, 6))
        )
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    root = tmp_path_factory.mktemp("books")
    rng = np.random.default_rng(0)
    for b in range(2):
        (root / f"book{b}.txt").write_text("\n\n".join(documents(rng, 15)) + "\n")
    return root


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """(tokenizer, the documents' texts, their stream): a byte-level BPE over a corpus of 6 documents."""
    root = tmp_path_factory.mktemp("stream")
    docs = documents(np.random.default_rng(1), 6)
    (root / "text.txt").write_text("\n\n".join(docs) + "\n")
    tok = Tokenizer.train([root / "text.txt"], kind="bytelevel-bpe", vocab_size=300)
    prepare_corpus([root / "text.txt"], tok, root / "corpus", progress=False, spaces=True)
    corpus = Corpus(root / "corpus")
    return tok, docs, TokenStream(corpus, np.arange(corpus.num_documents), tok.eos_token_id)


def test_blocks_are_contiguous_pieces_of_the_stream_and_documents_end_with_the_end_of_text_token(stream):
    tok, docs, s = stream
    eot = tok.token_to_id("<|endoftext|>")
    assert tok.eos_token_id == eot
    everything = s.read(0, len(s)).tolist()
    # the stream: each document's tokens — which decode back to its text, spaces included — then <|endoftext|>
    pieces, start = [], 0
    for i, t in enumerate(everything):
        if t == eot:
            pieces.append(everything[start:i])
            start = i + 1
    assert start == len(everything) and [tok.decode(p) for p in pieces] == docs
    # any window of the stream, across documents too, reads what the whole stream holds there
    for lo, hi in ((0, 7), (5, 90), (len(s) - 13, len(s)), (40, 41)):
        assert s.read(lo, hi).tolist() == everything[lo:hi]

    blocks = Blocks(s, 16, 4, seed=3)
    L, rest = 16, len(s) % 16
    assert len(blocks) == len(s) // L + (rest >= 2)
    assert [len(blocks.block(j)) for j in range(len(blocks))] == [L] * (len(s) // L) + (
        [rest] if rest >= 2 else []
    )
    joined = np.concatenate([blocks.block(j) for j in range(len(blocks))]).tolist()
    assert joined == everything[: len(joined)] and len(everything) - len(joined) < 2  # contiguous, in order
    assert blocks.tokens() == sum(len(blocks.block(j)) - 1 for j in range(len(blocks)))

    order = [i for b in blocks.batches(0) for i in b]
    assert sorted(order) == list(range(len(blocks))) and order != list(range(len(blocks)))  # shuffled
    assert order == [i for b in Blocks(s, 16, 4, seed=3).batches(0) for i in b]  # … the same way every time
    assert order != [i for b in blocks.batches(1) for i in b]  # … and another way each epoch
    last = len(blocks) - 1
    batch = blocks.collate([0, last])
    assert batch["input_ids"].shape == (2, L) and batch["attention_mask"][0].all()
    torch.testing.assert_close(
        batch["input_ids"][1, : len(blocks.block(last))], torch.from_numpy(blocks.block(last))
    )
    assert (
        batch["labels"] == batch["input_ids"].masked_fill(batch["attention_mask"] == 0, IGNORE_INDEX)
    ).all()


def test_held_out_perplexity_is_the_exponential_of_the_mean_nll_computed_directly(stream):
    tok, _, s = stream
    torch.manual_seed(0)
    model = GPT2LMHeadModel(gpt2_tiny(vocab_size=tok.vocab_size, n_embd=32, n_head=2)).eval()
    blocks = Blocks(s, 24, 3, shuffle=False)
    indices = list(range(len(blocks)))
    wpt = words_per_token(tok, s, 10_000)
    got = evaluate_causal_lm(model, blocks, indices, "cpu", wpt)
    nll, n = 0.0, 0
    with torch.no_grad():
        for j in indices:  # one block at a time, no padding: −log p(w_t | w_<t) for t = 1 … len − 1
            ids = torch.from_numpy(blocks.block(j))[None]
            logp = model(ids).logits[0].double().log_softmax(-1)
            nll -= float(logp[torch.arange(ids.size(1) - 1), ids[0, 1:]].sum())
            n += ids.size(1) - 1
    assert got["tokens"] == n == blocks.tokens()
    assert got["loss"] == pytest.approx(nll / n, rel=1e-5)
    assert got["perplexity"] == pytest.approx(math.exp(nll / n), rel=1e-5)
    words = sum(len(d.split()) for d in stream[1]) / sum(len(s.document(d)) - 1 for d in range(6))
    assert wpt == pytest.approx(words)
    assert got["word_perplexity"] == pytest.approx(math.exp(nll / (n * words)), rel=1e-5)


SETTINGS = {
    "model.model_type": "gpt2", "model.n_embd": 32, "model.n_layer": 2, "model.n_head": 2, "data.vocab_size": 300,
    "data.max_seq_length": 32, "data.batch_size": 4, "data.valid_fraction": 0.2, "train.warmup_steps": 2,
    "train.max_steps": 6, "train.eval_every": 3, "train.log_every": 1, "train.lr": 1e-3, "samples.max_new_tokens": 6,
}  # fmt: skip


def tiny(**changes):
    """--set arguments of a tiny GPT-2 run: SETTINGS with ``changes`` (key with "__" for ".")."""
    settings = {**SETTINGS, **{k.replace("__", "."): v for k, v in changes.items()}}
    return [x for k, v in settings.items() for x in ("--set", f"{k}={v}")]


TINY = tiny()


def test_gpt2_pretraining_writes_transformers_checkpoints_samples_and_resumes_exactly(
    books, tmp_path, capsys
):
    transformers = pytest.importorskip("transformers")
    assert main(["pretrain", str(books), "--out", str(tmp_path / "a"), *TINY]) == 0
    out = capsys.readouterr().out
    assert "valid ppl" in out and "valid word ppl" in out and "greedy:" in out
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["model"] == "gpt2 (2/32)" and results["steps"] == 6
    assert results["valid_perplexity"] == pytest.approx(math.exp(results["valid_loss"]))
    assert results["valid_word_perplexity"] > results["valid_perplexity"] > 1  # > 1 token a word
    assert [s["prompt"] for s in results["samples"]] == PretrainConfig().samples.prompts
    assert all(isinstance(s["greedy"], str) and isinstance(s["sampled"], str) for s in results["samples"])
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    valid = [r for r in log if r["split"] == "valid"]
    assert [r["step"] for r in valid] == [3, 6]
    assert all(r["perplexity"] == pytest.approx(math.exp(r["loss"])) for r in valid)
    best_ppl = min(r["perplexity"] for r in valid)  # best/ holds the lowest perplexity
    assert json.loads((tmp_path / "a" / "best" / "trainer_state.json").read_text())["best"] == best_ppl

    # the best checkpoint is a transformers GPT2LMHeadModel directory, its tokenizer beside it
    best = tmp_path / "a" / "best"
    config = json.loads((best / "config.json").read_text())
    tok = Tokenizer.load(best)
    assert config["architectures"] == ["GPT2LMHeadModel"] and config["eos_token_id"] == tok.eos_token_id
    ours = seq2bert.from_pretrained(best)
    theirs = transformers.GPT2LMHeadModel.from_pretrained(best).eval()
    ids = torch.tensor([tok.ids_batch(["The cat sat on the mat."])[0]])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids).logits, theirs(ids).logits, rtol=0, atol=1e-5)

    # a run that stopped after its checkpoint at step 3 and resumes ends where the uninterrupted run ended
    b = tmp_path / "b"
    assert main(["pretrain", str(books), "--out", str(b), *TINY]) == 0
    for name in ("checkpoint-6", "best", "results.json"):
        shutil.rmtree(b / name) if (b / name).is_dir() else (b / name).unlink()
    assert main(["pretrain", "--out", str(b), "--resume"]) == 0  # everything else comes from run.json
    a6, b6 = (load_file(d / "checkpoint-6" / "model.safetensors") for d in (tmp_path / "a", b))
    assert a6.keys() == b6.keys()
    for k in a6:
        assert torch.equal(a6[k], b6[k]), k
    assert json.loads((b / "results.json").read_text())["samples"] == results["samples"]


def test_gpt1_pretraining_adds_an_end_of_text_token_to_its_lower_cased_bpe(books, tmp_path):
    args = tiny(model__model_type="openai-gpt", train__max_steps=2)
    assert main(["pretrain", str(books), "--out", str(tmp_path / "g"), *args]) == 0
    tok = Tokenizer.load(tmp_path / "g" / "best")
    config = json.loads((tmp_path / "g" / "best" / "config.json").read_text())
    assert (
        config["architectures"] == ["OpenAIGPTLMHeadModel"]
        and tok.id_to_token(tok.vocab_size - 1) == "<|endoftext|>"
    )
    assert config["eos_token_id"] == tok.vocab_size - 1 and config["vocab_size"] == tok.vocab_size
    assert tok.tokenize("The CAT") == ["the</w>", "cat</w>"]  # GPT-1's BPE: lower-cased, word-final </w>


def test_switching_to_a_gpt_starts_from_bert_minis_size():
    cfg = config_io.build(PretrainConfig, overrides=["model.model_type=gpt2"])
    assert (cfg.model.n_layer, cfg.model.n_embd, cfg.model.n_head) == (4, 256, 4)
    cfg = config_io.build(PretrainConfig, overrides=["model.model_type=openai-gpt", "model.n_layer=2"])
    assert (cfg.model.model_type, cfg.model.n_layer, cfg.model.n_embd, cfg.model.n_positions) == (
        "openai-gpt",
        2,
        256,
        512,
    )
    assert PretrainConfig().model.model_type == "bert" and PretrainConfig().train.metric == "main"


@pytest.mark.parametrize(
    "setting, message",
    [
        ("data.max_seq_length=2048", "data.max_seq_length: 2048 is longer than the model's 1024 positions"),
        ("data.vocab_size=100", "vocab_size=100 is too small for bytelevel-bpe"),
        ("data.lowercase=true", "lowercase=True does not apply to bytelevel-bpe"),
        ("samples.temperature=0", "temperature: must be > 0"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(books, tmp_path, capsys, setting, message):
    assert main(["pretrain", str(books), "--out", str(tmp_path / "x"), *TINY, "--set", setting]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def reference_nll(model, ids: torch.Tensor, window: int, starts: list[int]) -> list[tuple[int, int, float]]:
    """(target t, its window's start s, −log p(w_t | w_s … w_{t−1})) for every target, one model call per target:
    each is scored in the first window of ``starts`` that holds it as a target."""
    out = []
    for t in range(1, len(ids)):
        s = min(s for s in starts if s < t < s + window)
        with torch.no_grad():
            logp = model(ids[None, s:t]).logits[0, -1].double().log_softmax(-1)
        out.append((t, s, -float(logp[ids[t]])))
    return out


@pytest.mark.parametrize("window", [16, 17, 4096])
def test_sliding_windows_score_each_token_once_with_half_a_window_of_context(stream, window):
    from seq2bert.recipes.lm import evaluate_windows

    tok, _, s = stream
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        gpt2_tiny(vocab_size=tok.vocab_size, n_embd=32, n_head=2, n_positions=4096)
    ).eval()
    ids = torch.from_numpy(s.read(0, 120).astype(np.int64))  # (N,)
    N, stride = len(ids), window // 2
    starts = sorted({min(k * stride, max(N - window, 0)) for k in range(N)})
    ref = reference_nll(model, ids, window, starts)
    assert [t for t, _, _ in ref] == list(range(1, N))  # every target once
    assert all(t - s >= min(t, window - stride) for t, s, _ in ref)  # at least half a window of context
    none = torch.zeros(N, dtype=torch.bool)
    got = evaluate_windows(model, ids, none, window, "cpu", words=0.5)
    nll = sum(x for _, _, x in ref)
    assert got["tokens"] == N - 1 and got["loss"] == pytest.approx(nll / (N - 1), rel=1e-5)
    assert got["word_perplexity"] == pytest.approx(math.exp(nll / ((N - 1) * 0.5)), rel=1e-5)
    if window > N:  # one window: the mean NLL of the whole text read at once
        with torch.no_grad():
            whole = torch.nn.functional.cross_entropy(model(ids[None]).logits[0, :-1], ids[1:])
        assert got["loss"] == pytest.approx(float(whole), rel=1e-5)
    # targets marked unscored are read as context only
    unscored = torch.from_numpy(np.random.default_rng(0).random(N) < 0.2)
    got = evaluate_windows(model, ids, unscored, window, "cpu", batch_size=3)
    kept = [x for t, _, x in ref if not unscored[t]]
    assert got["tokens"] == len(kept) < N - 1 and got["loss"] == pytest.approx(
        sum(kept) / len(kept), rel=1e-5
    )


def test_evaluate_lm_reads_a_gpt_in_windows_and_leaves_the_spelled_placeholder_unscored(
    books, tmp_path, capsys, caplog
):
    from seq2bert.recipes.lm import evaluate_lm

    assert main(["pretrain", str(books), "--out", str(tmp_path / "a"), *tiny(train__max_steps=2)]) == 0
    best = tmp_path / "a" / "best"
    tok = Tokenizer.load(best)
    assert (
        tok.unk_token_id == tok.eos_token_id
    )  # byte-level BPE spells every text: its "unknown" is the end of text
    text = tmp_path / "wiki.txt"
    text.write_text("The cat sat on the <unk> mat. A <unk> ran under the tree.\n\n<unk> saw the dog.\n")
    everything = evaluate_lm(best, [str(text)], bptt=8)
    skipped = evaluate_lm(best, [str(text)], bptt=8, unk_token="<unk>")
    pieces = 2 * len(tok.ids_batch([" <unk>"])[0]) + len(tok.ids_batch(["<unk>"])[0])
    assert everything["words"] == 17 and everything["unk_tokens"] == 0
    assert skipped["unscored_words"] == 3 and skipped["words"] == 14 and skipped["unk_tokens"] == 0
    assert skipped["tokens"] == everything["tokens"] - pieces and pieces >= 3
    assert "placeholders found" not in caplog.text  # each of the 3 found once, spaced or not
    assert skipped["perplexity"] != everything["perplexity"]
    capsys.readouterr()
    assert main(["evaluate-lm", str(best), str(text), "--unk-token", "<unk>", "--bptt", "8"]) == 0
    assert f"{skipped['perplexity']:.2f}" in capsys.readouterr().out
