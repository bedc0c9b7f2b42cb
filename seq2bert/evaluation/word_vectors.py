"""Intrinsic evaluations of static word vectors: word analogies and word similarity.

* Word analogies (Mikolov et al. 2013, "Efficient Estimation of Word Representations in Vector Space", §4.1):
  the questions-words.txt file, ": section" lines followed by questions "a b c d" meaning a:b :: c:d. The
  answer to a:b :: c:? is the vocabulary word x ∉ {a, b, c} that maximises, over unit-normalised vectors,

    3CosAdd (Mikolov et al. 2013; Levy & Goldberg 2014, Eq. 3):  cos(x, b) − cos(x, a) + cos(x, c),
      i.e. cos(x, b − a + c), gensim's ``most_similar(positive=[b, c], negative=[a])``;
    3CosMul (Levy & Goldberg 2014, "Linguistic Regularities in Sparse and Explicit Word Representations",
      Eq. 4, cosines shifted to [0, 1] by (1 + cos) / 2, their footnote 7):
      cos(x, b) · cos(x, c) / (cos(x, a) + ε), gensim's ``most_similar_cosmul``.

  Sections named ``gram*`` are syntactic, the others (Mikolov's first five: capital-common-countries,
  capital-world, currency, city-in-state, family) semantic.
* Word similarity (Finkelstein et al. 2002, WordSim-353): lines "w1<TAB>w2<TAB>score", '#' starts a comment;
  Spearman's ρ and Pearson's r between the cosine of the two words' vectors and the human score.

Both follow gensim's ``KeyedVectors.evaluate_word_analogies`` / ``evaluate_word_pairs`` (gensim 4.4), so their
numbers are comparable with those published from it:

* only the first ``restrict_vocab`` words (the most frequent) are known; a question or pair with any other word
  is skipped and counted as out of vocabulary (gensim's default ``dummy4unknown=False``);
* with ``case_insensitive`` words and questions are upper-cased, and an upper-cased form stands for its first
  (most frequent) occurrence's vector. As in gensim, a candidate answer counts by its upper-cased form: any casing
  of a question word is excluded from the answers, and any casing of the expected word is right.

Departures from gensim, on purpose: a malformed line raises :class:`~seq2bert.errors.DataError` (gensim logs and
skips it); blank lines are skipped; a score that is not a finite number is malformed; ε of 3CosMul defaults to the
paper's 0.001 (gensim uses 10⁻⁶; pass ``epsilon=1e-6`` for its numbers); a zero vector has cosine 0 with every
word (gensim divides by its zero norm); and gensim keeps only its top 5 + 3 candidates before dropping other
casings of the question words, so it can differ from this module when more than five such casings outrank the
answer. Questions are answered on the CPU in batches, with one matrix product of the batch's distinct words against the
normalised vocabulary: questions-words.txt's 19,544 questions, both methods, against 30,000 × 100 vectors take
about 2 s on two CPU cores.

The test sets themselves ship with gensim's test data (:func:`default_test_sets`).
"""

from __future__ import annotations

import importlib.util
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from scipy import stats

from seq2bert.errors import ConfigError, DataError

logger = logging.getLogger(__name__)

METHODS = ("3cosadd", "3cosmul")
SCORES_PER_BLOCK = 2**23  # cosines of a block's distinct question words with the vocabulary, at most (32 MB)
SCORES_PER_BATCH = 2**22  # question × vocabulary scores in each of the 4 buffers of a batch (16 MB)


def default_test_sets() -> tuple[Path | None, Path | None]:
    """(questions-words.txt, wordsim353.tsv) from gensim's test data, each None when absent.

    gensim is found without being imported (its import takes seconds); it is an optional dependency.
    """
    try:
        spec = importlib.util.find_spec("gensim")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, None
    data = Path(next(iter(spec.submodule_search_locations))) / "test" / "test_data"
    questions, pairs = data / "questions-words.txt", data / "wordsim353.tsv"
    return (questions if questions.is_file() else None, pairs if pairs.is_file() else None)


# ---------------------------------------------------------------------------------------------------------
# The vocabulary as gensim's evaluations see it


