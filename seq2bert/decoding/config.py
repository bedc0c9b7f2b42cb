"""How a batch is decoded: the settings of ``seq2bert.decoding.generation.generate``, in one dataclass.

This is the one place a decoding setting is declared. A field made with ``option(default, help, bounds…)``
is a setting users choose: its bounds are checked here on construction, and ``options()`` hands the same
declaration to every front end — the keywords of ``model.generate`` (seq2bert/models/decoder_only.py,
encoder_decoder.py) and of the pipelines (``settings``), the command-line flags (``add_generation_args`` in
seq2bert/commands/common.py) and the server's request bodies (``decoding_fields`` in seq2bert/serve/schemas.py).
A setting added here is thus taken everywhere. The other fields are given by the model (its special ids, its
banned words) or fixed by a recipe (``length_penalty_form``, ``max_positions``).

Field names are transformers' (``GenerationConfig``) where transformers has the setting, so that a Marian
checkpoint decoded with the same settings gives the same tokens (tests/models/test_marian.py). Two settings
are ours:

- ``max_len_a`` / ``max_len_b``: a maximum length per input, ⌊max_len_a · |x| + max_len_b⌋ new tokens with
  |x| the input's real length (fairseq's ``max_len_a/b``, Ott et al. 2019), used instead of one
  ``max_new_tokens`` for the whole batch. A translation's length follows its source's, so a short sentence
  does not get the budget of a long one. Exactly one of the two kinds of limit is set.
- ``length_penalty_form``: how the length penalty lp(Y) divides a hypothesis' log-probability in beam
  search (seq2bert/decoding/beam.py):

      "power":  lp(Y) = |Y|^α                  transformers' (and so Marian's), the default here
      "wu":     lp(Y) = ((5 + |Y|) / 6)^α      Wu et al. (2016), Eq. 14 (GNMT)

  The default is "power" because every other field means what it means in transformers, and a config that
  reads like transformers' should rank hypotheses like transformers. The translation recipes ask for "wu"
  (seq2bert/recipes/translation.py, ``Decoding``): it is what their published results were decoded with.

``forced_eos_token_id`` (None: nothing forced) is the token every hypothesis must take at its maximum length,
as transformers' ``ForcedEOSTokenLogitsProcessor`` does; Marian configs set it. When it is ``eos_token_id``
the hypothesis ends there with [EOS]; another token is appended and the hypothesis is cut at the maximum
length, as in transformers.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

from seq2bert.errors import ConfigError

LENGTH_PENALTY_FORMS = ("power", "wu")


@dataclass(frozen=True)
class Option:
    """How a setting of ``GenerationConfig`` is offered to users: what it means (``help``), its bounds (checked
    on construction; the serve schemas and the CLI take them from here), and other CLI spellings."""

    help: str
    ge: float | None = None  # value >= ge
    gt: float | None = None  # value > gt
    le: float | None = None  # value <= le
    aliases: tuple[str, ...] = ()  # other command-line spellings, e.g. --beam for --num-beams
    metavar: str | None = None
    note: str = ""  # what an out-of-bounds message adds, e.g. "(1: no nucleus filter)"


def option(default: Any, help: str, **how: Any) -> Any:
    """A field of GenerationConfig that users set: model.generate, the pipelines, the CLI flags and the serve
    request bodies all read it from here (``options()``)."""
    return field(default=default, metadata={"option": Option(help, **how)})


# the text-generation front ends' defaults (the pipeline, `seq2bert generate`, the server): 50 new tokens and
# transformers' top-k of 50 (read when sampling and in contrastive search)
TEXT_DEFAULTS = {"max_new_tokens": 50, "top_k": 50}


@dataclass(frozen=True)
class Setting:
    """One user setting as the front ends see it: its name, type (int, float, bool or str), whether None is
    allowed, its default and how it is offered."""

    name: str
    type: type
    optional: bool
    default: Any
    option: Option
    annotation: Any  # the field's type hint, e.g. int | None (the serve schemas' field type)


@dataclass(frozen=True, kw_only=True)
class GenerationConfig:
    """Settings of one search; validated on construction (ConfigError names the field).

    The fields made with ``option`` are the settings users choose; the others a model gives
    (``generation_config`` of seq2bert/models/decoder_only.py and encoder_decoder.py) or a recipe fixes.

    ``decoder_start_token_id``: the first token an encoder-decoder's decoder is fed ([BOS]; Marian: [PAD]).
    None: a decoder-only model, whose left-padded prompt is the input and whose first fed token is the
    prompt's last (seq2bert/decoding/protocol.py). ``eos_token_id`` None: a model without an end token (GPT-1)
    — every hypothesis runs to its maximum length.
    """

    eos_token_id: int | None
    pad_token_id: int
    decoder_start_token_id: int | None = None
    strategy: str | None = option(
        None,
        "a decoding strategy by name (seq2bert/decoding/strategies.py; default: chosen from the settings)",
        metavar="NAME",
    )
    num_beams: int = option(
        1,
        "beam size (1: greedy decoding or sampling)",
        ge=1,
        aliases=("--beam",),
        metavar="K",
        note="(1 = greedy)",
    )
    max_new_tokens: int | None = option(None, "at most this many new tokens", ge=1, metavar="N")
    max_len_a: float | None = option(
        None, "at most floor(a * |source| + b) new tokens per input, with --max-len-b", ge=0, metavar="A"
    )
    max_len_b: int | None = option(None, "the b of floor(a * |source| + b)", ge=0, metavar="B")
    max_positions: int | None = None  # and never more new tokens than a decoder's position table holds
    min_new_tokens: int = option(0, "no end token before this many new tokens", ge=0, metavar="N")
    length_penalty: float = option(
        1.0,
        "beam search ranks log P(Y) / lp(|Y|): lp = |Y|^alpha (Wu et al. 2016's ((5 + |Y|) / 6)^alpha for "
        "translation); 0: none",
        metavar="ALPHA",
    )
    length_penalty_form: str = "power"
    early_stopping: bool = option(False, "beam search: an input is done at its first num_beams hypotheses")
    num_return_sequences: int = option(
        1, "the n-best list kept per input, at most num_beams", ge=1, metavar="N"
    )
    no_repeat_ngram_size: int = option(0, "no n-gram twice (Paulus et al. 2018; 0: off)", ge=0, metavar="N")
    # The logit of every token already in the row, prompt included, is divided by θ when positive and
    # multiplied by θ when negative (Keskar et al. 2019, CTRL; rules.py)
    repetition_penalty: float = option(
        1.0,
        "CTRL's penalty on tokens already in the text (1: none; 1.2 is common)",
        gt=0,
        metavar="R",
        note="(1: none)",
    )
    forced_eos_token_id: int | None = None
    # token sequences never generated (transformers' bad_words_ids; Marian checkpoints ban [PAD]: [[pad]])
    bad_words_ids: tuple[tuple[int, ...], ...] = ()
    # sampling instead of the most probable token (one beam; sampling.py): temperature, top-k, nucleus
    do_sample: bool = option(False, "sample the next token (default: the most probable)")
    temperature: float = option(1.0, "with sampling: p^(1/T)", gt=0, metavar="T")
    top_k: int = option(
        0,
        "with sampling or contrastive search: the k most probable tokens (0: all)",
        ge=0,
        metavar="K",
        note="(0: no top-k filter)",
    )
    top_p: float = option(
        1.0,
        "with sampling: the nucleus (1: all)",
        gt=0,
        le=1,
        metavar="P",
        note="(1: no nucleus filter)",
    )
    seed: int | None = option(None, "repeatable samples", metavar="N")
    # diverse beam search (Vijayakumar et al. 2016; beam.py): the beams in G groups, each group's log-probabilities
    # lowered by λ for every time an earlier group took the token at this step (Hamming diversity)
    num_beam_groups: int = option(
        1, "diverse beam search: the beams in G groups (1: plain beam search)", ge=1, metavar="G"
    )
    diversity_penalty: float = option(
        0.0, "diverse beam search: lambda, per earlier group's use of a token at this step", ge=0, metavar="L"
    )
    # contrastive search (Su et al. 2022; contrastive.py): the degeneration penalty's weight α
    penalty_alpha: float = option(
        0.0,
        "contrastive search: (1 - alpha) p(v) - alpha max cos(h_v, h_j) among the top-k tokens (0: off)",
        ge=0,
        le=1,
        metavar="ALPHA",
    )

    # speculative decoding (Leviathan et al. 2023; speculative.py), with a draft model: γ
    num_draft_tokens: int = option(
        4,
        "speculative decoding (with a draft model): the tokens it proposes per pass of the model",
        ge=1,
        metavar="K",
    )

    def __post_init__(self) -> None:
        words = tuple(tuple(w) for w in self.bad_words_ids)
        if any(not w or any(not isinstance(i, int) or i < 0 for i in w) for w in words):
            raise ConfigError(
                f"bad_words_ids: expected lists of token ids (ints >= 0), got {self.bad_words_ids!r}"
            )
        object.__setattr__(self, "bad_words_ids", words)
        for name in ("eos_token_id", "pad_token_id", "decoder_start_token_id", "forced_eos_token_id"):
            value = getattr(self, name)
            required = name == "pad_token_id"
            if (value is not None or required) and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"{name}: expected a token id (an int >= 0), got {value!r}")
        for s in options():
            check_setting(s, getattr(self, s.name))
        if self.do_sample and self.num_beams != 1:
            raise ConfigError(
                f"do_sample: sampling draws one continuation per input; set num_beams=1, not {self.num_beams}"
            )
        if self.penalty_alpha > 0 and (self.num_beams != 1 or self.do_sample or self.top_k < 1):
            raise ConfigError(
                "penalty_alpha: contrastive search takes one continuation per input among the top_k >= 1 "
                f"tokens (num_beams=1, no do_sample); got num_beams={self.num_beams}, "
                f"do_sample={self.do_sample}, top_k={self.top_k}"
            )
        if self.num_beams % self.num_beam_groups:
            raise ConfigError(
                f"num_beam_groups: must divide num_beams={self.num_beams} (each group has as many beams), "
                f"got {self.num_beam_groups}"
            )
        if self.num_return_sequences > self.num_beams:
            raise ConfigError(
                f"num_return_sequences: must be in [1, num_beams={self.num_beams}], "
                f"got {self.num_return_sequences}"
            )
        if self.length_penalty_form not in LENGTH_PENALTY_FORMS:
            raise ConfigError(
                f"length_penalty_form: expected one of {', '.join(LENGTH_PENALTY_FORMS)}, "
                f"got {self.length_penalty_form!r}"
            )
        per_input = self.max_len_a is not None or self.max_len_b is not None
        if (self.max_new_tokens is None) == (not per_input):
            raise ConfigError(
                "max_new_tokens, max_len_a/max_len_b: set exactly one limit — max_new_tokens for the whole "
                f"batch, or max_len_b (and max_len_a) per input; got max_new_tokens={self.max_new_tokens}, "
                f"max_len_a={self.max_len_a}, max_len_b={self.max_len_b}"
            )
        if self.max_positions is not None and self.max_positions < 1:
            raise ConfigError(f"max_positions: must be at least 1, got {self.max_positions}")
        if per_input and self.max_len_b is None:
            raise ConfigError("max_len_a: needs max_len_b (the limit is ⌊max_len_a · |x| + max_len_b⌋)")

    def max_lengths(self, source_lengths: list[int]) -> list[int]:
        """The maximum number of new tokens of each input, [EOS] included, from its real length |x|."""
        if self.max_new_tokens is not None:
            lengths = [self.max_new_tokens] * len(source_lengths)
        else:
            a, b = self.max_len_a or 0.0, self.max_len_b
            lengths = [math.floor(a * n + b) for n in source_lengths]
        return lengths if self.max_positions is None else [min(n, self.max_positions) for n in lengths]


@cache
def options() -> tuple[Setting, ...]:
    """The settings users choose, in declaration order: every field of GenerationConfig made with ``option``."""
    hints = typing.get_type_hints(GenerationConfig)
    out = []
    for f in fields(GenerationConfig):
        if "option" not in f.metadata:
            continue
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        base = args[0] if args else hint
        out.append(
            Setting(f.name, base, type(None) in typing.get_args(hint), f.default, f.metadata["option"], hint)
        )
    return tuple(out)


def check_setting(s: Setting, value: Any) -> None:
    """ConfigError naming the setting when ``value`` has the wrong type or is out of its bounds."""
    if value is None and s.optional:
        return
    number = s.type in (int, float)
    wrong = isinstance(value, bool) if number else False
    if s.type is int:
        wrong = wrong or not isinstance(value, int)
    elif s.type is float:
        wrong = wrong or not isinstance(value, (int, float))
    elif not isinstance(value, s.type):
        wrong = True
    if wrong:
        raise ConfigError(
            f"{s.name}: expected {'an' if s.type is int else 'a'} {s.type.__name__}, got {value!r}"
        )
    o = s.option
    if not number:
        return
    # written so that nan fails every bound
    if (
        (o.ge is not None and not value >= o.ge)
        or (o.gt is not None and not value > o.gt)
        or (o.le is not None and not value <= o.le)
    ):
        integer = "an integer " if s.type is int else ""
        note = f" {o.note}" if o.note else ""
        raise ConfigError(f"{s.name}: must be {integer}{bounds(o)}{note}, got {value}")


def bounds(o: Option) -> str:
    """The bounds of a setting in words: ">= 1", "in (0, 1]"."""
    low = f"[{o.ge:g}" if o.ge is not None else f"({o.gt:g}" if o.gt is not None else None
    if low is not None and o.le is not None:
        return f"in {low}, {o.le:g}]"
    if o.le is not None:
        return f"<= {o.le:g}"
    return f">= {o.ge:g}" if o.ge is not None else f"> {o.gt:g}"


def settings(
    given: dict[str, Any], defaults: dict[str, Any] | None = None, *, where: str = "generate"
) -> dict:
    """The decoding settings ``given`` (keyword arguments of a front end) over the front end's ``defaults``;
    a name that is no setting is a ConfigError naming it and the settings there are."""
    names = {s.name for s in options()}
    unknown = sorted(set(given) - names)
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting(s) {', '.join(unknown)} (the settings: {', '.join(sorted(names))})"
        )
    return {**(defaults or {}), **given}
