"""How a batch is decoded: the settings of ``seq2bert.decoding.generation.generate``, in one dataclass.

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
from dataclasses import dataclass

from seq2bert.errors import ConfigError

LENGTH_PENALTY_FORMS = ("power", "wu")


@dataclass(frozen=True, kw_only=True)
class GenerationConfig:
    """Settings of one search; validated on construction (ConfigError names the field).

    ``decoder_start_token_id``: the first token an encoder-decoder's decoder is fed ([BOS]; Marian: [PAD]).
    None: a decoder-only model, whose left-padded prompt is the input and whose first fed token is the
    prompt's last (seq2bert/decoding/protocol.py). ``eos_token_id`` None: a model without an end token (GPT-1)
    — every hypothesis runs to its maximum length.
    """

    eos_token_id: int | None
    pad_token_id: int
    decoder_start_token_id: int | None = None
    num_beams: int = 1  # 1: greedy decoding
    max_new_tokens: int | None = None  # one limit for every input …
    max_len_a: float | None = None  # … or ⌊max_len_a · |x| + max_len_b⌋ per input
    max_len_b: int | None = None
    max_positions: int | None = None  # and never more new tokens than a decoder's position table holds
    min_new_tokens: int = 0  # [EOS] is forbidden before this many new tokens
    length_penalty: float = 1.0  # α; 0 ranks by log-probability alone
    length_penalty_form: str = "power"
    early_stopping: bool = False  # True: an input is done as soon as it has num_beams finished hypotheses
    num_return_sequences: int = 1  # the n-best list kept per input, at most num_beams
    no_repeat_ngram_size: int = 0  # 0: off; n: no n-gram may occur twice (Paulus et al. 2018)
    # θ > 0; 1: off. The logit of every token already in the row, prompt included, is divided by θ when
    # positive and multiplied by θ when negative (Keskar et al. 2019, CTRL; rules.py)
    repetition_penalty: float = 1.0
    forced_eos_token_id: int | None = None
    # token sequences never generated (transformers' bad_words_ids; Marian checkpoints ban [PAD]: [[pad]])
    bad_words_ids: tuple[tuple[int, ...], ...] = ()
    # sampling instead of the most probable token (greedy only; sampling.py): temperature, top-k, nucleus
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0  # 0: no top-k filter
    top_p: float = 1.0  # 1: no nucleus filter
    seed: int | None = None  # repeatable draws

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
        if self.do_sample and self.num_beams != 1:
            raise ConfigError(
                f"do_sample: sampling draws one continuation per input; set num_beams=1, not {self.num_beams}"
            )
        if not self.temperature > 0:  # also rejects nan
            raise ConfigError(f"temperature: must be > 0, got {self.temperature}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ConfigError(f"top_k: must be an integer >= 0 (0: no top-k filter), got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"top_p: must be in (0, 1] (1: no nucleus filter), got {self.top_p}")
        if not self.repetition_penalty > 0:
            raise ConfigError(f"repetition_penalty: must be > 0 (1: none), got {self.repetition_penalty}")
        if self.num_beams < 1:
            raise ConfigError(f"num_beams: must be at least 1 (1 = greedy), got {self.num_beams}")
        if not 1 <= self.num_return_sequences <= self.num_beams:
            raise ConfigError(
                f"num_return_sequences: must be in [1, num_beams={self.num_beams}], "
                f"got {self.num_return_sequences}"
            )
        if self.length_penalty_form not in LENGTH_PENALTY_FORMS:
            raise ConfigError(
                f"length_penalty_form: expected one of {', '.join(LENGTH_PENALTY_FORMS)}, "
                f"got {self.length_penalty_form!r}"
            )
        for name in ("min_new_tokens", "no_repeat_ngram_size"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}: must be >= 0, got {getattr(self, name)}")
        per_input = self.max_len_a is not None or self.max_len_b is not None
        if (self.max_new_tokens is None) == (not per_input):
            raise ConfigError(
                "max_new_tokens, max_len_a/max_len_b: set exactly one limit — max_new_tokens for the whole "
                f"batch, or max_len_b (and max_len_a) per input; got max_new_tokens={self.max_new_tokens}, "
                f"max_len_a={self.max_len_a}, max_len_b={self.max_len_b}"
            )
        if self.max_positions is not None and self.max_positions < 1:
            raise ConfigError(f"max_positions: must be at least 1, got {self.max_positions}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens: must be at least 1, got {self.max_new_tokens}")
        if per_input and self.max_len_b is None:
            raise ConfigError("max_len_a: needs max_len_b (the limit is ⌊max_len_a · |x| + max_len_b⌋)")
        if (self.max_len_a or 0.0) < 0 or (self.max_len_b or 0) < 0:
            raise ConfigError(f"max_len_a, max_len_b: must be >= 0, got {self.max_len_a}, {self.max_len_b}")

    def max_lengths(self, source_lengths: list[int]) -> list[int]:
        """The maximum number of new tokens of each input, [EOS] included, from its real length |x|."""
        if self.max_new_tokens is not None:
            lengths = [self.max_new_tokens] * len(source_lengths)
        else:
            a, b = self.max_len_a or 0.0, self.max_len_b
            lengths = [math.floor(a * n + b) for n in source_lengths]
        return lengths if self.max_positions is None else [min(n, self.max_positions) for n in lengths]