@dataclass
class _Vocabulary:
    """The first ``restrict_vocab`` words, grouped by key (the upper-cased word when case-insensitive).

    ``units`` (R, d) are the unit-normalised vectors; ``row_group`` (R,) the key of each row; ``first_row`` (G,)
    the row that stands for each key; ``members`` (G, M) every row of each key, padded with its first row.
    """

    index: dict[str, int]
    units: torch.Tensor
    row_group: torch.Tensor
    first_row: torch.Tensor
    members: torch.Tensor

    def groups(self, keys: Sequence[str]) -> list[int] | None:
        """The group of each key, or None when one is unknown."""
        found = [self.index.get(key) for key in keys]
        return None if None in found else found


def _vocabulary(
    words: Sequence[str], vectors: torch.Tensor, restrict_vocab: int, case_insensitive: bool
) -> _Vocabulary:
    if vectors.ndim != 2 or len(words) != vectors.shape[0]:
        raise ValueError(
            f"expected one vector per word, got {len(words)} words and vectors of shape {tuple(vectors.shape)}"
        )
    if restrict_vocab < 1:
        raise ConfigError(f"restrict_vocab must be at least 1, got {restrict_vocab}")
    words = words[:restrict_vocab]
    x = vectors[: len(words)].detach().to(device="cpu", dtype=torch.float32)
    # x̂ = x / ‖x‖ (a zero vector stays zero: cosine 0 with everything)
    units = x / x.norm(dim=1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
    index: dict[str, int] = {}
    rows: list[list[int]] = []
    row_group = []
    for row, word in enumerate(words):
        key = word.upper() if case_insensitive else word
        group = index.setdefault(key, len(index))
        if group == len(rows):
            rows.append([])
        rows[group].append(row)
        row_group.append(group)
    width = max((len(r) for r in rows), default=1)
    members = torch.tensor([r + [r[0]] * (width - len(r)) for r in rows], dtype=torch.long).view(
        len(rows), width
    )
    first_row = members[:, 0].clone()
    return _Vocabulary(index, units, torch.tensor(row_group, dtype=torch.long), first_row, members)


def _lines(path: str | Path, what: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without its line break) of a UTF-8 file; DataError when it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (expected {what})")
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise DataError(f"{path}:{number}: not UTF-8 text (expected {what})") from None


# ---------------------------------------------------------------------------------------------------------
# Word analogies


def read_analogies(path: str | Path) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """The sections of an analogy file, in file order: [(name, [(a, b, c, d), …]), …].

    A line starting with ": " opens a section (the rest of the line is its name); every other non-blank line is
    a question of 4 words. A section's name may repeat (its questions are then counted together).
    """
    what = "an analogy test set: ': section' lines, then questions 'a b c d'"
    sections: list[tuple[str, list[tuple[str, str, str, str]]]] = []
    for number, line in _lines(path, what):
        if line.startswith(": "):
            name = line[2:].strip()
            if not name:
                raise DataError(f"{path}:{number}: expected a section name after ': '")
            sections.append((name, []))
            continue
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise DataError(
                f"{path}:{number}: expected 4 words 'a b c d' or a section header ': name', got {len(fields)} words"
            )
        if not sections:
            raise DataError(f"{path}:{number}: question before any section header ': name'")
        sections[-1][1].append((fields[0], fields[1], fields[2], fields[3]))
    if not any(questions for _, questions in sections):
        raise DataError(
            f"{path}: no analogy questions (expected ': section' lines, then questions 'a b c d')"
        )
    return sections


def analogy(
    words: Sequence[str],
    vectors: torch.Tensor,
    questions_path: str | Path,
    *,
    restrict_vocab: int = 300_000,
    case_insensitive: bool = True,
    methods: Sequence[str] = METHODS,
    epsilon: float = 1e-3,
) -> dict:
    """Accuracy on word analogies a:b :: c:? (Mikolov et al. 2013) by 3CosAdd and/or 3CosMul, as gensim counts it.

    Args:
        words: row i's word, most frequent first.
        vectors: (V, d) the words' vectors.
        questions_path: a file like questions-words.txt.
        restrict_vocab: only the first this many words are known, as questions and as answers.
        case_insensitive: compare upper-cased words (an upper-cased form stands for its most frequent casing).
        methods: any of "3cosadd", "3cosmul" (or one of them as a string).
        epsilon: ε of 3CosMul (Levy & Goldberg 2014 use 0.001, gensim 10⁻⁶).

    Returns:
        ``{"questions": all questions, "oov_questions": those skipped for an unknown word, "oov_rate": their
        share (0-1), "3cosadd": {...}, "3cosmul": {...}}`` with, for each method, ``{"semantic": %, "syntactic": %,
        "total": %, "sections": {name: {"correct": n, "seen": n}}}``: accuracies in % of the questions seen (not
        skipped), NaN where none was seen; ``total`` is over all sections, as gensim's.
    """
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ConfigError(
            f"unknown analogy method {unknown or methods!r}; expected some of {', '.join(METHODS)}"
        )
    sections = read_analogies(questions_path)
    vocab = _vocabulary(words, vectors, restrict_vocab, case_insensitive)

    total = 0
    seen: list[list[int]] = []  # (a, b, c, d) groups of the known questions
    seen_section: list[str] = []
    counts = {name: 0 for name, _ in sections}
    for name, questions in sections:
        for question in questions:
            total += 1
            groups = vocab.groups([w.upper() for w in question] if case_insensitive else question)
            if groups is not None:
                seen.append(groups)
                seen_section.append(name)
                counts[name] += 1
    oov = total - len(seen)

    right = _answer(vocab, torch.tensor(seen, dtype=torch.long).view(-1, 4), methods, epsilon)
    result: dict = {"questions": total, "oov_questions": oov, "oov_rate": oov / total}
    for method in methods:
        correct = dict.fromkeys(counts, 0)
        for name, ok in zip(seen_section, right[method].tolist(), strict=True):
            correct[name] += ok
        per_section = {name: {"correct": correct[name], "seen": counts[name]} for name in counts}
        result[method] = {
            "semantic": _accuracy(per_section, lambda name: not name.startswith("gram")),
            "syntactic": _accuracy(per_section, lambda name: name.startswith("gram")),
            "total": _accuracy(per_section, lambda name: True),
            "sections": per_section,
        }
        logger.info(
            "analogies (%s) on %s: %.2f%% (semantic %.2f%%, syntactic %.2f%%), %.1f%% of questions skipped",
            method,
            questions_path,
            result[method]["total"],
            result[method]["semantic"],
            result[method]["syntactic"],
            100 * result["oov_rate"],
        )
    return result


def _accuracy(sections: dict[str, dict[str, int]], keep) -> float:
    correct = sum(s["correct"] for name, s in sections.items() if keep(name))
    seen = sum(s["seen"] for name, s in sections.items() if keep(name))
    return 100.0 * correct / seen if seen else math.nan


@torch.no_grad()
def _answer(vocab: _Vocabulary, questions: torch.Tensor, methods: Sequence[str], epsilon: float) -> dict:
    """Whether each question (Q, 4) of (a, b, c, d) groups is answered d, per method: {method: (Q,) bool}.

    Blocks of questions share one product of their distinct words with the vocabulary; the scores are then
    computed in place, a few questions at a time, in buffers reused from batch to batch.
    """
    R = vocab.units.shape[0]
    right = {method: torch.zeros(len(questions), dtype=torch.bool) for method in methods}
    block = max(1, SCORES_PER_BLOCK // (3 * R))
    batch = max(1, SCORES_PER_BATCH // R)
    cos_a, cos_b, cos_c, scores = (torch.empty(batch, R) for _ in range(4))
    for block_start in range(0, len(questions), block):
        in_block = questions[block_start : block_start + block]
        distinct, position = torch.unique(in_block[:, :3], return_inverse=True)  # (W,), (block, 3)
        cos = vocab.units[vocab.first_row[distinct]] @ vocab.units.T  # (W, d) @ (d, R) → (W, R)
        for start in range(0, len(in_block), batch):
            q, at = in_block[start : start + batch], position[start : start + batch]  # (B, 4), (B, 3)
            B, done = len(q), block_start + start
            a, b, c, s = cos_a[:B], cos_b[:B], cos_c[:B], scores[:B]  # (B, R) each
            torch.index_select(cos, 0, at[:, 0], out=a)
            torch.index_select(cos, 0, at[:, 1], out=b)
            torch.index_select(cos, 0, at[:, 2], out=c)
            # a, b, c and every other casing of them are no answers
            excluded = vocab.members[q[:, :3]].flatten(1)  # (B, 3, M) → (B, 3M)
            if "3cosadd" in methods:
                # Levy & Goldberg Eq. 3: cos(x, b) − cos(x, a) + cos(x, c)
                torch.sub(b, a, out=s).add_(c).scatter_(1, excluded, -math.inf)
                right["3cosadd"][done : done + B] = _is_answer(vocab, s, q[:, 3])
            if "3cosmul" in methods:
                # Levy & Goldberg Eq. 4 with cos shifted to [0, 1]: cos(x, b) · cos(x, c) / (cos(x, a) + ε)
                #   = ½ · (1 + cos(x, b)) · (1 + cos(x, c)) / (1 + cos(x, a) + 2ε), whose argmax is the same
                b.add_(1).mul_(c.add_(1)).div_(a.add_(1 + 2 * epsilon)).scatter_(1, excluded, -math.inf)
                right["3cosmul"][done : done + B] = _is_answer(vocab, b, q[:, 3])
    return right


def _is_answer(vocab: _Vocabulary, scores: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Whether the best-scoring word of each row of scores (B, R) is the expected group (B,)."""
    best = scores.max(dim=1)  # tensor.max is several times faster than argmax on the CPU
    return (vocab.row_group[best.indices] == expected) & (best.values > -math.inf)


# ---------------------------------------------------------------------------------------------------------
# Word similarity


def read_word_pairs(path: str | Path) -> list[tuple[str, str, float]]:
    """The (w1, w2, score) lines of a file like wordsim353.tsv: tab-separated, '#' starts a comment line."""
    what = "word pairs 'w1<TAB>w2<TAB>score', '#' for comments"
    pairs = []
    for number, line in _lines(path, what):
        if line.startswith("#") or not line.strip():
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) != 3 or not fields[0] or not fields[1]:
            raise DataError(
                f"{path}:{number}: expected 3 tab-separated fields 'w1<TAB>w2<TAB>score', got {line!r}"
            )
        try:
            score = float(fields[2])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise DataError(f"{path}:{number}: expected a number as the score, got {fields[2]!r}")
        pairs.append((fields[0], fields[1], score))
    if not pairs:
        raise DataError(f"{path}: no word pairs (expected lines 'w1<TAB>w2<TAB>score')")
    return pairs


@torch.no_grad()
def similarity(
    words: Sequence[str],
    vectors: torch.Tensor,
    pairs_path: str | Path,
    *,
    restrict_vocab: int = 300_000,
    case_insensitive: bool = True,
) -> dict:
    """Correlation of the words' cosine similarity with human similarity scores (WordSim-353), as gensim's.

    Args:
        words: row i's word, most frequent first.
        vectors: (V, d) the words' vectors.
        pairs_path: a file like wordsim353.tsv.
        restrict_vocab: only the first this many words are known.
        case_insensitive: compare upper-cased words (an upper-cased form stands for its most frequent casing).

    Returns:
        ``{"pairs": all pairs, "oov_pairs": those skipped for an unknown word, "oov_rate": their share (0-1),
        "spearman": ρ·100, "pearson": r·100}``, the correlations over the known pairs (NaN with fewer than two).
    """
    pairs = read_word_pairs(pairs_path)
    vocab = _vocabulary(words, vectors, restrict_vocab, case_insensitive)
    known, gold = [], []
    for w1, w2, score in pairs:
        groups = vocab.groups([w1.upper(), w2.upper()] if case_insensitive else [w1, w2])
        if groups is not None:
            known.append(groups)
            gold.append(score)
    oov = len(pairs) - len(known)
    spearman = pearson = math.nan
    if len(known) >= 2:
        rows = vocab.first_row[torch.tensor(known, dtype=torch.long)]  # (P, 2)
        # cos(w1, w2) = ŵ1 · ŵ2
        cosine = (vocab.units[rows[:, 0]] * vocab.units[rows[:, 1]]).sum(dim=1)  # (P,)
        model = cosine.double().tolist()
        spearman = 100.0 * float(stats.spearmanr(gold, model).statistic)
        pearson = 100.0 * float(stats.pearsonr(gold, model).statistic)
    logger.info(
        "word similarity on %s: Spearman %.2f, Pearson %.2f, %.1f%% of pairs skipped",
        pairs_path,
        spearman,
        pearson,
        100 * oov / len(pairs),
    )
    return {
        "pairs": len(pairs),
        "oov_pairs": oov,
        "oov_rate": oov / len(pairs),
        "spearman": spearman,
        "pearson": pearson,
    }
