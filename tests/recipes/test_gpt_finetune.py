"""`seq2bert finetune --init GPT_DIR` as GPT-1 was fine-tuned (Radford et al. 2018, Sect. 3.2–3.3, Figure 1): the
input transformations with [start], [delim] and [extract] added to the vocabulary and the embedding, the
similarity head that reads a pair in both orders, L_3 = L_2 + λ·L_1, and tiny end-to-end runs of each task
shape that write results.json, best/ (a transformers directory where a transformers class exists) and serve the
classify pipeline."""

import csv
import json

import numpy as np
import pytest
import torch

import seq2bert
from seq2bert.cli import main
from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import pad_sequences
from seq2bert.data.conll import TaggedSentence
from seq2bert.data.glue import TextExample
from seq2bert.data.swag import ChoiceExample
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models import registry
from seq2bert.models.gpt.config import gpt1_tiny, gpt2_tiny
from seq2bert.models.gpt.heads import GPT2DoubleHeadsModel, GPT2ForSimilarity, GPT2LMHeadModel
from seq2bert.models.pretrained import init_task_model
from seq2bert.pipelines import classify, tag
from seq2bert.recipes.decoder_tasks import decoder_inputs, decoder_loss
from seq2bert.serve.models import served_pipelines
from seq2bert.tasks import registry as task_registry
from seq2bert.tasks.data import FinetuneDataConfig
from tests.recipes.test_finetune import PEOPLE, PLACES, write_conll

FILLER = "the a of on in and to was is it this that film story movie".split()
GOOD, BAD = "great fine lovely superb".split(), "awful dull boring poor".split()
GRADES = [BAD[0], BAD[3], GOOD[1], GOOD[0], GOOD[3]]  # awful poor fine great superb: 0 … 4


def vocabulary(root, kind="bytelevel-bpe"):
    words = FILLER + GOOD + BAD + PLACES + PEOPLE + ["smith", "he", "it", "was", "."]
    corpus = root / "words.txt"
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))) + "\n")
    return Tokenizer.train([corpus], kind=kind, vocab_size=400 if kind == "bytelevel-bpe" else 160)


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    """A tiny, randomly initialised GPT-2 language model with a byte-level BPE of the tasks' words."""
    root = tmp_path_factory.mktemp("gpt2")
    tok = vocabulary(root)
    torch.manual_seed(0)
    GPT2LMHeadModel(
        gpt2_tiny(vocab_size=tok.vocab_size, n_embd=32, n_head=2, n_positions=64)
    ).save_pretrained(root / "gpt2", tok)
    return root / "gpt2"


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.train(["the cat sat on a mat . a dog ran"] * 4, kind="bytelevel-bpe", vocab_size=270)


def ids(tok, text):
    return tok.ids_batch([text])[0]


# --- the input transformations, one shape at a time
def test_classification_is_start_text_extract(tok):
    tok = gpt.with_task_tokens(tok)
    t = gpt.task_tokens(tok)
    assert (t.start, t.delim, t.extract) == (270, 271, 272)  # after the vocabulary, <|endoftext|> = 269
    [f] = gpt.encode_task([TextExample("0", "the cat sat", None, 1)], tok, "classification", 64)
    assert f == {"input_ids": [t.start, *ids(tok, "the cat sat"), t.extract], "labels": 1}
    [cut] = gpt.encode_task([TextExample("0", "the cat sat on a mat", None, 0)], tok, "classification", 4)
    assert cut["input_ids"] == [t.start, *ids(tok, "the cat sat on a mat")[:2], t.extract]


def test_entailment_is_start_premise_delim_hypothesis_extract(tok):
    tok = gpt.with_task_tokens(tok)
    t = gpt.task_tokens(tok)
    [f] = gpt.encode_task([TextExample("0", "a dog ran", "the cat sat", 0)], tok, "entailment", 64)
    assert f["input_ids"] == [t.start, *ids(tok, "a dog ran"), t.delim, *ids(tok, "the cat sat"), t.extract]
    # too long: the longer part loses its last tokens first
    premise, hypothesis = ids(tok, "the cat sat on a mat . a dog ran"), ids(tok, "a dog")
    assert len(premise) > 5 > len(hypothesis)
    [cut] = gpt.encode_task(
        [TextExample("0", "the cat sat on a mat . a dog ran", "a dog", 0)],
        tok,
        "entailment",
        3 + 5 + len(hypothesis),
    )
    assert cut["input_ids"] == [t.start, *premise[:5], t.delim, *hypothesis, t.extract]


