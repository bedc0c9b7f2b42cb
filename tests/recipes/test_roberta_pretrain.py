"""RoBERTa pretraining (Liu et al. 2019): `seq2bert pretrain` with model.model_type=roberta trains a byte-level
BPE with RoBERTa's specials, packs FULL-SENTENCES across documents, masks dynamically, takes large batches as
accumulated micro-batches, writes a RobertaForMaskedLM directory transformers reads with equal outputs, and
resumes exactly."""

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import seq2bert
from seq2bert.cli import main
from seq2bert.config import apply_overrides
from seq2bert.data.masking import knowledge_groups
from seq2bert.data.pretraining import Corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models import registry
from seq2bert.recipes.pretrain import PretrainConfig, family_data
from seq2bert.recipes.pretrain_data import PretrainDataConfig, masking_config
from tests.recipes.test_pretrain import TINY, WORDS, books  # noqa: F401 (a fixture)

ROBERTA = ["--set", "model.model_type=roberta", *TINY, "--set", "data.vocab_size=300",
           "--set", "model.max_position_embeddings=34", "--set", "train.accumulate=2"]  # fmt: skip


def test_roberta_takes_full_sentences_and_dynamic_masking_unless_the_data_section_says_otherwise():
    cfg = apply_overrides(PretrainConfig(), ["model.model_type=roberta"])
    family = registry.family_of(cfg.model)
    data = family_data(cfg.data, family.pretraining_data)
    assert (data.sentence_task, data.masking) == ("full_sentences", "dynamic")
    cfg = apply_overrides(cfg, ["data.sentence_task=none", "data.masking=static"])  # DOC-SENTENCES
    assert family_data(cfg.data, family.pretraining_data) == cfg.data
    bert = apply_overrides(PretrainConfig(), [])
    assert family_data(bert.data, registry.family_of(bert.model).pretraining_data) == bert.data


def test_pretrain_roberta_writes_what_transformers_reads_and_resumes_exactly(books, tmp_path):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    a = tmp_path / "a"
    assert main(["pretrain", str(books), "--out", str(a), *ROBERTA]) == 0
    results = json.loads((a / "results.json").read_text())
    assert results["steps"] == 6 and 0 <= results["valid_mlm_accuracy"] <= 100
    assert not any(k.startswith(("valid_nsp", "valid_sop")) for k in results)
    assert results["valid_loss"] == pytest.approx(results["valid_mlm_loss"])
    run = json.loads((a / "best" / "run.json").read_text())  # what the run did: the family's data defaults
    assert (run["data"]["sentence_task"], run["data"]["masking"]) == ("full_sentences", "dynamic")
    assert run["train"]["accumulate"] == 2

    # the tokenizer: a byte-level BPE in fairseq's layout, <s> A </s>
    tok = Tokenizer.load(a / "best")
    assert [tok.cls_token_id, tok.pad_token_id, tok.sep_token_id] == [0, 1, 2]
    assert tok.mask_token_id == tok.vocab_size - 1 and tok.vocab_size == 300
    theirs_tok = transformers.AutoTokenizer.from_pretrained(a / "best")
    text = "The cat sat on the mat."
    ids = theirs_tok(text)["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2 and ids == tok.encode(text).ids

    # best/ is a RobertaForMaskedLM transformers reads with equal outputs
    ours = seq2bert.from_pretrained(a / "best").eval()
    assert type(ours).__name__ == "RobertaForMaskedLM"
    config = json.loads((a / "best" / "config.json").read_text())
    assert config["architectures"] == ["RobertaForMaskedLM"] and config["type_vocab_size"] == 1
    theirs = transformers.RobertaForMaskedLM.from_pretrained(a / "best").eval()
    enc = theirs_tok([text, "A dog ran."], padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = theirs(**enc).logits
        got = ours(enc["input_ids"], enc["attention_mask"]).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)

    # a run that stopped after its checkpoint at step 3 and resumes ends where the uninterrupted run ended
    b = tmp_path / "b"
    assert main(["pretrain", str(books), "--out", str(b), *ROBERTA]) == 0
    for name in ("checkpoint-6", "best"):
        shutil.rmtree(b / name)
    (b / "results.json").unlink()
    assert main(["pretrain", "--out", str(b), "--resume"]) == 0
    a6, b6 = (load_file(d / "checkpoint-6" / "model.safetensors") for d in (a, b))
    assert a6.keys() == b6.keys()
    for k in a6:
        assert torch.equal(a6[k], b6[k]), k


def test_pretrain_roberta_on_doc_sentences_with_static_masking(books, tmp_path):  # noqa: F811
    short = [*ROBERTA, "--set", "train.max_steps=2", "--set", "train.eval_every=2",
             "--set", "data.sentence_task=none", "--set", "data.masking=static"]  # fmt: skip
    assert main(["pretrain", str(books), "--out", str(tmp_path / "d"), *short]) == 0
    run = json.loads((tmp_path / "d" / "best" / "run.json").read_text())
    assert (run["data"]["sentence_task"], run["data"]["masking"]) == ("none", "static")
    results = json.loads((tmp_path / "d" / "results.json").read_text())
    assert results["steps"] == 2 and results["valid_loss"] == pytest.approx(results["valid_mlm_loss"])


def test_roberta_corpus_keeps_the_space_before_a_sentence_and_an_entity_is_found_mid_sentence(tmp_path):
    """RoBERTa's byte-level BPE reads the space before a word: the corpus keeps it before each sentence (but a
    document's first), so a sentence-initial "The" is "ĠThe" as in fine-tuning text, and data.entities
    lines are matched as the words mid-sentence are tokenized; with ERNIE's stages and no data.masking, as
    RoBERTa's own masking is dynamic."""
    (tmp_path / "text").mkdir()
    docs = [
        f"The {w} sat in New York. The dog ran to New York and back. It saw New York twice." for w in WORDS
    ]
    (tmp_path / "text" / "a.txt").write_text("\n\n".join(docs) + "\n")
    (tmp_path / "entities.txt").write_text("New York\n")
    knowledge = ["--set", "data.masking_strategy=knowledge", "--set", f"data.entities={tmp_path / 'entities.txt'}",
                 "--set", 'data.knowledge_schedule=["word","entity"]', "--set", "train.max_steps=1"]  # fmt: skip
    out = tmp_path / "r"
    assert main(["pretrain", str(tmp_path / "text"), "--out", str(out), *ROBERTA, *knowledge]) == 0
    tok, corpus = Tokenizer.load(out / "tokenizer"), Corpus(out / "corpus")
    firsts = [tok.id_to_token(int(corpus.sentence(s)[0])) for s in range(3)]
    assert firsts[1:] == ["ĠThe", "ĠIt"] and not firsts[0].startswith("Ġ")  # before: "The", "It"
    data = PretrainDataConfig(masking_strategy="knowledge", entities=str(tmp_path / "entities.txt"))
    cfg = masking_config(data, tok)
    entity = tok.encode(" New York", add_special_tokens=False).ids
    assert tuple(entity) in cfg.entities
    sentence = corpus.sentence(1).tolist()  # "ĠThe Ġdog Ġran Ġto ĠNew ĠYork …"
    tokens = [tok.cls_token_id, *sentence, tok.sep_token_id]
    special = np.array([True] + [False] * len(sentence) + [True])
    groups = knowledge_groups(
        tokens, special, cfg, np.random.default_rng(0), set(cfg.continuation).__contains__
    )
    assert [tokens[i] for i in next(g for g in groups if tokens[g[0]] == entity[0])] == entity
