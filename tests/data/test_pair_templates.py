"""Every pair path frames a pair the way the model's tokenizer does in transformers: BERT (and ALBERT)
``[CLS] A [SEP] B [SEP]`` with token types 0 … 0 1 … 1, RoBERTa ``<s> A </s></s> B </s>`` with type 0
throughout — sentence-pair classification, multiple choice, and span QA's question + context windows (whose
offsets still bring the answer back)."""

import shutil

import numpy as np
import pytest
from tokenizers import AddedToken

from seq2bert.data.finetuning import encode_choices, encode_sequences
from seq2bert.data.glue import TextExample
from seq2bert.data.qa import PairTemplate, make_features, postprocess
from seq2bert.data.squad import Answer, QAExample
from seq2bert.data.swag import ChoiceExample
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.roberta.config import roberta_base
from seq2bert.models.roberta.tokenizer import save_tokenizer, train_tokenizer

transformers = pytest.importorskip("transformers")

CONTEXT = (
    "The Café de Flore opened in 1887 on the Boulevard Saint-Germain in Paris. Writers and philosophers met "
    "there daily; Simone de Beauvoir wrote  in its upstairs room during the war, and it still serves hot "
    "chocolate to tourists who rarely question the price."
)
QUESTION = "Who wrote in the upstairs room?"
ANSWER = "Simone de Beauvoir"


@pytest.fixture(scope="module")
def roberta(tmp_path_factory) -> tuple[Tokenizer, object]:
    """Our RoBERTa tokenizer trained on a text the test writes, and transformers' RobertaTokenizer reading
    the files we save (tokenizer.json, vocab.json + merges.txt, tokenizer_config.json)."""
    root = tmp_path_factory.mktemp("roberta")
    (root / "text.txt").write_text(
        "\n".join([CONTEXT, QUESTION, "A dog ran far away. The cat sat."] * 20) + "\n"
    )
    ours = train_tokenizer([root / "text.txt"], 400)
    save_tokenizer(ours, root / "tok", roberta_base(vocab_size=ours.vocab_size))
    theirs = transformers.AutoTokenizer.from_pretrained(root / "tok")
    assert type(theirs).__name__.startswith("RobertaTokenizer")
    # and from vocab.json + merges.txt alone (transformers 5 needs telling that <mask> takes the space before it)
    (root / "bpe").mkdir()
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(root / "tok" / name, root / "bpe" / name)
    mask = AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)
    from_files = transformers.RobertaTokenizer.from_pretrained(root / "bpe", mask_token=mask)
    assert from_files(QUESTION, CONTEXT)["input_ids"] == theirs(QUESTION, CONTEXT)["input_ids"]
    return ours, theirs


def bert() -> Tokenizer:
    return Tokenizer.train([CONTEXT, QUESTION] * 5, kind="wordpiece", vocab_size=200, lowercase=True)


def test_the_pair_template_is_read_off_the_tokenizer(roberta):
    ours, _ = roberta
    s, pad, e = 0, 1, 2  # <s> <pad> </s>
    assert ours.pad_token_id == pad
    rob = PairTemplate.of(ours)
    assert (rob.head, rob.middle, rob.tail, rob.type_a, rob.type_b) == (
        [(s, 0)],
        [(e, 0), (e, 0)],
        [(e, 0)],
        0,
        0,
    )
    assert rob.ids_and_types([7, 8], [9]) == ([s, 7, 8, e, e, 9, e], [0] * 7)
    tok = bert()
    cls, sep = tok.cls_token_id, tok.sep_token_id
    b = PairTemplate.of(tok)
    assert (b.head, b.middle, b.tail, b.type_a, b.type_b) == ([(cls, 0)], [(sep, 0)], [(sep, 1)], 0, 1)
    assert b.num_special == 3 and rob.num_special == 4


def test_sentence_pairs_and_choices_equal_transformers_roberta(roberta):
    ours, theirs = roberta
    pairs = [("Who met there?", "Writers and philosophers."), ("A dog ran.", " The cat  sat.")]
    features = encode_sequences([TextExample("x", a, b, 0) for a, b in pairs], ours, 64)
    for (a, b), f in zip(pairs, features, strict=True):
        expected = theirs(a, b, return_token_type_ids=True)
        assert f["input_ids"] == expected["input_ids"] and f["token_type_ids"] == expected["token_type_ids"]
        assert f["input_ids"].count(ours.sep_token_id) == 3  # <s> A </s></s> B </s>
    choice = ChoiceExample("c", "A dog ran.", "The cat", ["sat.", "ran far away."], 0)
    (f,) = encode_choices([choice], ours, 64)
    for ending, ids in zip(choice.endings, f["input_ids"], strict=True):
        assert ids == theirs(choice.context, f"{choice.start} {ending}")["input_ids"]


@pytest.mark.parametrize("family", ["roberta", "bert"])
def test_a_qa_window_equals_the_tokenizers_own_pair_and_its_offsets_give_the_answer_back(roberta, family):
    ours, theirs = roberta if family == "roberta" else (bert(), None)
    ex = QAExample("q", "t", CONTEXT, QUESTION, [Answer(ANSWER, CONTEXT.index(ANSWER))])
    (whole,) = make_features([ex], ours, max_seq_length=256, doc_stride=32)
    expected = ours.encode(QUESTION, CONTEXT)
    assert whole.input_ids == expected.ids and whole.token_type_ids == expected.type_ids
    if theirs is not None:
        enc = theirs(QUESTION, CONTEXT, return_token_type_ids=True)
        assert whole.input_ids == enc["input_ids"] and whole.token_type_ids == enc["token_type_ids"]
    # context positions: the tokenizer's own sequence 1, with its offsets into the context
    assert [o is not None for o in whole.offsets] == [s == 1 for s in expected.sequence_ids]
    assert ours.decode(whole.input_ids[whole.start_position : whole.end_position + 1]).strip().lower() == (
        ANSWER.lower()
    )

    # narrow windows: each one framed by the template, and the oracle's logits give the answer back exactly
    features = make_features([ex], ours, max_seq_length=40, doc_stride=8)
    assert len(features) > 2
    template = PairTemplate.of(ours)
    q_len = len(ours.encode(QUESTION, add_special_tokens=False).ids)
    for f in features:
        ctx = [i for i, o in zip(f.input_ids, f.offsets, strict=True) if o is not None]
        q = f.input_ids[len(template.head) : len(template.head) + q_len]
        assert (f.input_ids, f.token_type_ids) == template.ids_and_types(q, ctx) and len(f) <= 40
    starts, ends = [], []
    for f in features:
        s, e = np.zeros(len(f)), np.zeros(len(f))
        s[f.start_position] = e[f.end_position] = 10.0
        starts.append(s)
        ends.append(e)
    assert postprocess([ex], features, starts, ends)["q"].text == ANSWER


def test_a_roberta_qa_feature_runs_through_a_model_of_one_token_type(roberta):
    import torch

    from seq2bert.models.roberta.model import RobertaForQuestionAnswering

    ours, _ = roberta
    cfg = roberta_base(vocab_size=ours.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=32, max_position_embeddings=80)  # fmt: skip
    assert cfg.type_vocab_size == 1
    ex = QAExample("q", "t", CONTEXT, QUESTION, [Answer(ANSWER, CONTEXT.index(ANSWER))])
    f = make_features([ex], ours, max_seq_length=64, doc_stride=16)[0]
    ids, types = torch.tensor([f.input_ids]), torch.tensor([f.token_type_ids])
    out = RobertaForQuestionAnswering(cfg).eval()(ids, torch.ones_like(ids), types)
    assert out.start_logits.shape == ids.shape
