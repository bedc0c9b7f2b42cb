"""Built-in sequence-to-sequence tasks that need no download.

Every example is a pair of strings of whitespace-separated symbols, so a word-level tokenizer works on them.
Within one call the source sides are distinct (deduplicated), which is what keeps the splits of
:func:`make_splits` disjoint. Everything is deterministic from ``seed``.

Symbol tasks (``num_symbols`` symbols ``s0 … s{V-1}``, zero-padded — ``s00 … s19`` — so that their string
order is their index order; lengths uniform in ``[min_len, max_len]`` as far as distinct sequences allow):

* ``copy``: target = source.
* ``reverse``: target = source reversed.
* ``sort``: target = source sorted by symbol index (equivalently, as strings).

``lang``: a small invented language pair, so that translating needs a lexicon, agreement and reordering
rather than copying. ``num_symbols`` is ignored: the lexicon is fixed (20 nouns, 10 adjectives, 7 intransitive
and 10 transitive verbs), so data made with different seeds or lengths belong to the same language.

Source, English-like, SVO::

    S       → Clause ("and" Clause)*
    Clause  → NP VPmain
    NP      → Det Adj{0,2} N [NPP] [Rel]        an NP inside an NPP takes no Rel
    NPP     → Pn NP                             Pn ∈ {with, without, from}
    Rel     → "that" VP                         the verb agrees with the head noun
    VPmain  → VP [VPP]                          VPP → Pv NP,  Pv ∈ {in, on, under, behind, near}
    VP      → Vi | Vt NP
    Det     → "the" | "a" (singular) | "some" (plural);  plural N = N + "s";  singular V = V + "s"

Target, invented, SOV, adjectives after the noun, postpositions, number suffixes::

    S'      → Clause' ("i" Clause')*
    Clause' → NP' VPmain'
    NP'     → [Rel'] [NPP'] Det' N'(+n) Adj'(+n)*   plural noun and its adjectives take -n
    NPP'    → NP' Post                          Rel' → VP' "ke"
    VPmain' → [VPP'] VP'                        VPP' → NP' Post
    VP'     → [NP'] V'+(it|ut)                  object before the verb; -it singular, -ut plural subject
    Det'    → "lo" (definite) | "na" (indefinite)

For example ``the big dogs see a cat in the garden`` → ``lo voskon velkin lo sadi vnu na miru vidut``.

Each source sentence has exactly one parse — the two preposition sets are disjoint, an NP has at most one NPP
and one Rel, only main verbs take a VPP and NPs inside an NPP take no Rel — so the translation is a function
of the source. Recursion (relative clauses with objects that carry relative clauses, NPPs inside NPPs, clause
coordination) makes every length from 3 words up reachable: a sentence of exactly ``L`` words is grown from
``Det N Vi`` by random expansions (adjective +1, object +2, relative clause +2, NPP +3, VPP +3, clause +4).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from seq2bert.errors import UserError

Pair = tuple[str, str]

# ---------------------------------------------------------------------------------------------------------
# Symbol tasks: copy, reverse, sort


def _symbol_names(num_symbols: int) -> list[str]:
    width = len(str(num_symbols - 1))
    return [f"s{i:0{width}d}" for i in range(num_symbols)]


def _distinct_sequences(
    rng: random.Random, n: int, min_len: int, max_len: int, num_symbols: int
) -> list[list[int]]:
    """``n`` distinct sequences of symbol indices, lengths as uniform as the number of sequences allows."""
    lengths = range(min_len, max_len + 1)
    capacity = {length: num_symbols**length for length in lengths}
    if n > sum(capacity.values()):
        raise UserError(
            f"cannot make {n} distinct sequences: only {sum(capacity.values())} exist with num_symbols="
            f"{num_symbols} and lengths {min_len}..{max_len}; lower n or raise num_symbols or max_len"
        )
    quota = dict.fromkeys(lengths, 0)
    for _ in range(n):
        quota[rng.randint(min_len, max_len)] += 1
    # Lengths with fewer sequences than their quota pass the excess on, round-robin from the shortest.
    excess = sum(max(0, quota[length] - capacity[length]) for length in lengths)
    quota = {length: min(quota[length], capacity[length]) for length in lengths}
    while excess:
        for length in lengths:
            if excess and quota[length] < capacity[length]:
                quota[length] += 1
                excess -= 1

    sequences: list[list[int]] = []
    for length, count in quota.items():
        if capacity[length] <= 50 * count:
            # Dense: sample codes without replacement and write each in base num_symbols.
            for code in rng.sample(range(capacity[length]), count):
                digits = []
                for _ in range(length):
                    code, digit = divmod(code, num_symbols)
                    digits.append(digit)
                sequences.append(digits)
        else:
            # Sparse: draw and reject the rare repeats.
            seen: set[tuple[int, ...]] = set()
            while len(seen) < count:
                seq = tuple(rng.choices(range(num_symbols), k=length))
                if seq not in seen:
                    seen.add(seq)
                    sequences.append(list(seq))
    rng.shuffle(sequences)
    return sequences


def _symbol_task(transform: Callable[[list[int]], list[int]]) -> Callable[..., list[Pair]]:
    def generate(rng: random.Random, n: int, *, min_len: int, max_len: int, num_symbols: int) -> list[Pair]:
        names = _symbol_names(num_symbols)
        return [
            (" ".join(names[i] for i in seq), " ".join(names[i] for i in transform(seq)))
            for seq in _distinct_sequences(rng, n, min_len, max_len, num_symbols)
        ]

    return generate


# ---------------------------------------------------------------------------------------------------------
# The invented language pair: lexicon (source word → target stem)

NOUNS = {
    "dog": "vosko",
    "cat": "miru",
    "bird": "pelka",
    "horse": "tarvo",
    "girl": "nesha",
    "boy": "ruko",
    "teacher": "zaleni",
    "farmer": "govaku",
    "doctor": "lekaro",
    "king": "kiroda",
    "ball": "tupa",
    "car": "vazi",
    "house": "doma",
    "tree": "derva",
    "river": "rekka",
    "garden": "sadi",
    "book": "bukte",
    "table": "stolu",
    "chair": "kresi",
    "window": "okena",
}
ADJECTIVES = {
    "big": "velki",
    "small": "mala",
    "red": "kraso",
    "green": "zelo",
    "tall": "visko",
    "happy": "radi",
    "sad": "tuzho",
    "young": "mlodi",
    "quick": "brzo",
    "brown": "smedi",
}
INTRANSITIVE_VERBS = {
    "sleep": "spav",
    "run": "beg",
    "sing": "pev",
    "wait": "chek",
    "smile": "ulib",
    "jump": "skak",
    "fall": "pad",
}
TRANSITIVE_VERBS = {
    "see": "vid",
    "like": "lub",
    "chase": "gon",
    "find": "nahod",
    "help": "pomag",
    "know": "znav",
    "follow": "sled",
    "call": "zov",
    "visit": "poset",
    "hold": "derzh",
}
NOUN_PREPOSITIONS = {"with": "kon", "without": "bez", "from": "dal"}
VERB_PREPOSITIONS = {"in": "vnu", "on": "nad", "under": "pod", "behind": "zad", "near": "blis"}
DETERMINERS = {True: "lo", False: "na"}  # definite → "lo", indefinite ("a", "some") → "na"
RELATIVE, CONJUNCTION = ("that", "ke"), ("and", "i")
PLURAL_SUFFIX = "n"  # nouns and adjectives
VERB_SUFFIX = {False: "it", True: "ut"}  # agreement with a singular / plural subject

_MIN_LANG_LEN = 3  # Det N Vi
_MAX_ADJECTIVES = 2
_MAX_REPEATS = 10_000  # consecutive duplicate draws before giving up on finding new sentences


@dataclass
class _NP:
    noun: str
    plural: bool
    definite: bool
    adjectives: list[str] = field(default_factory=list)
    pp: _PP | None = None
    rel: _VP | None = None
    in_pp: bool = False  # inside an NPP: takes no relative clause (keeps parses unique)


@dataclass
class _PP:
    preposition: str
    np: _NP


@dataclass
class _VP:
    verb: str
    obj: _NP | None = None
    pp: _PP | None = None
    main: bool = False  # only main-clause verbs take a VPP


@dataclass
class _Clause:
    subject: _NP
    vp: _VP


def _source(clauses: list[_Clause]) -> list[str]:
    words: list[str] = []
    for i, clause in enumerate(clauses):
        if i:
            words.append(CONJUNCTION[0])
        words += _source_np(clause.subject) + _source_vp(clause.vp, clause.subject.plural)
    return words


def _source_np(np_: _NP) -> list[str]:
    determiner = "the" if np_.definite else ("some" if np_.plural else "a")
    words = [determiner, *np_.adjectives, np_.noun + ("s" if np_.plural else "")]
    if np_.pp:
        words += [np_.pp.preposition, *_source_np(np_.pp.np)]
    if np_.rel:
        words += [RELATIVE[0], *_source_vp(np_.rel, np_.plural)]
    return words


def _source_vp(vp: _VP, plural_subject: bool) -> list[str]:
    words = [vp.verb if plural_subject else vp.verb + "s"]
    if vp.obj:
        words += _source_np(vp.obj)
    if vp.pp:
        words += [vp.pp.preposition, *_source_np(vp.pp.np)]
    return words


def _target(clauses: list[_Clause]) -> list[str]:
    words: list[str] = []
    for i, clause in enumerate(clauses):
        if i:
            words.append(CONJUNCTION[1])
        words += _target_np(clause.subject) + _target_vp(clause.vp, clause.subject.plural)
    return words


def _target_np(np_: _NP) -> list[str]:
    words: list[str] = []
    if np_.rel:
        words += [*_target_vp(np_.rel, np_.plural), RELATIVE[1]]
    if np_.pp:
        words += [*_target_np(np_.pp.np), NOUN_PREPOSITIONS[np_.pp.preposition]]
    suffix = PLURAL_SUFFIX if np_.plural else ""
    words += [DETERMINERS[np_.definite], NOUNS[np_.noun] + suffix]
    words += [ADJECTIVES[adjective] + suffix for adjective in np_.adjectives]
    return words


def _target_vp(vp: _VP, plural_subject: bool) -> list[str]:
    words: list[str] = []
    if vp.pp:
        words += [*_target_np(vp.pp.np), VERB_PREPOSITIONS[vp.pp.preposition]]
    if vp.obj:
        words += _target_np(vp.obj)
    verbs = TRANSITIVE_VERBS if vp.obj else INTRANSITIVE_VERBS
    words.append(verbs[vp.verb] + VERB_SUFFIX[plural_subject])
    return words


_NOUN_LIST, _ADJECTIVE_LIST = sorted(NOUNS), sorted(ADJECTIVES)
_VI_LIST, _VT_LIST = sorted(INTRANSITIVE_VERBS), sorted(TRANSITIVE_VERBS)


def _new_np(rng: random.Random, *, in_pp: bool = False) -> _NP:
    return _NP(rng.choice(_NOUN_LIST), plural=rng.random() < 0.3, definite=rng.random() < 0.5, in_pp=in_pp)


def _new_clause(rng: random.Random) -> _Clause:
    return _Clause(_new_np(rng), _VP(rng.choice(_VI_LIST), main=True))


def _walk(clauses: list[_Clause]) -> tuple[list[_NP], list[_VP]]:
    """All noun phrases and verb phrases of a sentence."""
    nps: list[_NP] = []
    vps: list[_VP] = []

    def visit_np(np_: _NP) -> None:
        nps.append(np_)
        if np_.pp:
            visit_np(np_.pp.np)
        if np_.rel:
            visit_vp(np_.rel)

    def visit_vp(vp: _VP) -> None:
        vps.append(vp)
        if vp.obj:
            visit_np(vp.obj)
        if vp.pp:
            visit_np(vp.pp.np)

    for clause in clauses:
        visit_np(clause.subject)
        visit_vp(clause.vp)
    return nps, vps


def _grow(rng: random.Random, length: int) -> list[_Clause] | None:
    """A random sentence of exactly ``length`` source words, or None if the expansions got stuck (rare)."""
    clauses = [_new_clause(rng)]
    size = _MIN_LANG_LEN
    while size < length:
        room = length - size
        nps, vps = _walk(clauses)
        options: dict[str, tuple[int, list]] = {
            "adjective": (1, [np_ for np_ in nps if len(np_.adjectives) < _MAX_ADJECTIVES]),
            "object": (2, [vp for vp in vps if vp.obj is None]),
            "relative": (2, [np_ for np_ in nps if np_.rel is None and not np_.in_pp]),
            "noun_pp": (3, [np_ for np_ in nps if np_.pp is None]),
            "verb_pp": (3, [vp for vp in vps if vp.main and vp.pp is None]),
            "clause": (4, [clauses]),
        }
        kinds = [kind for kind, (cost, nodes) in options.items() if cost <= room and nodes]
        if not kinds:
            return None
        kind = rng.choice(kinds)
        cost, nodes = options[kind]
        node = rng.choice(nodes)
        if kind == "adjective":
            node.adjectives.append(rng.choice([a for a in _ADJECTIVE_LIST if a not in node.adjectives]))
        elif kind == "object":
            node.verb, node.obj = rng.choice(_VT_LIST), _new_np(rng)
        elif kind == "relative":
            node.rel = _VP(rng.choice(_VI_LIST))
        elif kind == "noun_pp":
            node.pp = _PP(rng.choice(sorted(NOUN_PREPOSITIONS)), _new_np(rng, in_pp=True))
        elif kind == "verb_pp":
            node.pp = _PP(rng.choice(sorted(VERB_PREPOSITIONS)), _new_np(rng))
        else:
            node.append(_new_clause(rng))
        size += cost
    return clauses


def _lang_task(rng: random.Random, n: int, *, min_len: int, max_len: int, num_symbols: int) -> list[Pair]:
    """``n`` distinct sentences of the invented language pair (``num_symbols`` is ignored)."""
    if max_len < _MIN_LANG_LEN:
        raise UserError(
            f"'lang' sentences have at least {_MIN_LANG_LEN} words (Det N V); got max_len={max_len}"
        )
    shortest = max(min_len, _MIN_LANG_LEN)
    pairs: list[Pair] = []
    seen: set[str] = set()
    repeats = 0
    while len(pairs) < n:
        clauses = _grow(rng, rng.randint(shortest, max_len))
        source = " ".join(_source(clauses)) if clauses else None
        if source is None or source in seen:
            repeats += 1
            if repeats > _MAX_REPEATS:
                raise UserError(
                    f"cannot make {n} distinct 'lang' sentences of {shortest}..{max_len} words: found only "
                    f"{len(pairs)} before {_MAX_REPEATS} repeated draws in a row; lower n or raise max_len"
                )
            continue
        repeats = 0
        seen.add(source)
        pairs.append((source, " ".join(_target(clauses))))
    return pairs


# ---------------------------------------------------------------------------------------------------------
# Public API

TASKS: dict[str, Callable[..., list[Pair]]] = {
    "copy": _symbol_task(lambda seq: seq),
    "reverse": _symbol_task(lambda seq: seq[::-1]),
    "sort": _symbol_task(sorted),
    "lang": _lang_task,
}
"""Task name → generator ``(rng, n, *, min_len, max_len, num_symbols) -> n pairs with distinct sources``."""


def make_task(
    name: str, n: int, *, min_len: int = 3, max_len: int = 12, num_symbols: int = 20, seed: int = 0
) -> list[Pair]:
    """Make ``n`` examples of a synthetic task, with distinct source sides.

    Args:
        name: one of :data:`TASKS`: ``copy``, ``reverse``, ``sort`` or ``lang``.
        n: number of examples.
        min_len, max_len: source length range in symbols (words for ``lang``, whose sentences have at
            least 3 words), inclusive.
        num_symbols: alphabet size of the symbol tasks (ignored by ``lang``).
        seed: seed of the generator; the same arguments give the same examples.

    Returns:
        ``(source, target)`` pairs of whitespace-separated symbols.

    Raises:
        UserError: an unknown task, an invalid argument, or more examples than distinct sources exist.
    """
    _check_arguments(name, min_len=min_len, max_len=max_len, num_symbols=num_symbols, seed=seed, n=n)
    return TASKS[name](random.Random(seed), n, min_len=min_len, max_len=max_len, num_symbols=num_symbols)


def make_splits(
    name: str,
    *,
    n_train: int,
    n_valid: int,
    n_test: int,
    min_len: int = 3,
    max_len: int = 12,
    num_symbols: int = 20,
    seed: int = 0,
) -> dict[str, list[Pair]]:
    """Make ``"train"``, ``"valid"`` and ``"test"`` splits whose source sides are pairwise disjoint.

    The ``n_train + n_valid + n_test`` examples are drawn at once with distinct sources and cut in that
    order, so the splits never share a source and are deterministic from ``seed``.
    """
    sizes = {"n_train": n_train, "n_valid": n_valid, "n_test": n_test}
    for key, value in sizes.items():
        _check_int(key, value, minimum=0)
    pairs = make_task(
        name, n_train + n_valid + n_test, min_len=min_len, max_len=max_len, num_symbols=num_symbols, seed=seed
    )
    return {
        "train": pairs[:n_train],
        "valid": pairs[n_train : n_train + n_valid],
        "test": pairs[n_train + n_valid :],
    }


def _check_arguments(name: str, *, min_len: int, max_len: int, num_symbols: int, seed: int, n: int) -> None:
    if name not in TASKS:
        raise UserError(f"unknown synthetic task {name!r}; valid tasks: {', '.join(TASKS)}")
    _check_int("n", n, minimum=0)
    _check_int("min_len", min_len, minimum=1)
    _check_int("max_len", max_len, minimum=1)
    _check_int("num_symbols", num_symbols, minimum=1)
    _check_int("seed", seed, minimum=0)
    if min_len > max_len:
        raise UserError(f"min_len={min_len} is greater than max_len={max_len}")


def _check_int(key: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UserError(f"{key} must be an integer >= {minimum}, got {value!r}")
