"""Tests for seq2bert.data.qa: windows, answer targets, span decoding, and the round trip
examples → features → oracle logits → answers, with the real uncased WordPiece vocabulary of all-MiniLM-L6-v2.
"""

import gzip
import json
import re
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pytest
import torch

from seq2bert.data.qa import QAFeature, make_features, postprocess
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import DataError, UserError

try:
    from seq2bert.data.squad import Answer, QAExample
except ImportError:  # squad.py is written in parallel; these stand-ins have exactly its fields

    @dataclass
    class Answer:
        text: str
        start: int

    @dataclass
    class QAExample:
        id: str
        title: str
        context: str
        question: str
        answers: list = field(default_factory=list)
        is_impossible: bool = False


@cache
def _tokenizer(path: str) -> Tokenizer:
    return Tokenizer.from_file(path)


@pytest.fixture
def tok(minilm_dir) -> Tokenizer:
    return _tokenizer(str(minilm_dir))


def example(
    context: str,
    answer: str | None = None,
    *,
    at: int | None = None,
    qid: str = "q0",
    question: str = "What is it?",
) -> QAExample:
    """An example whose answer is ``answer`` at character ``at`` (default: its first occurrence)."""
    if answer is None:
        return QAExample(qid, "t", context, question, [], is_impossible=True)
    start = context.index(answer) if at is None else at
    return QAExample(qid, "t", context, question, [Answer(answer, start)])