def test_similarity_holds_both_orders(tok):
    tok = gpt.with_task_tokens(tok)
    t = gpt.task_tokens(tok)
    a, b = ids(tok, "a dog ran"), ids(tok, "the cat sat on a mat")
    [f] = gpt.encode_task([TextExample("0", "a dog ran", "the cat sat on a mat", 3.5)], tok, "similarity", 64)
    assert f == {
        "input_ids": [[t.start, *a, t.delim, *b, t.extract], [t.start, *b, t.delim, *a, t.extract]],
        "labels": 3.5,
    }
    batch = gpt.collate([f, f], 0, "similarity")
    assert batch["input_ids"].shape == (2, 2, len(a) + len(b) + 3) and batch["labels"].dtype == torch.float
    assert set(batch) == {"input_ids", "attention_mask", "labels", "lm_labels"}


def test_multiple_choice_is_start_context_delim_answer_extract_for_each_answer(tok):
    tok = gpt.with_task_tokens(tok)
    t = gpt.task_tokens(tok)
    q = ChoiceExample("0", "a dog ran", "the cat", ["sat", "ran on a mat", "dog", "sat on"], 1)
    [f] = gpt.encode_task([q], tok, "choice", 64)
    context = ids(tok, "a dog ran")
    assert f["labels"] == 1 and f["input_ids"] == [
        [t.start, *context, t.delim, *ids(tok, f"the cat {ending}"), t.extract] for ending in q.endings
    ]
    batch = gpt.collate([f], 0, "choice")
    lengths = [len(x) for x in f["input_ids"]]
    assert batch["input_ids"].shape == (1, 4, max(lengths))
    assert batch["mc_token_ids"].tolist() == [[n - 1 for n in lengths]]  # each choice's [extract]
    assert (batch["input_ids"][0, torch.arange(4), batch["mc_token_ids"][0]] == t.extract).all()
    assert batch["mc_labels"].tolist() == [1] and batch["attention_mask"][0].sum(-1).tolist() == lengths
    # the auxiliary LM's labels: the inputs, −100 on padding
    assert (batch["labels"] == batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)).all()


def test_the_tokens_are_new_rows_of_the_embedding_and_a_tied_head_follows(tok):
    torch.manual_seed(0)
    model = GPT2DoubleHeadsModel(gpt2_tiny(vocab_size=tok.vocab_size, n_embd=16, n_head=2))
    before = model.transformer.embeddings.token.weight.detach().clone()
    grown = decoder_inputs(model, tok, "classification")
    assert grown.vocab_size == tok.vocab_size + 3 == model.config.vocab_size
    weight = model.transformer.embeddings.token.weight
    assert weight.shape == (tok.vocab_size + 3, 16) and torch.equal(weight[: tok.vocab_size], before)
    assert model.lm_head.weight is weight and model.config.pad_token_id == tok.eos_token_id
    assert (
        decoder_inputs(model, grown, "classification") is grown
        and model.config.vocab_size == grown.vocab_size
    )  # once only


def test_similarity_is_symmetric_in_its_two_orders(tok):
    tok = gpt.with_task_tokens(tok)
    torch.manual_seed(0)
    model = GPT2ForSimilarity(
        gpt2_tiny(vocab_size=tok.vocab_size, n_embd=16, n_head=2, pad_token_id=0)
    ).eval()
    pairs = [
        TextExample("0", "a dog ran", "the cat sat on a mat", 1),
        TextExample("1", "a mat", "the dog", 0),
    ]
    features = gpt.encode_task(pairs, tok, "similarity", 64)
    swapped = [{**f, "input_ids": f["input_ids"][::-1]} for f in features]
    with torch.no_grad():
        ab = model(**gpt.collate(features, 0, "similarity", lm=False)).logits
        ba = model(**gpt.collate(swapped, 0, "similarity", lm=False)).logits
        torch.testing.assert_close(ab, ba, rtol=0, atol=1e-6)
        # (h(A; B) + h(B; A)) W_y, each order run on its own
        one = features[0]["input_ids"]
        h = [model.transformer(torch.tensor([x])).last_hidden_state[0, -1] for x in one]
        torch.testing.assert_close(ab[0], model.score(h[0] + h[1]), rtol=0, atol=1e-5)


