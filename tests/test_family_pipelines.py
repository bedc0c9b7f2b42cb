"""Every BERT variant end to end through the user-facing commands: for each family — BERT, its left-to-right
ablation (model.is_decoder=true), RoBERTa, ALBERT, ELECTRA, SpanBERT, XLNet — one tiny `seq2bert pretrain` run on a
generated corpus, then `seq2bert.from_pretrained`, `fill-mask` (ELECTRA's: its generator; XLNet's: its query
stream), `embed` and
`attention` on it, and a tiny `seq2bert finetune` of each task shape (one sentence, a sentence pair, CoNLL
tagging, SQuAD) followed by `classify`, `tag` and `qa` on the fine-tuned directory. The runs are two steps
long: what is checked is that each command works on each family and answers in the right shape, not what a
model learns (tests/recipes/ check that)."""

import gzip
import json
import shutil

import numpy as np
import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.models import registry

FILLER = "the a of on in and to was is it this that film story movie".split()
GOOD, BAD = "great fine lovely superb".split(), "awful dull boring poor".split()
PLACES, PEOPLE = "Paris London Rome Berlin".split(), "John Mary Anna Peter".split()
WORDS = FILLER + GOOD + BAD + PLACES + PEOPLE + "Smith lives cat sat mat what".split()

BERT_SIZES = ["--set", "model.hidden_size=16", "--set", "model.num_hidden_layers=1",
              "--set", "model.num_attention_heads=2", "--set", "model.intermediate_size=32"]  # fmt: skip
TINY = [
    "--set", "data.vocab_size=150", "--set", "data.max_seq_length=32",
    "--set", "data.batch_size=4", "--set", "data.valid_fraction=0.2", "--set", "train.warmup_steps=1",
    "--set", "train.max_steps=2", "--set", "train.eval_every=2", "--set", "train.log_every=1",
]  # fmt: skip
# each family's pretraining, and the class its best/ holds
FAMILIES = {
    "bert": ([], "BertForPreTraining"),
    "bert-ltr": (["--set", "model.is_decoder=true", "--set", "samples.max_new_tokens=2"], "BertLMHeadModel"),
    "roberta": (["--set", "model.model_type=roberta", "--set", "data.vocab_size=300"], "RobertaForMaskedLM"),
    "albert": (["--set", "model.model_type=albert", "--set", "model.embedding_size=8"], "AlbertForPreTraining"),
    "electra": (["--set", "model.model_type=electra", "--set", "model.embedding_size=8"], "ElectraForPreTraining"),
    "spanbert": (["--set", "model.model_type=spanbert"], "BertForMaskedLM"),
    "xlnet": (["--set", "model.model_type=xlnet", "--set", "model.d_model=16", "--set", "model.n_layer=1",
               "--set", "model.n_head=2", "--set", "model.d_inner=32"], "XLNetLMHeadModel"),
}  # fmt: skip
OWN_SIZES = {
    "xlnet"
}  # the families whose config names its sizes otherwise (Transformer-XL's d_model, n_layer)
# task → (its data folder, the head class fine-tuning writes)
TASKS = {
    "sst2": ("sst2", "ForSequenceClassification"),
    "rte": ("rte", "ForSequenceClassification"),
    "conll2003": ("conll", "ForTokenClassification"),
    "squad": ("squad", "ForQuestionAnswering"),
}
FINETUNE = ["--set", "train.max_steps=2", "--set", "data.batch_size=8", "--set", "data.max_seq_length=32",
            "--set", "train.log_every=1"]  # fmt: skip


