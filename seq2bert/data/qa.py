"""Span question answering: examples → model windows → answer spans (Devlin et al. 2018, Sect. 4.2).

BERT reads ``[CLS] question [SEP] passage [SEP]`` (token type ids 0 for the question and its two special
tokens, 1 for the passage and the final ``[SEP]``) — the tokenizer's template for a pair, so RoBERTa reads
``<s> question </s></s> passage </s>`` (all type 0), as transformers' RobertaTokenizer builds it — and learns a start vector S and an end vector E: the
probability that passage token i starts the answer is softmax_i(S·T_i), likewise for the end, and the score
of the span (i, j) is S·T_i + E·T_j, maximised over j ≥ i. For SQuAD v2 (Sect. 4.3) an unanswerable
question points both ends at ``[CLS]`` (XLNet's ``<cls>``, the last token of its pair: wherever the
tokenizer's template puts it); the null score s_null = S·C + E·C is compared with the best span
score, and "no answer" is predicted when s_null − best > τ (``null_score_diff_threshold``).

Windowing (:func:`make_features`), as in the released run_squad.py, which this module re-implements:

* the question is cut to its first ``max_query_length`` tokens;
* the passage is tokenized once (with character offsets into the original text) and read through windows
  of at most W = max_seq_length − len(question) − (the template's special tokens: 3, RoBERTa's 4) tokens; window k starts at token k·doc_stride, and the
  last window ends on the last passage token, so consecutive windows overlap by W − doc_stride tokens:

      passage tokens  0 ............................................. n-1
      window 0        [0, W)
      window 1             [s, s+W)                         s = doc_stride
      window 2                  [2s, 2s+W)  ...   last: [ks, min(ks+W, n)), the first to reach n

* the training target of a window is the token span of the first gold answer, found from characters through
  the offsets (start token: the one holding the answer's first non-space character; end token: the one
  holding its last), shifted into the window; a window that does not hold the whole answer, or an
  unanswerable question, has both ends at ``[CLS]`` (``QAFeature.null_position``: 0 for BERT).

Decoding (:func:`postprocess`) takes, in every window of an example, the ``n_best_size`` best start and end
positions, keeps the pairs that lie on passage tokens with 0 ≤ j − i < ``max_answer_length``, and picks the
best score over all windows. A span seen by several windows is only taken from its "max-context" window,
the one where its first token has the largest min(tokens to its left, tokens to its right) + 0.01·(window
length): near a window edge the model has seen too little of the passage (run_squad.py's
``_check_is_max_context``). Departure: run_squad.py compares *all* windows holding the first token, so a
span whose first token is best placed in a window that cuts the span off is lost; here only the windows
holding the whole span compete. Windows are told apart by their offsets, so features need no extra field.
The answer text is always a slice ``context[start:end]`` of the original passage, so casing, accents and
spacing come back exactly as written.
"""

from __future__ import annotations

import bisect
import logging
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from seq2bert.errors import DataError, UserError

if TYPE_CHECKING:
    from seq2bert.data.squad import QAExample
    from seq2bert.data.tokenization import Tokenizer

logger = logging.getLogger(__name__)

_CHUNK = 1000  # examples encoded per encode_batch call (the progress bar moves once per chunk)