@pytest.mark.parametrize("shape", ["classification", "similarity", "choice"])
def test_the_auxiliary_lm_term_is_lambda_times_the_lm_loss_on_the_same_inputs(tok, shape):
    tok = gpt.with_task_tokens(tok)
    head = {"classification": "sequence", "similarity": "similarity", "choice": "choice"}[shape]
    cfg = gpt2_tiny(vocab_size=tok.vocab_size, n_embd=16, n_head=2, pad_token_id=0)
    torch.manual_seed(0)
    model = registry.get("gpt2").make(cfg, registry.get("gpt2").architecture_for(head)).eval()
    if shape == "choice":
        examples = [ChoiceExample("0", "a dog ran", "the", ["cat", "mat", "dog ran on", "a"], 2)] * 2
    else:
        examples = [
            TextExample("0", "a dog ran", "the cat", 1),
            TextExample("1", "the mat", "a cat sat on", 0),
        ]
    batch = gpt.collate(gpt.encode_task(examples, tok, shape, 64), 0, shape)
    plain = gpt.collate(gpt.encode_task(examples, tok, shape, 64), 0, shape, lm=False)
    lm = GPT2LMHeadModel(cfg).eval()  # the same weights, as a language model
    lm.transformer.load_state_dict(model.transformer.state_dict())
    ids, mask = batch["input_ids"], batch["attention_mask"]
    with torch.no_grad():
        task = model(**plain)
        task = task.mc_loss if shape == "choice" else task.loss
        lm_loss = lm(
            ids.flatten(0, -2), mask.flatten(0, -2), labels=ids.masked_fill(mask == 0, -100).flatten(0, -2)
        )
        assert torch.equal(decoder_loss(model, batch, shape, 0.0), task)
        assert torch.equal(decoder_loss(model, plain, shape, 0.5), task)  # no LM labels: nothing to add
        torch.testing.assert_close(decoder_loss(model, batch, shape, 0.5), task + 0.5 * lm_loss.loss)
        torch.testing.assert_close(decoder_loss(model, batch, shape, 2.0), task + 2.0 * lm_loss.loss)


def test_a_decoder_tags_the_words_as_running_text_at_each_words_first_piece(tok):
    """Tagging, not among GPT-1's tasks: no [start] / [extract], the words' pieces as in running text, the tag
    on each word's first piece, padded with −100; the loss is the token classifier's alone (no LM head)."""
    conll = task_registry.get("conll2003")
    sentence = TaggedSentence(
        "train.txt:1", ["the", "cat", "sat", "on", "a", "mat"], ["O", "B-LOC", "O", "O", "O", "B-LOC"]
    )
    other = TaggedSentence("train.txt:8", ["a", "dog"], ["O", "B-PER"])
    label2id = {"O": 0, "B-LOC": 1, "B-PER": 2}
    cfg = gpt2_tiny(vocab_size=tok.vocab_size, n_embd=16, n_head=2, id2label={0: "O", 1: "B-LOC", 2: "B-PER"})
    torch.manual_seed(0)
    model = registry.get("gpt2").make(cfg, "GPT2ForTokenClassification").eval()
    assert (
        decoder_inputs(model, tok, "tokens") is tok and model.config.vocab_size == tok.vocab_size
    )  # no token added
    settings = FinetuneDataConfig(task="conll2003", max_seq_length=64)
    features = conll.features(
        [sentence, other], tok, {i: t for t, i in label2id.items()}, settings, decoder=True
    )
    f = features[0]
    assert f["input_ids"] == ids(tok, "the cat sat on a mat")  # the text itself, no token added
    firsts = [i for i, w in enumerate(f["word_ids"]) if w >= 0]
    assert [f["labels"][i] for i in firsts] == [label2id[t] for t in sentence.tags]
    assert all(y == -100 for i, y in enumerate(f["labels"]) if i not in firsts)
    batch = gpt.collate(features, model.config.pad_token_id or 0, "tokens", lm=False)
    assert set(batch) == {"input_ids", "attention_mask", "labels"}  # no token types: GPT-2 would embed them
    n = len(features[1]["input_ids"])
    assert batch["labels"].shape == batch["input_ids"].shape and (batch["labels"][1, n:] == -100).all()
    with torch.no_grad():
        logits = model(batch["input_ids"], batch["attention_mask"]).logits
        expected = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100
        )
        torch.testing.assert_close(decoder_loss(model, batch, "tokens", 0.5), expected)