def oracle_logits(
    features: list[QAFeature], value: float = 10.0
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Logits that put ``value`` exactly on each window's own training target."""
    starts, ends = [], []
    for f in features:
        s, e = np.zeros(len(f)), np.zeros(len(f))
        s[f.start_position] = e[f.end_position] = value
        starts.append(s)
        ends.append(e)
    return starts, ends


LONG = (
    "Le Café de Flore, opened in 1887 on the Boulevard Saint-Germain in Paris (France), is one of the oldest "
    "coffeehouses in the city. It was celebrated for its high-profile clientele, which included writers, "
    "philosophers and actors; Jean-Paul Sartre and Simone de Beauvoir worked there daily during the war. "
    "Today it still serves about 1,500 customers a day, and its hot chocolate costs €7.50 — a price that "
    "tourists rarely question. The last sentence of this paragraph ends here."
)


# ---------------------------------------------------------------------- windows


def test_windows_overlap_by_width_minus_stride_and_cover_every_context_token(tok):
    ex = example(LONG, "Boulevard Saint-Germain")
    max_seq_length, stride = 40, 10
    feats = make_features([ex, ex], tok, max_seq_length=max_seq_length, doc_stride=stride)
    full = tok.encode(LONG, add_special_tokens=False)
    q = tok.encode(ex.question, add_special_tokens=False).ids
    width, n, head = max_seq_length - len(q) - 3, len(full), len(q) + 2
    windows = [f for f in feats if f.example_index == 0]
    assert [f.example_index for f in feats] == [0] * len(windows) + [1] * len(windows)
    assert len(windows) >= 4

    covered = []
    for k, f in enumerate(windows):
        lo, hi = k * stride, min(k * stride + width, n)
        assert len(f) <= max_seq_length
        assert f.input_ids == [tok.cls_token_id, *q, tok.sep_token_id, *full.ids[lo:hi], tok.sep_token_id]
        assert f.token_type_ids == [0] * head + [1] * (hi - lo + 1)
        assert f.attention_mask == [1] * len(f)
        assert f.offsets == [None] * head + full.offsets[lo:hi] + [None]
        covered.append(set(range(lo, hi)))
    assert all(len(w) == width for w in covered[:-1])  # only the last window may be short
    assert max(covered[-1]) == n - 1 and max(covered[-2]) < n - 1  # the first window to reach the end is last
    assert all(len(a & b) == width - stride for a, b in zip(covered[:-1], covered[1:], strict=True))
    assert set().union(*covered) == set(range(n))


def test_a_context_that_fits_gives_one_window_and_an_empty_context_still_gives_one(tok):
    (one,) = make_features([example("Paris is in France.", "France")], tok)
    assert tok.decode(one.input_ids) == "what is it? paris is in france."
    (empty,) = make_features([example("")], tok)
    assert empty.input_ids[-2:] == [tok.sep_token_id, tok.sep_token_id]
    assert (empty.start_position, empty.end_position) == (0, 0)
    assert (
        postprocess([example("")], [empty], [np.zeros(len(empty))], [np.zeros(len(empty))])["q0"].text == ""
    )


# ---------------------------------------------------------------------- answer targets


def assert_targets(ex: QAExample, feats: list[QAFeature], tok: Tokenizer, expected: str) -> None:
    """The windows holding the whole answer point at it exactly; the others point at [CLS]."""
    full = tok.encode(ex.context, add_special_tokens=False)
    a = ex.answers[0].start + len(ex.answers[0].text) - len(ex.answers[0].text.lstrip())
    b = a + len(expected)
    inside = {full.offsets[i] for i in range(len(full)) if full.offsets[i][1] > a and full.offsets[i][0] < b}
    hits = 0
    for f in feats:
        if inside <= set(f.offsets):
            hits += 1
            s, e = f.start_position, f.end_position
            assert 0 < s <= e and f.offsets[s] is not None and f.offsets[e] is not None
            assert ex.context[f.offsets[s][0] : f.offsets[e][1]] == expected
        else:
            assert (f.start_position, f.end_position) == (0, 0)
    assert hits >= 1


@pytest.mark.parametrize(
    "answer, at, expected",
    [
        ("Le Café", 0, "Le Café"),  # start of the context, an accent the uncased normalizer strips
        ("Café de Flore", None, "Café de Flore"),
        ("Paris (France)", None, "Paris (France)"),  # punctuation inside and at the end
        ("Jean-Paul Sartre", None, "Jean-Paul Sartre"),
        ("€7.50", None, "€7.50"),
        ("1,500", None, "1,500"),
        ("ends here.", None, "ends here."),  # the last tokens of the context
        (" 1887", LONG.index(" 1887"), "1887"),  # starts on a space: the target starts on the next token
        ("coffeehouses ", LONG.index("coffeehouses"), "coffeehouses"),  # a trailing space is not part of it
    ],
)
def test_answer_targets_point_exactly_at_the_answer(tok, answer, at, expected):
    ex = example(LONG, answer, at=at)
    feats = make_features([ex], tok, max_seq_length=32, doc_stride=8)
    assert len(feats) > 5
    assert_targets(ex, feats, tok, expected)


@pytest.mark.parametrize(
    "answer_tokens",  # (first, last) context token of the answer, from the window width W and the stride s
    [
        lambda w, s: (w - 2, w + 1),  # straddles the end of window 0: only window 1 holds it
        lambda w, s: (w - 1, w),  # ends one token past window 0
        lambda w, s: (w - 3, w - 1),  # ends on the last token of window 0: windows 0 and 1 hold it
        lambda w, s: (s - 1, s + 1),  # starts one token before window 1
    ],
    ids=["straddles", "one-past-the-end", "last-tokens", "one-before-the-start"],
)
def test_answers_near_window_edges_are_targets_exactly_in_the_windows_that_hold_them(tok, answer_tokens):
    full = tok.encode(LONG, add_special_tokens=False)
    q = tok.encode("What is it?", add_special_tokens=False).ids
    max_seq_length, stride = 32, 8
    width, head, n = max_seq_length - len(q) - 3, len(q) + 2, len(full)
    t0, t1 = answer_tokens(width, stride)
    lo, hi = full.offsets[t0][0], full.offsets[t1][1]
    ex = example(LONG, LONG[lo:hi], at=lo)
    feats = make_features([ex], tok, max_seq_length=max_seq_length, doc_stride=stride)
    for k, f in enumerate(feats):
        s, e = k * stride, min(k * stride + width, n)  # window k holds context tokens [s, e)
        held = s <= t0 and t1 < e
        assert (f.start_position, f.end_position) == ((head + t0 - s, head + t1 - s) if held else (0, 0)), k
        if held:
            assert LONG[f.offsets[f.start_position][0] : f.offsets[f.end_position][1]] == LONG[lo:hi]
    assert_targets(ex, feats, tok, LONG[lo:hi])


def test_unanswerable_questions_point_every_window_at_cls(tok):
    feats = make_features([example(LONG)], tok, max_seq_length=32, doc_stride=8)
    assert {(f.start_position, f.end_position) for f in feats} == {(0, 0)}


def test_question_is_cut_to_max_query_length(tok):
    question = "why " * 50
    (f,) = make_features([example("Paris.", "Paris", question=question)], tok, max_query_length=5)
    assert f.input_ids[:7] == [tok.cls_token_id] + [tok.token_to_id("why")] * 5 + [tok.sep_token_id]
    assert f.token_type_ids == [0] * 7 + [1] * 3 and f.start_position == 7


# ---------------------------------------------------------------------- postprocess on hand-made logits


def hand_feature(context: str, example_index: int = 0, words: slice = slice(None)) -> QAFeature:
    """[CLS] q [SEP] <the whitespace-separated ``words`` of context> [SEP], with their true offsets."""
    offsets = [None, None, None, *[(m.start(), m.end()) for m in re.finditer(r"\S+", context)][words], None]
    n = len(offsets)
    return QAFeature(example_index, list(range(n)), [0] * 3 + [1] * (n - 3), [1] * n, offsets, 0, 0)


def logits(n: int, base: float = 0.0, **at: float) -> np.ndarray:
    """A row of ``base`` with values at positions given as t<i>=value."""
    row = np.full(n, base)
    for key, value in at.items():
        row[int(key[1:])] = value
    return row


CONTEXT = "I flew to New  York city last spring ."  # tokens t3..t10: I flew to New York city last spring .


@pytest.mark.parametrize("kind", ["numpy", "torch", "list", "padded"])
def test_postprocess_returns_the_span_of_the_original_text(kind):
    ex, f = example(CONTEXT, "New  York"), hand_feature(CONTEXT)
    s, e = logits(len(f), t6=10.0, t0=50.0, t1=40.0), logits(len(f), t7=10.0, t0=50.0, t2=40.0)
    if kind == "torch":
        s, e = torch.tensor(s[None], dtype=torch.bfloat16), torch.tensor(e[None], dtype=torch.bfloat16)
    elif kind == "list":
        s, e = [s.tolist()], [e.tolist()]
    elif kind == "padded":  # a (F, T) batch padded past the feature's length
        s, e = np.pad(s[None], ((0, 0), (0, 5)), constant_values=99), np.pad(e[None], ((0, 0), (0, 5)))
    else:
        s, e = [s], [e]
    pred = postprocess([ex], [f], s, e)["q0"]
    assert (pred.text, pred.start, pred.end, pred.score) == ("New  York", 10, 19, 20.0)
    assert 0 < pred.probability <= 1


def test_max_answer_length_and_end_before_start_are_skipped():
    ex, f = example(CONTEXT, "New  York"), hand_feature(CONTEXT)
    n = len(f)
    # Best pair t6..t10 (score 20) is 5 tokens long; t6..t7 (score 15) fits in 2.
    pred = postprocess([ex], [f], [logits(n, t6=10)], [logits(n, t10=10, t7=5)], max_answer_length=2)["q0"]
    assert (pred.text, pred.score) == ("New  York", 15.0)
    pred = postprocess([ex], [f], [logits(n, t6=10)], [logits(n, t10=10, t7=5)], max_answer_length=1)["q0"]
    assert (pred.text, pred.score) == ("New", 10.0)
    assert postprocess([ex], [f], [logits(n, t6=10)], [logits(n, t10=10, t7=5)])["q0"].text == (
        "New  York city last spring"
    )
    # Best pair ends (t4) before it starts (t8): the next best valid pair t5..t7 wins.
    pred = postprocess([ex], [f], [logits(n, t8=10, t5=7)], [logits(n, t4=10, t7=7)])["q0"]
    assert (pred.text, pred.score) == ("to New  York", 14.0)


def test_the_best_span_across_windows_wins_and_probabilities_are_an_nbest_softmax():
    context = "alpha beta gamma delta epsilon zeta"
    ex = example(context, "delta")
    a, b = hand_feature(context, words=slice(0, 4)), hand_feature(context, words=slice(2, 6))
    a_s, a_e = logits(len(a), t4=3), logits(len(a), t4=3)  # "beta" scores 6 in window a
    b_s, b_e = logits(len(b), t4=4), logits(len(b), t5=4)  # "delta epsilon" scores 8 in window b
    pred = postprocess([ex], [a, b], [a_s, b_s], [a_e, b_e], n_best_size=2)["q0"]
    assert (pred.text, pred.start, pred.end, pred.score) == ("delta epsilon", 17, 30, 8.0)
    # The 2 best starts and ends of each window leave two spans: "beta" (6) and "delta epsilon" (8).
    assert pred.probability == pytest.approx(1 / (1 + np.exp(-2)))
    assert postprocess([ex], [a, b], [a_s, b_s], [a_e, b_e], n_best_size=1)["q0"].probability == 1.0


# Window b holds words 0..4 ("one" .. "five"), window a words 2..5 ("three" .. "six"). The word "four" is
# 3rd of 5 in b (context min(3, 1) + 0.05) and 2nd of 4 in a (min(1, 2) + 0.04): b is its max-context window.
MAX_CONTEXT = "one two three four five six"


def test_a_span_held_by_several_windows_comes_from_its_max_context_window():
    ex = example(MAX_CONTEXT, "four")
    b, a = hand_feature(MAX_CONTEXT, words=slice(0, 5)), hand_feature(MAX_CONTEXT, words=slice(2, 6))
    a_s = a_e = logits(len(a), base=-10, t4=9)  # "four" scores 18 in a, where it has less context
    b_s = b_e = logits(len(b), t6=2)  # and 4 in b
    pred = postprocess([ex], [b, a], [b_s, a_s], [b_e, a_e])["q0"]
    assert (pred.text, pred.score) == ("four", 4.0)
    # Two windows that place it alike: the first one wins the tie (as in run_squad.py).
    pred = postprocess([ex], [b, b], [b_s, a_s[:1].repeat(len(b))], [b_e, b_e + 7])["q0"]
    assert (pred.text, pred.score) == ("four", 4.0)


def test_a_span_only_one_window_holds_is_kept_even_if_its_first_token_has_more_context_elsewhere():
    # run_squad.py would drop "four five six" from a (b is the max-context window of "four", but b has no "six").
    ex = example(MAX_CONTEXT, "four five six")
    b, a = hand_feature(MAX_CONTEXT, words=slice(0, 5)), hand_feature(MAX_CONTEXT, words=slice(2, 6))
    a_s, a_e = logits(len(a), t4=9), logits(len(a), t6=9)
    pred = postprocess([ex], [b, a], [np.zeros(len(b)), a_s], [np.zeros(len(b)), a_e])["q0"]
    assert (pred.text, pred.score) == ("four five six", 18.0)


def test_version_2_predicts_no_answer_when_the_null_score_beats_the_best_span_by_the_threshold():
    ex, f = example(CONTEXT, "New  York"), hand_feature(CONTEXT)
    n = len(f)

    def run(null: float, threshold: float = 0.0, version_2: bool = True):
        s, e = logits(n, t6=10, t0=null / 2), logits(n, t7=5, t0=null / 2)  # best span scores 15
        return postprocess([ex], [f], [s], [e], version_2=version_2, null_score_diff_threshold=threshold)[
            "q0"
        ]

    no = run(null=20)
    assert (no.text, no.start, no.end, no.score) == ("", 0, 0, 20.0)
    assert run(null=10).text == "New  York"
    assert run(null=20, threshold=6).text == "New  York"  # 20 - 15 = 5 is not above the threshold
    assert run(null=20, version_2=False).text == "New  York"  # SQuAD v1 always answers


def test_version_2_null_score_is_the_minimum_over_windows():
    ex = example(CONTEXT, "New  York")
    a, b = hand_feature(CONTEXT, words=slice(5, None)), hand_feature(CONTEXT)
    a_s, a_e = logits(len(a), t0=15), logits(len(a), t0=15)  # null 30 in window a
    b_s, b_e = logits(len(b), t0=6, t6=10), logits(len(b), t0=6, t7=5)  # null 12 in window b, span 15
    pred = postprocess([ex], [a, b], [a_s, b_s], [a_e, b_e], version_2=True)["q0"]
    assert pred.text == "New  York"


def test_postprocess_rejects_logits_that_do_not_match_the_features():
    ex, f = example(CONTEXT, "New  York"), hand_feature(CONTEXT)
    with pytest.raises(UserError, match="2 rows but there are 1 features"):
        postprocess([ex], [f], np.zeros((2, len(f))), np.zeros((2, len(f))))
    with pytest.raises(UserError, match="positions"):
        postprocess([ex], [f], np.zeros((1, 3)), np.zeros((1, 3)))
    with pytest.raises(UserError, match="q1 has no feature"):
        postprocess([ex, example(CONTEXT, qid="q1")], [f], [np.zeros(len(f))], [np.zeros(len(f))])


# ---------------------------------------------------------------------- round trip with the real vocabulary

PARAGRAPHS = [
    (
        "Super Bowl 50 was an American football game to determine the champion of the National Football League "
        "(NFL) for the 2015 season. The American Football Conference (AFC) champion Denver Broncos defeated the "
        "National Football Conference (NFC) champion Carolina Panthers 24–10 to earn their third Super Bowl title. "
        "The game was played on February 7, 2016, at Levi's Stadium in the San Francisco Bay Area at Santa Clara, "
        "California.",
        [
            ("Who won Super Bowl 50?", "Denver Broncos"),
            ("What was the score?", "24–10"),
            ("Where was the game played?", "Levi's Stadium"),
            ("When was it played?", "February 7, 2016"),
            ("Which state?", "Santa Clara, California."),
            ("Which league?", "National Football League (NFL)"),
        ],
    ),
    (
        "Nikola Tesla (Serbian Cyrillic: Никола Тесла; 10 July 1856 – 7 January 1943) was a Serbian American "
        "inventor, électrical engineer, mechanical engineer, physicist, and futurist best known for his "
        "contributions to the design of the modern alternating current (AC) electricity supply system.",
        [
            ("What was Tesla's name in Cyrillic?", "Никола Тесла"),
            ("When was he born?", "10 July 1856"),
            ("What kind of engineer?", "électrical engineer"),
            ("What supply system?", "alternating current (AC)"),
        ],
    ),
    (
        "Le Café de Flore is a café in Paris. Its  famous  terrace faces the Boulevard Saint-Germain.",
        [
            ("What is it?", "Le Café de Flore"),
            ("What faces the boulevard?", "famous  terrace"),
            ("What does it face?", "Boulevard Saint-Germain."),
            ("Decomposed accent?", None),
        ],
    ),
]


def round_trip_examples() -> list[QAExample]:
    examples = []
    for p, (context, qas) in enumerate(PARAGRAPHS):
        for k, (question, answer) in enumerate(qas):
            examples.append(example(context, answer, qid=f"p{p}q{k}", question=question))
    # An NFD "Café" (e + combining acute): the normalizer drops the accent, its token stops before it.
    nfd = "They met at the Cafe\u0301 on Sunday."
    examples.append(example(nfd, "Cafe\u0301", qid="nfd"))
    return examples


@pytest.mark.parametrize("max_seq_length, doc_stride", [(384, 128), (40, 12), (28, 6)])
def test_round_trip_with_oracle_logits_returns_the_gold_answers_exactly(tok, max_seq_length, doc_stride):
    examples = round_trip_examples()
    feats = make_features(examples, tok, max_seq_length=max_seq_length, doc_stride=doc_stride)
    assert all(len(f) <= max_seq_length for f in feats)
    starts, ends = oracle_logits(feats)
    preds = postprocess(examples, feats, starts, ends, version_2=True)
    assert set(preds) == {ex.id for ex in examples}
    for ex in examples:
        gold = ex.answers[0].text if ex.answers else ""
        assert preds[ex.id].text == gold, ex.id
        if gold:
            assert (preds[ex.id].start, preds[ex.id].end) == (
                ex.answers[0].start,
                ex.answers[0].start + len(gold),
            )


@pytest.mark.data
def test_round_trip_on_real_squad_dev(tok, shared_data):
    with gzip.open(shared_data / "squad" / "dev-v1.1.json.gz", "rt", encoding="utf-8") as fh:
        articles = json.load(fh)["data"][:2]
    examples = [
        QAExample(
            qa["id"],
            article["title"],
            par["context"],
            qa["question"],
            [Answer(a["text"], a["answer_start"]) for a in qa["answers"]],
        )
        for article in articles
        for par in article["paragraphs"]
        for qa in par["qas"]
    ]
    assert len(examples) > 300
    feats = make_features(examples, tok, max_seq_length=96, doc_stride=32)
    assert len(feats) > len(examples)  # many paragraphs need several windows
    preds = postprocess(examples, feats, *oracle_logits(feats))
    exact = [preds[ex.id].text == ex.answers[0].text for ex in examples]
    assert np.mean(exact) > 0.97
    # The rest are answers WordPiece cannot cut out (gold "8" inside the token "18"): the prediction is then
    # the smallest run of whole tokens around the gold characters.
    for ex in examples:
        gold, pred = ex.answers[0], preds[ex.id]
        assert pred.start <= gold.start and gold.start + len(gold.text.rstrip()) <= pred.end, ex.id
        assert gold.text.strip() in pred.text, ex.id


# ---------------------------------------------------------------------- errors and progress


def test_too_small_max_seq_length_raises_a_data_error_naming_the_example(tok):
    ex = example(LONG, "Paris", qid="too-long-question", question="What city is the café in, exactly?")
    with pytest.raises(DataError, match="example too-long-question: max_seq_length=10") as info:
        make_features([ex], tok, max_seq_length=10)
    assert "\n" not in str(info.value)


def test_a_window_narrower_than_doc_stride_steps_by_its_width_and_skips_no_context_token(tok):
    ex = example(LONG, "Paris", question="What city is the café in, exactly?")
    feats = make_features([ex], tok, max_seq_length=30, doc_stride=20)  # the window holds fewer than 20
    spans = [[o for o in f.offsets if o is not None] for f in feats]
    width = len(spans[0])
    assert width < 20 and len(feats) > 1
    firsts = [s[0][0] for s in spans]
    for a, b in zip(spans, spans[1:], strict=False):
        assert a[-1][1] <= b[0][0] and len(b) <= width  # adjacent, not overlapping: the stride is the width
    covered = {o for s in spans for o in s}
    n_context = len(tok.encode(LONG, add_special_tokens=False).ids)
    assert len(covered) == n_context and firsts == sorted(firsts)


def test_an_answer_outside_its_context_raises_a_data_error(tok):
    ex = QAExample("bad", "t", "short", "q?", [Answer("short text", 3)])
    with pytest.raises(DataError, match="example bad: answer"):
        make_features([ex], tok)


def test_bad_arguments_raise_user_errors(tok):
    with pytest.raises(UserError, match="doc_stride=0"):
        make_features([example(LONG, "Paris")], tok, doc_stride=0)


def test_contexts_are_encoded_once_in_batches_and_progress_shows_a_bar(tok, capsys):
    calls = []

    class Spy:
        def __getattr__(self, name):  # the rest (the pair template's encode) as the tokenizer's
            return getattr(tok, name)

        def encode_batch(self, texts, **kwargs):
            calls.append((list(texts), kwargs))
            return tok.encode_batch(texts, **kwargs)

    examples = round_trip_examples()
    feats = make_features(examples, Spy(), max_seq_length=64, doc_stride=16, progress=True)
    assert feats == make_features(examples, tok, max_seq_length=64, doc_stride=16)
    contexts, questions = calls
    assert contexts[0] == list(dict.fromkeys(ex.context for ex in examples))
    assert questions[0] == [ex.question for ex in examples]
    assert all(kwargs == {"add_special_tokens": False} for _, kwargs in calls)
    assert "QA features" in capsys.readouterr().err


def test_xlnets_pair_ends_with_its_summary_token_where_a_non_answer_points(tmp_path):
    """A <sep> B <sep> <cls>: the null position is each window's last token, and the null score read there."""
    from seq2bert.models.xlnet.tokenizer import train_tokenizer

    words = "the a cat dog sat on mat in New York lives who where".split()
    rng = np.random.default_rng(0)
    (tmp_path / "t.txt").write_text("\n".join(" ".join(rng.choice(words, 8)) for _ in range(200)) + "\n")
    tok = train_tokenizer([tmp_path / "t.txt"], 200)
    context = "the cat sat on the mat in New York and the dog sat on the mat"
    answered = example(context, "New York", question="where ?")
    unanswerable = QAExample(id="q1", title="", context=context, question="who sat ?", is_impossible=True)
    features = make_features([answered, unanswerable], tok, max_seq_length=24, doc_stride=4)
    for f in features:
        assert f.input_ids[-1] == tok.cls_token_id and f.null_position == len(f.input_ids) - 1
        if f.example_index == 1 or f.start_position == f.null_position:
            assert f.start_position == f.end_position == f.null_position
        else:
            assert f.start_position < f.end_position < f.null_position
    found = [f for f in features if f.example_index == 0 and f.start_position != f.null_position]
    assert found
    # logits that put the null at <cls> and a weaker span elsewhere: SQuAD 2.0 says "no answer"
    f = found[0]
    start, end = np.zeros(len(f.input_ids)), np.zeros(len(f.input_ids))
    start[f.null_position] = end[f.null_position] = 10.0
    start[f.start_position], end[f.end_position] = 4.0, 4.0
    pred = postprocess([answered], [f], [start], [end], version_2=True)["q0"]
    assert pred.text == "" and pred.score == 20.0
    start[f.null_position] = end[f.null_position] = 1.0
    assert postprocess([answered], [f], [start], [end], version_2=True)["q0"].text == "New York"