@dataclass(frozen=True)
class PairTemplate:
    """How a tokenizer frames a pair A, B: ``head`` A ``middle`` B ``tail`` — [CLS] A [SEP] B [SEP] (BERT,
    ALBERT), <s> A </s></s> B </s> (RoBERTa) — with the token type ids of each part, read off the tokenizer's
    own post-processor (so they match what it does for a pair of texts)."""

    head: list[tuple[int, int]]  # (id, type id) of each special token
    middle: list[tuple[int, int]]
    tail: list[tuple[int, int]]
    type_a: int
    type_b: int

    @classmethod
    def of(cls, tokenizer: Tokenizer) -> PairTemplate:
        enc = tokenizer.encode("a", "b")  # each text one token or more; the specials are sequence None
        seq = enc.sequence_ids
        first_a, first_b = seq.index(0), seq.index(1)
        last_a, last_b = len(seq) - 1 - seq[::-1].index(0), len(seq) - 1 - seq[::-1].index(1)
        part = list(zip(enc.ids, enc.type_ids, strict=True))
        return cls(
            head=part[:first_a],
            middle=part[last_a + 1 : first_b],
            tail=part[last_b + 1 :],
            type_a=enc.type_ids[first_a],
            type_b=enc.type_ids[first_b],
        )

    @property
    def num_special(self) -> int:
        return len(self.head) + len(self.middle) + len(self.tail)

    def summary_at(self, cls_id: int) -> int | None:
        """Where ``cls_id`` sits in a pair: its index in ``head`` (≥ 0), or counted from the end in ``tail``
        (< 0: XLNet's A <sep> B <sep> <cls> gives −1); None when the template has no such token."""
        heads, tails = [i for i, _ in self.head], [i for i, _ in self.tail]
        if cls_id in heads:
            return heads.index(cls_id)
        return tails.index(cls_id) - len(tails) if cls_id in tails else None

    def ids_and_types(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        """The input ids and token type ids of the pair of token sequences ``a``, ``b``."""
        ids = [i for i, _ in self.head] + a + [i for i, _ in self.middle] + b + [i for i, _ in self.tail]
        types = (
            [t for _, t in self.head]
            + [self.type_a] * len(a)
            + [t for _, t in self.middle]
            + [self.type_b] * len(b)
            + [t for _, t in self.tail]
        )
        return ids, types


@dataclass
class QAFeature:
    """One window of one example: [CLS] question [SEP] context-window [SEP] in the tokenizer's template
    (PairTemplate; padding is done by the collator, not here)."""

    example_index: int
    input_ids: list[int]
    token_type_ids: list[int]
    attention_mask: list[int]
    # For context tokens: the (start, end) character span in example.context; None for question / specials.
    offsets: list[tuple[int, int] | None]
    start_position: (
        int  # answer start token in this window; null_position if not wholly inside or unanswerable
    )
    end_position: int
    null_position: int = 0  # where [CLS] is: the "no answer" of both ends (XLNet's <cls>: the last token)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class QAPrediction:
    text: str  # the answer as a span of the ORIGINAL context text (context[start:end]); "" for no answer
    score: float  # start_logit + end_logit of the chosen span (for no answer: the null score)
    start: int  # character offsets in the context (0, 0 for no answer)
    end: int
    probability: float  # softmax over the n-best list's scores (as transformers' pipeline does), for display


# ---------------------------------------------------------------------- examples → features


def make_features(
    examples: Sequence[QAExample],
    tokenizer: Tokenizer,
    *,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    progress: bool = False,
) -> list[QAFeature]:
    """Cut every example into windows of at most ``max_seq_length`` tokens (see the module docstring).

    Every example yields at least one feature (an empty context gives ``[CLS] q [SEP] [SEP]``). Raises
    :class:`DataError`, naming the example, when ``max_seq_length`` cannot hold the question and one context
    token, or when an answer lies outside its context. A window narrower than ``doc_stride`` (a long
    question) steps by its own width, so that no context token is skipped.
    """
    for name, value in (
        ("max_seq_length", max_seq_length),
        ("doc_stride", doc_stride),
        ("max_query_length", max_query_length),
    ):
        if not isinstance(value, int) or value < 1:
            raise UserError(f"{name}={value!r} must be a positive integer")
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise UserError("the tokenizer has no [CLS] or [SEP] token; span QA needs both")
    template = PairTemplate.of(tokenizer)
    summary = template.summary_at(tokenizer.cls_token_id)
    if summary is None:
        raise UserError("the tokenizer's pair has no [CLS] token, where span QA points a non-answer")

    features: list[QAFeature] = []
    bad_text: list[str] = []  # ids of examples whose answer text differs from context[start:start+len]
    bar = tqdm(total=len(examples), desc="QA features", unit="ex", disable=not progress)
    for lo in range(0, len(examples), _CHUNK):
        chunk = examples[lo : lo + _CHUNK]
        # Contexts repeat (SQuAD asks ~5 questions per paragraph): encode each distinct one once.
        contexts = list(dict.fromkeys(ex.context for ex in chunk))
        encoded = tokenizer.encode_batch(contexts, add_special_tokens=False).encodings
        by_context = dict(zip(contexts, encoded, strict=True))
        questions = tokenizer.encode_batch([ex.question for ex in chunk], add_special_tokens=False).encodings
        for i, (ex, q) in enumerate(zip(chunk, questions, strict=True)):
            ctx = by_context[ex.context]
            q_ids = q.ids[:max_query_length]
            target = _answer_tokens(ex, ctx.offsets, bad_text)
            features.extend(
                _windows(
                    lo + i,
                    ex,
                    q_ids,
                    ctx.ids,
                    ctx.offsets,
                    target,
                    template,
                    summary,
                    max_seq_length,
                    doc_stride,
                )
            )
        bar.update(len(chunk))
    bar.close()
    if bad_text:
        logger.warning(
            "%d answer(s) differ from context[start:start+len(text)] (first: example %s); "
            "their targets follow the character offsets",
            len(bad_text),
            bad_text[0],
        )
    return features


def _answer_tokens(
    ex: QAExample, offsets: list[tuple[int, int]], bad_text: list[str]
) -> tuple[int, int] | None:
    """(first, last) context token of the first gold answer, or None (no answer, or it covers no token)."""
    if ex.is_impossible or not ex.answers:
        return None
    answer = ex.answers[0]
    start, end = answer.start, answer.start + len(answer.text)  # [start, end) in characters
    if not 0 <= start <= end <= len(ex.context):
        raise DataError(
            f"example {ex.id}: answer {answer.text!r:.40} at character {start} lies outside "
            f"its context of {len(ex.context)} characters"
        )
    if ex.context[start:end] != answer.text:
        bad_text.append(ex.id)
    # Whitespace is not part of any token: trim it so an answer written " New York" starts on "New".
    span = ex.context[start:end]
    start += len(span) - len(span.lstrip())
    end -= len(span) - len(span.rstrip())
    # Token offsets are sorted and disjoint: the first token ending after `start` holds (or follows) the first
    # answer character; the last token starting before `end` holds (or precedes) the last one.
    first = bisect.bisect_right([e for _, e in offsets], start)
    last = bisect.bisect_left([s for s, _ in offsets], end) - 1
    if start >= end or first > last:
        logger.warning(
            "example %s: answer %r covers no token; it is trained as unanswerable", ex.id, answer.text
        )
        return None
    return first, last


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The span text[start:end] without the whitespace at its ends (empty: at ``start``)."""
    span = text[start:end]
    lead = len(span) - len(span.lstrip())
    return start + lead, end - (len(span) - lead - len(span.strip()))


def _windows(
    example_index: int,
    ex: QAExample,
    q_ids: list[int],
    ctx_ids: list[int],
    ctx_offsets: list[tuple[int, int]],
    target: tuple[int, int] | None,
    template: PairTemplate,
    summary: int,
    max_seq_length: int,
    doc_stride: int,
) -> list[QAFeature]:
    """The features of one example: [CLS] q [SEP] ctx[s : s+W] [SEP] (in ``template``; [CLS] at ``summary``,
    PairTemplate.summary_at) for every window start s."""
    width = max_seq_length - len(q_ids) - template.num_special  # W: context tokens per window
    if width < 1:
        raise DataError(
            f"example {ex.id}: max_seq_length={max_seq_length} cannot hold its {len(q_ids)}-token "
            f"question, {template.num_special} special tokens and a context token; raise max_seq_length or "
            f"lower max_query_length"
        )
    # a long question leaves a window narrower than doc_stride: step by the window then (as run_squad.py),
    # so that no context token falls between two windows
    doc_stride = min(doc_stride, width)
    n = len(ctx_ids)
    # Window k covers context tokens [k·doc_stride, k·doc_stride + W), until one reaches the last token.
    spans = [(s, min(s + width, n)) for s in range(0, max(n - width, 0) + doc_stride, doc_stride)]

    before = len(template.head) + len(q_ids) + len(template.middle)  # tokens before the context window
    features = []
    for s, e in spans:
        ids, types = template.ids_and_types(q_ids, ctx_ids[s:e])
        null = summary if summary >= 0 else len(ids) + summary
        start_position = end_position = null
        if target is not None and s <= target[0] and target[1] < e:
            start_position, end_position = target[0] - s + before, target[1] - s + before
        features.append(
            QAFeature(
                example_index=example_index,
                input_ids=ids,
                token_type_ids=types,
                attention_mask=[1] * len(ids),
                offsets=[None] * before + list(ctx_offsets[s:e]) + [None] * len(template.tail),
                start_position=start_position,
                end_position=end_position,
                null_position=null,
            )
        )
    return features


# ---------------------------------------------------------------------- logits → answers


def postprocess(
    examples: Sequence[QAExample],
    features: Sequence[QAFeature],
    start_logits: Any,
    end_logits: Any,
    *,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2: bool = False,
    null_score_diff_threshold: float = 0.0,
) -> dict[str, QAPrediction]:
    """The best answer of every example, keyed by example id (see the module docstring).

    ``start_logits`` / ``end_logits``: one row per feature (a (F, T) array or tensor, or a list of rows); a
    row may be longer than its feature (padding), the extra positions are ignored.
    """
    if n_best_size < 1 or max_answer_length < 1:
        raise UserError(
            f"n_best_size={n_best_size} and max_answer_length={max_answer_length} must be positive"
        )
    starts, ends = _rows(start_logits, features, "start_logits"), _rows(end_logits, features, "end_logits")
    by_example: dict[int, list[int]] = defaultdict(list)
    for f, feature in enumerate(features):
        if not 0 <= feature.example_index < len(examples):
            raise UserError(
                f"features[{f}].example_index={feature.example_index} is not an index into the "
                f"{len(examples)} examples"
            )
        by_example[feature.example_index].append(f)

    predictions: dict[str, QAPrediction] = {}
    for e, ex in enumerate(examples):
        if e not in by_example:
            raise UserError(f"example {ex.id} has no feature; pass the features make_features built for it")
        windows = by_example[e]
        # Per window: character span of each context token → its place among the window's context tokens.
        places = [_context_places(features[f]) for f in windows]
        candidates: dict[tuple[int, int], float] = {}  # (char start, char end) → best score
        null_score = float("inf")
        for w, f in enumerate(windows):
            feature, sl, el = features[f], starts[f], ends[f]  # sl, el: (T,)
            at = feature.null_position
            null_score = min(null_score, float(sl[at] + el[at]))
            for first, last, score in _spans(feature, sl, el, n_best_size, max_answer_length):
                if len(windows) > 1 and _max_context_window(places, first, last) != w:
                    continue
                span = (first[0], last[1])
                if score > candidates.get(span, -float("inf")):
                    candidates[span] = score
        ranked = sorted(candidates.items(), key=lambda kv: -kv[1])[:n_best_size]
        scores = [score for _, score in ranked]
        if version_2 or not ranked:
            scores.append(null_score)  # the null answer joins the n-best list (run_squad.py, v2)
        probs = _softmax(np.array(scores))
        if ranked and not (version_2 and null_score - ranked[0][1] > null_score_diff_threshold):
            (char_start, char_end), score, probability = ranked[0][0], ranked[0][1], probs[0]
            # The uncased normalizer drops combining accents, so no token's offsets cover them: a decomposed
            # "Cafe\u0301" ends its token before the accent. Give such marks back to the answer.
            while char_end < len(ex.context) and unicodedata.combining(ex.context[char_end]):
                char_end += 1
            # A SentencePiece piece holds the space before its word ("▁Berlin"): the answer starts after it.
            char_start, char_end = strip_span(ex.context, char_start, char_end)
        else:
            char_start = char_end = 0
            score, probability = null_score, probs[-1]
        predictions[ex.id] = QAPrediction(
            text=ex.context[char_start:char_end],
            score=float(score),
            start=char_start,
            end=char_end,
            probability=float(probability),
        )
    return predictions


def _spans(
    feature: QAFeature, sl: np.ndarray, el: np.ndarray, n_best_size: int, max_answer_length: int
) -> list[tuple[tuple[int, int], tuple[int, int], float]]:
    """(offsets of the first token, of the last token, start_logit + end_logit) of the valid spans among
    the n best starts and n best ends of one window."""
    offsets = feature.offsets
    top_starts = np.argsort(-sl, kind="stable")[:n_best_size].tolist()
    top_ends = np.argsort(-el, kind="stable")[:n_best_size].tolist()
    spans = []
    for i in top_starts:
        for j in top_ends:
            if offsets[i] is None or offsets[j] is None or j < i or j - i + 1 > max_answer_length:
                continue
            spans.append((offsets[i], offsets[j], float(sl[i] + el[j])))
    return spans


def _context_places(feature: QAFeature) -> tuple[dict[tuple[int, int], int], int]:
    """(character span of each context token → its index among the window's context tokens, their number)."""
    spans = [o for o in feature.offsets if o is not None]
    places: dict[tuple[int, int], int] = {}
    for k, span in enumerate(spans):
        places.setdefault(span, k)
    return places, len(spans)


def _max_context_window(
    places: list[tuple[dict[tuple[int, int], int], int]], first: tuple[int, int], last: tuple[int, int]
) -> int:
    """Among the windows holding the tokens ``first`` and ``last``, the one where ``first`` has the largest
    min(left, right) + 0.01·(window length); the earliest on ties (run_squad.py's _check_is_max_context)."""
    best, best_score = -1, -1.0
    for w, (place, n) in enumerate(places):
        if first in place and last in place:
            k = place[first]
            score = min(k, n - 1 - k) + 0.01 * n
            if score > best_score:
                best, best_score = w, score
    return best


def _rows(logits: Any, features: Sequence[QAFeature], name: str) -> list[np.ndarray]:
    """One float64 row per feature, cut to the feature's length."""
    if hasattr(logits, "detach"):  # a torch tensor (any dtype and device)
        logits = logits.detach().float().cpu().numpy()
    rows = list(logits)
    if len(rows) != len(features):
        raise UserError(f"{name} has {len(rows)} rows but there are {len(features)} features")
    out = []
    for f, (row, feature) in enumerate(zip(rows, features, strict=True)):
        if hasattr(row, "detach"):
            row = row.detach().float().cpu().numpy()
        row = np.asarray(row, dtype=np.float64).reshape(-1)
        if len(row) < len(feature):
            raise UserError(f"{name}[{f}] has {len(row)} positions but feature {f} has {len(feature)} tokens")
        out.append(row[: len(feature)])
    return out


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()