# --- end to end
def sentence(rng, extra):
    words = list(rng.choice(FILLER, size=rng.integers(3, 8))) + [extra]
    rng.shuffle(words)
    return " ".join(words)


def write_glue(folder, task, rng, n=(240, 40)):
    folder.mkdir()
    for split, count in zip(("train", "dev"), n, strict=True):
        if task == "sst2":
            rows = ["sentence\tlabel"]
            for _ in range(count):
                y = int(rng.integers(2))
                rows.append(f"{sentence(rng, rng.choice(GOOD if y else BAD))}\t{y}")
        elif task == "mrpc":  # equivalent when both sentences carry a word of one polarity
            rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
            for i in range(count):
                y = int(rng.integers(2))
                a, b = rng.choice(GOOD), rng.choice(GOOD if y else BAD)
                rows.append(f"{y}\t{i}\t{i}\t{sentence(rng, a)}\t{sentence(rng, b)}")
        else:  # stsb: the grade of the graded word in sentence b
            rows = ["index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"]
            for i in range(count):
                k = int(rng.integers(len(GRADES)))
                rows.append(
                    f"{i}\tg\tf\t2020\t{i}\ts\ts\t{sentence(rng, 'he')}\t{sentence(rng, GRADES[k])}\t{k:.1f}"
                )
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def write_swag(folder, rng):
    folder.mkdir()
    header = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
              "ending0", "ending1", "ending2", "ending3", "label"]  # fmt: skip
    for split, n in (("train", 120), ("val", 20)):
        with open(folder / f"{split}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            for i in range(n):
                y = int(rng.integers(4))
                endings = [" ".join(rng.choice(BAD + FILLER, 3)) for _ in range(4)]
                endings[y] = f"{rng.choice(GOOD)} {endings[y]}"
                w.writerow([i, "v", "f", "s", sentence(rng, "film"), "it was", "gold", *endings, y])


def finetune(task, data, init, out, *extra):
    return main(["finetune", "--task", task, "--init", str(init), "--data", str(data), "--out", str(out),
                 "--set", "train.lr=3e-3", "--set", "data.batch_size=16", "--set", "train.log_every=5", *extra])  # fmt: skip


def test_classification_learns_writes_a_transformers_checkpoint_and_serves_the_pipeline(
    gpt2_dir, tmp_path, capsys
):
    transformers = pytest.importorskip("transformers")
    write_glue(tmp_path / "sst2", "sst2", np.random.default_rng(0))
    assert finetune("sst2", tmp_path / "sst2", gpt2_dir, tmp_path / "run", "--set", "train.max_epochs=6") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_accuracy"] >= 85 and results["lm_coef"] == 0.5, results
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 40 and {json.loads(x)["prediction"] for x in lines} <= {"0", "1"}

    best = tmp_path / "run" / "best"
    config = json.loads((best / "config.json").read_text())
    tok = Tokenizer.load(best)
    assert config["architectures"] == ["GPT2ForSequenceClassification"]
    assert config["vocab_size"] == tok.vocab_size == Tokenizer.load(gpt2_dir).vocab_size + 3
    assert [tok.id_to_token(i) for i in range(tok.vocab_size - 3, tok.vocab_size)] == [
        "[start]",
        "[delim]",
        "[extract]",
    ]
    ours, _ = registry.load(best)
    theirs = transformers.GPT2ForSequenceClassification.from_pretrained(best).eval()
    batch = gpt.collate([{"input_ids": x} for x in gpt.encode_texts(["a superb film", "it was dull and poor"], tok,
                         "classification", 64)], config["pad_token_id"], "classification", lm=False)  # fmt: skip
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, theirs(**batch).logits, rtol=0, atol=1e-5)
    assert [r["label"] for r in classify(["it was awful", "a lovely story"], best)] == ["0", "1"]

    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run")]) == 0
    assert f"{results['dev_accuracy']:.2f}" in capsys.readouterr().out
    assert main(["classify", str(best), "a superb movie"]) == 0
    assert capsys.readouterr().out.startswith("1\t")