def sentence(rng, extra: str) -> str:
    words = [*rng.choice(FILLER, size=rng.integers(2, 5)), extra]
    rng.shuffle(words)
    return " ".join(words)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    docs = [" ".join(" ".join(rng.choice(WORDS, size=rng.integers(4, 9))).capitalize() + "."
                     for _ in range(rng.integers(3, 8))) for _ in range(12)]  # fmt: skip
    (root / "text.txt").write_text("\n\n".join(docs) + "\n")
    return root / "text.txt"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """Tiny data of each task shape: SST-2 (one sentence), RTE (a pair), CoNLL-2003, SQuAD v1.1."""
    root = tmp_path_factory.mktemp("tasks")
    rng = np.random.default_rng(1)
    for name in ("sst2", "rte", "conll", "squad"):
        (root / name).mkdir()
    for split in ("train", "dev"):
        rows = [f"{sentence(rng, rng.choice(GOOD if i % 2 else BAD))}\t{i % 2}" for i in range(16)]
        (root / "sst2" / f"{split}.tsv").write_text("\n".join(["sentence\tlabel", *rows]) + "\n")
        rows = [f"{i}\t{sentence(rng, 'film')}\t{sentence(rng, rng.choice(BAD if i % 2 else GOOD))}\t"
                f"{'not_entailment' if i % 2 else 'entailment'}" for i in range(16)]  # fmt: skip
        (root / "rte" / f"{split}.tsv").write_text(
            "\n".join(["index\tsentence1\tsentence2\tlabel", *rows]) + "\n"
        )
        paragraphs = []
        for i in range(16):
            place = str(rng.choice(PLACES))
            context = f"{sentence(rng, str(rng.choice(PEOPLE)))} lives in {place} ."
            answers = [{"text": place, "answer_start": context.index(f"in {place}") + 3}]
            paragraphs.append({"context": context, "qas": [{"id": f"{split}{i}", "question": "what lives ?",
                                                            "answers": answers}]})  # fmt: skip
        with gzip.open(root / "squad" / f"{split}-v1.1.json.gz", "wt") as f:
            json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}, f)
    for split in ("train", "valid"):
        lines = ["-DOCSTART- -X- -X- O", ""]
        for _ in range(16):
            words = [(str(w), "O") for w in rng.choice(FILLER, size=rng.integers(2, 5))]
            words.insert(int(rng.integers(len(words) + 1)), (str(rng.choice(PLACES)), "B-LOC"))
            words[:0] = [(str(rng.choice(PEOPLE)), "B-PER"), ("Smith", "I-PER")]
            lines += [f"{w} NN O {t}" for w, t in words] + [""]
        (root / "conll" / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module", params=list(FAMILIES))
def run(request, corpus, tmp_path_factory):
    """(family, its pretraining run's best/), one run per family."""
    family = request.param
    out = tmp_path_factory.mktemp(family) / "run"
    sizes = [] if family in OWN_SIZES else BERT_SIZES
    assert main(["pretrain", str(corpus), "--out", str(out), *TINY, *sizes, *FAMILIES[family][0]]) == 0
    return family, out / "best"


def test_from_pretrained_gives_the_class_config_json_names(run):
    family, best = run
    named = json.loads((best / "config.json").read_text())["architectures"]
    assert named == [FAMILIES[family][1]]
    assert type(seq2bert.from_pretrained(best)).__name__ == named[0]
    if family == "electra":  # the generator beside the discriminator
        assert type(seq2bert.from_pretrained(best / "generator")).__name__ == "ElectraForMaskedLM"


def test_fill_mask_fills_the_tokenizers_mask(run, tmp_path, capsys):
    family, best = run
    _, tok = registry.load(best)
    mask = tok.id_to_token(tok.mask_token_id)  # [MASK]; RoBERTa's <mask>
    text = f"the cat {mask} on the mat ."
    if family == "bert-ltr":  # its LM head predicts the next token: a one-line error, not wrong answers
        assert main(["fill-mask", str(best), text]) == 2
        err = capsys.readouterr().err.strip()
        assert "left-to-right language model" in err and "\n" not in err
        return
    capsys.readouterr()
    assert main(["fill-mask", str(best), text, "--top-k", "3"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 3
    rows = seq2bert.fill_mask(text, model=best, top_k=3)
    assert len(rows) == 3 and all(0 < r["score"] <= 1 for r in rows)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert all(mask not in r["sequence"] for r in rows)
    if family != "electra":
        return
    # the discriminator has no MLM head: fill-mask on the run's checkpoint is the generator's
    assert rows == seq2bert.fill_mask(text, model=best / "generator", top_k=3)
    alone = tmp_path / "discriminator"  # a discriminator without its generator: a one-line error saying so
    shutil.copytree(best, alone, ignore=shutil.ignore_patterns("generator"))
    capsys.readouterr()
    assert main(["fill-mask", str(alone), text]) == 2
    err = capsys.readouterr().err.strip()
    assert "ElectraForPreTraining has no masked_lm head" in err and "generator/" in err and "\n" not in err


def test_embed_gives_a_vector_per_text(run, capsys):
    family, best = run
    texts = ["the cat sat on the mat .", "John lives in Rome ."]
    capsys.readouterr()
    assert main(["embed", str(best), *texts]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].split()[-2] == "1.000"  # cosine similarities, 1 on the diagonal
    vectors = seq2bert.embed(texts, model=best)
    assert vectors.shape == (2, 16) and torch.isfinite(vectors).all()


def test_attention_draws_every_head(run, tmp_path):
    from seq2bert.viz.inspect import attention_maps

    family, best = run
    assert main(["attention", str(best), "the cat sat on the mat", "--out", str(tmp_path / "a.png")]) == 0
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (weights,) = attention_maps(str(best), "the cat sat on the mat").layers["encoder"]  # (h, T, T)
    assert weights.shape[0] == 2
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))
    if family == "bert-ltr":  # shown as it was trained: left to right
        assert torch.equal(weights.triu(1), torch.zeros_like(weights))


def test_qa_windows_are_the_pair_as_transformers_tokenizer_joins_it(run):
    """[CLS] q [SEP] c [SEP] with token types 0 … 1 (BERT), <s> q </s></s> c </s> of one type (RoBERTa)."""
    from seq2bert.data.qa import make_features
    from seq2bert.data.squad import QAExample

    transformers = pytest.importorskip("transformers")
    family, best = run
    question, context = "what lives ?", "the film was fine , Anna lives in Berlin ."
    _, tok = registry.load(best)
    example = QAExample(id="q", title="", context=context, question=question, answers=[])
    (feature,) = make_features([example], tok, max_seq_length=64)
    theirs = transformers.AutoTokenizer.from_pretrained(best)(question, context, return_token_type_ids=True)
    assert feature.input_ids == theirs["input_ids"] and feature.token_type_ids == theirs["token_type_ids"]


@pytest.mark.parametrize("task", list(TASKS))
def test_each_task_shape_fine_tunes_and_its_pipeline_answers(run, tasks, task, tmp_path, capsys):
    family, best = run
    folder, head = TASKS[task]
    extra = ["--set", "data.doc_stride=8"] if task == "squad" else []
    out = tmp_path / task
    assert main(["finetune", "--task", task, "--init", str(best), "--data", str(tasks / folder),
                 "--out", str(out), *FINETUNE, *extra]) == 0  # fmt: skip
    assert json.loads((out / "results.json").read_text())["steps"] == 2
    tuned = out / "best"
    named = json.loads((tuned / "config.json").read_text())["architectures"][0]
    assert head in named and named.startswith(FAMILIES[family][1][:4])  # Bert…, Roberta…, …
    assert type(seq2bert.from_pretrained(tuned)).__name__ == named
    capsys.readouterr()
    if task == "sst2":
        assert main(["classify", str(tuned), "a great film", "it was dull"]) == 0
        labels = [line.split("\t")[0] for line in capsys.readouterr().out.strip().splitlines()]
        assert len(labels) == 2 and set(labels) <= {"0", "1"}
    elif task == "rte":
        assert main(["classify", str(tuned), "the film was fine\tit was great"]) == 0
        label, score, *_ = capsys.readouterr().out.split("\t")
        assert label in ("entailment", "not_entailment") and 0.5 <= float(score) <= 1
    elif task == "conll2003":
        text = "Mary Smith lives in Rome ."
        assert main(["tag", str(tuned), "--words", text]) == 0
        for line in capsys.readouterr().out.strip().splitlines():
            kind, span, _, word = line.split("\t")
            start, end = map(int, span.split("-"))
            assert kind in ("B-PER", "I-PER", "B-LOC") and text[start:end] == word == word.strip() != ""
        for e in seq2bert.tag(text, model=tuned):
            assert text[e["start"] : e["end"]] == e["word"] and e["entity_group"] in ("PER", "LOC")
    else:
        context = "the film was fine , Anna lives in Berlin ."
        assert main(["qa", str(tuned), "--question", "what lives ?", "--context", context,
                     "--max-seq-length", "24", "--doc-stride", "8"]) == 0  # fmt: skip
        answer, _, span = capsys.readouterr().out.strip().split("\t")
        start, end = map(int, span.split("-"))
        assert context[start:end] == answer != ""
        found = seq2bert.answer("what lives ?", context, model=tuned, max_seq_length=24, doc_stride=8)
        assert (found["start"], found["end"]) == (start, end)