def test_a_decoder_tags_conll_learns_writes_a_transformers_checkpoint_and_serves_tag(
    gpt2_dir, tmp_path, capsys
):
    """finetune --task conll2003 from a GPT-2: a GPT2ForTokenClassification that transformers reads to the same
    logits, whose entities the tag pipeline, `seq2bert evaluate` and the server give."""
    transformers = pytest.importorskip("transformers")
    write_conll(tmp_path / "conll", np.random.default_rng(5))
    assert (
        finetune("conll2003", tmp_path / "conll", gpt2_dir, tmp_path / "run", "--set", "train.max_epochs=4")
        == 0
    )
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_f1"] >= 80 and results["lm_coef"] == 0, (
        results
    )  # B-LOC and B-PER I-PER, read left to right
    best = tmp_path / "run" / "best"
    config = json.loads((best / "config.json").read_text())
    assert config["architectures"] == ["GPT2ForTokenClassification"]
    assert Tokenizer.load(best).vocab_size == Tokenizer.load(gpt2_dir).vocab_size == config["vocab_size"]
    ours, tok = registry.load(best)
    theirs = transformers.GPT2ForTokenClassification.from_pretrained(best).eval()
    rows = tok.ids_batch(["the film paris", "john smith was in rome"])
    ids, mask = pad_sequences(rows, config["pad_token_id"])  # padded on the right, as fine-tuning does
    inputs = {"input_ids": ids, "attention_mask": mask.long()}
    with torch.no_grad():
        torch.testing.assert_close(ours(**inputs).logits, theirs(**inputs).logits, rtol=0, atol=1e-5)
    place, person = PLACES[1], PEOPLE[2]
    found = tag(f"the film was in {place} and {person} smith", best)
    assert [(e["entity_group"], e["word"]) for e in found] == [("LOC", place), ("PER", f"{person} smith")]
    assert "tag" in served_pipelines(best)[2]
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run")]) == 0
    assert f"{results['dev_f1']:.2f}" in capsys.readouterr().out


@pytest.mark.parametrize("task", ["mrpc", "stsb"])
def test_similarity_tasks_write_our_similarity_architecture(gpt2_dir, tmp_path, capsys, task):
    write_glue(tmp_path / task, task, np.random.default_rng(1), n=(120, 30))
    assert finetune(task, tmp_path / task, gpt2_dir, tmp_path / "run", "--set", "train.max_epochs=2") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    metric = {"mrpc": "dev_f1", "stsb": "dev_pearson"}[task]
    assert metric in results and (tmp_path / "run" / "best" / "model.safetensors").is_file()
    best = tmp_path / "run" / "best"
    assert json.loads((best / "config.json").read_text())["architectures"] == ["GPT2ForSimilarity"]
    model = seq2bert.from_pretrained(best)
    assert type(model).__name__ == "GPT2ForSimilarity"
    one, two = classify([("a fine film", "he was lovely"), ("he was lovely", "a fine film")], best)
    assert one == pytest.approx(two)  # both orders, added: the same score either way
    capsys.readouterr()
    assert main(["classify", str(best), "a fine film\the was lovely"]) == 0
    assert capsys.readouterr().out.count("\t") == 3


def test_multiple_choice_uses_the_double_heads_model(gpt2_dir, tmp_path):
    transformers = pytest.importorskip("transformers")
    write_swag(tmp_path / "swag", np.random.default_rng(2))
    assert finetune("swag", tmp_path / "swag", gpt2_dir, tmp_path / "run", "--set", "train.max_epochs=2") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert 0 <= results["dev_accuracy"] <= 100
    best = tmp_path / "run" / "best"
    assert json.loads((best / "config.json").read_text())["architectures"] == ["GPT2DoubleHeadsModel"]
    ours, tok = registry.load(best)
    theirs = transformers.GPT2DoubleHeadsModel.from_pretrained(best).eval()
    q = ChoiceExample("0", "the film", "it was", ["great", "dull", "a poor film", "fine"], 0)
    batch = gpt.collate(gpt.encode_task([q], tok, "choice", 64), ours.config.pad_token_id, "choice", lm=False)
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "mc_token_ids")}
    with torch.no_grad():
        torch.testing.assert_close(ours(**inputs).mc_logits, theirs(**inputs).mc_logits, rtol=0, atol=1e-5)


def test_gpt1_fine_tunes_entailment_and_lambda_zero_switches_the_lm_term_off(tmp_path):
    tok = vocabulary(tmp_path, "gpt1-bpe")
    torch.manual_seed(0)
    registry.get("openai-gpt").make(gpt1_tiny(vocab_size=tok.vocab_size, n_embd=32, n_head=2, n_positions=64),
                                    "OpenAIGPTLMHeadModel").save_pretrained(tmp_path / "gpt1", tok)  # fmt: skip
    (tmp_path / "rte").mkdir()
    for split in ("train", "dev"):
        rows = ["index\tsentence1\tsentence2\tlabel"] + [
            f"{i}\tthe film was {GOOD[i % 4]}\tit was {(GOOD + BAD)[i % 8]}\t{'not_' if i % 8 > 3 else ''}entailment"
            for i in range(32)
        ]
        (tmp_path / "rte" / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    assert finetune("rte", tmp_path / "rte", tmp_path / "gpt1", tmp_path / "run", "--set", "train.max_steps=3",
                    "--set", "lm_coef=0") == 0  # fmt: skip
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["lm_coef"] == 0 and "dev_accuracy" in results
    model, tok = registry.load(tmp_path / "run" / "best")
    assert type(model).__name__ == "OpenAIGPTForSequenceClassification"
    assert model.config.pad_token_id == tok.token_to_id("<unk>")  # GPT-1's BPE has no [PAD] nor end of text


def test_a_fine_tuned_checkpoint_starts_another_run_with_its_tokens_once(gpt2_dir, tmp_path):
    model, tok, new = init_task_model(registry.get("gpt2"), gpt2_dir, "GPT2ForSequenceClassification")
    assert new == ["score.weight"]
    tok = decoder_inputs(model, tok, "classification")
    model.save_pretrained(tmp_path / "tuned", tok)
    again, tok2, _ = init_task_model(registry.get("gpt2"), tmp_path / "tuned", "GPT2ForSimilarity")
    assert decoder_inputs(again, tok2, "similarity").vocab_size == tok.vocab_size == again.config.vocab_size
    assert torch.equal(again.transformer.embeddings.token.weight, model.transformer.embeddings.token.weight)


def test_a_killed_fine_tuning_run_resumes_exactly(gpt2_dir, tmp_path):
    import shutil

    from safetensors.torch import load_file

    write_glue(tmp_path / "mrpc", "mrpc", np.random.default_rng(4), n=(64, 16))
    steps = ["--set", "train.max_steps=6", "--set", "train.eval_every=3"]
    for run in ("a", "b"):
        assert finetune("mrpc", tmp_path / "mrpc", gpt2_dir, tmp_path / run, *steps) == 0
    for name in ("checkpoint-6", "best", "results.json"):
        path = tmp_path / "b" / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert main(["finetune", "--out", str(tmp_path / "b"), "--resume"]) == 0  # the rest from run.json
    a, b = (load_file(tmp_path / run / "checkpoint-6" / "model.safetensors") for run in ("a", "b"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    "task, setting, message",
    [
        (
            "squad",
            "lm_coef=0.5",
            "data.task: gpt2 is a decoder; task squad: a decoder fine-tunes on cola,",
        ),
        ("sst2", "lm_coef=-1", "lm_coef: must be >= 0"),
        ("sst2", "data.max_seq_length=128", "data.max_seq_length: 128 is longer than the 64 positions"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(gpt2_dir, tmp_path, capsys, task, setting, message):
    write_glue(tmp_path / "sst2", "sst2", np.random.default_rng(3), n=(8, 4))
    assert finetune(task, tmp_path / "sst2", gpt2_dir, tmp_path / "run", "--set", setting) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_random_init_keeps_the_architecture_and_tokenizer_but_not_the_weights(gpt2_dir, tmp_path):
    from safetensors.torch import load_file

    pretrained = load_file(gpt2_dir / "model.safetensors")
    model, tok, _ = init_task_model(
        registry.get("gpt2"), gpt2_dir, "GPT2ForSequenceClassification", random_init=True
    )
    assert tok.vocab_size == Tokenizer.load(gpt2_dir).vocab_size
    fresh = model.state_dict()
    token = fresh["transformer.embeddings.token.weight"]
    assert token.shape == pretrained["transformer.wte.weight"].shape
    assert not torch.equal(token, pretrained["transformer.wte.weight"])
    write_glue(tmp_path / "sst2", "sst2", np.random.default_rng(0), n=(32, 8))
    assert (
        finetune(
            "sst2", tmp_path / "sst2", gpt2_dir, tmp_path / "r", "--random-init", "--set", "train.max_steps=2"
        )
        == 0
    )
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["steps"] == 2 and results["lm_coef"] == 0.5
