"""The decoding strategies by name: an explicit registry, the way the model families have theirs.

A strategy is a search over the incremental-decoder protocol (protocol.py):

    search(model, input_ids, attention_mask, config, *, stopping, streamer) → the hypotheses of each input

and a rule saying when the settings ask for it without naming it (``chosen``). ``generate``
(generation.py) takes ``GenerationConfig.strategy`` when it names one, else the first entry of
``STRATEGIES`` whose rule holds — the order below is the order they are tried in, ``greedy`` last:

    diverse_beam num_beam_groups > 1            Vijayakumar et al. (2016); beam.py, in groups
    beam         num_beams > 1                  Sutskever et al. (2014); beam.py
    contrastive  penalty_alpha > 0              Su et al. (2022); contrastive.py
    sample       do_sample                      temperature, top-k, nucleus; greedy.py with sampling.py
    greedy       always                         greedy.py

and one that a draft model chooses (``generate(…, draft=…)``) in place of greedy decoding or sampling:

    speculative  a draft model is given         Leviathan et al. (2023); speculative.py

Adding a strategy: write its search (any module of this floor), declare its settings as fields of
``GenerationConfig`` (config.py, with ``option``: the CLI flags, the serve schemas and ``model.generate``'s
keywords follow), and add its entry here — or, from outside the package, ``register`` it and ask for it by
name (``strategy="mine"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from seq2bert.decoding.beam import beam_search
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.contrastive import contrastive_search
from seq2bert.decoding.greedy import greedy_search
from seq2bert.decoding.rules import Hypothesis
from seq2bert.decoding.speculative import speculative_search
from seq2bert.errors import ConfigError

Search = Callable[..., list[list[Hypothesis]]]


def _beam(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: Any,
    config: GenerationConfig,
    *,
    stopping=None,
    streamer=None,
):
    return beam_search(model, input_ids, attention_mask, config, stopping=stopping)


@dataclass(frozen=True)
class Strategy:
    """A search (see the module docstring), when the settings choose it, whether it can stream its
    tokens as they are chosen (one token per row per step: a ``streamer``), and whether it decodes with a
    draft model (its search then takes ``draft=``)."""

    search: Search
    chosen: Callable[[GenerationConfig], bool] = lambda config: False
    streams: bool = False
    drafts: bool = False


STRATEGIES: dict[str, Strategy] = {
    "diverse_beam": Strategy(_beam, lambda c: c.num_beam_groups > 1),
    "beam": Strategy(_beam, lambda c: c.num_beams > 1),
    "contrastive": Strategy(contrastive_search, lambda c: c.penalty_alpha > 0, streams=True),
    "sample": Strategy(greedy_search, lambda c: c.do_sample, streams=True),
    "greedy": Strategy(greedy_search, lambda c: True, streams=True),
    "speculative": Strategy(speculative_search, streams=True, drafts=True),
}


def register(name: str, strategy: Strategy, *, replace: bool = False) -> None:
    """Add a strategy under ``name`` (asked for with ``GenerationConfig(strategy=name)``); an existing name is
    a ConfigError unless ``replace``."""
    if name in STRATEGIES and not replace:
        raise ConfigError(f"strategy: {name!r} is already registered (replace=True replaces it)")
    STRATEGIES[name] = strategy


def select(config: GenerationConfig, *, drafted: bool = False) -> tuple[str, Strategy]:
    """The strategy ``config`` names, else the first whose rule holds; with a draft model (``drafted``) one
    that takes it — speculative decoding in place of greedy decoding or sampling."""
    if config.strategy is not None:
        if config.strategy not in STRATEGIES:
            raise ConfigError(f"strategy: expected one of {', '.join(STRATEGIES)}, got {config.strategy!r}")
        name, strategy = config.strategy, STRATEGIES[config.strategy]
    elif drafted:
        name = "speculative"
        strategy = STRATEGIES[name]
        beside = next(n for n, s in STRATEGIES.items() if s.chosen(config))
        if beside not in ("greedy", "sample"):
            raise ConfigError(
                f"draft: speculative decoding replaces greedy decoding or sampling, not {beside} search "
                f"(num_beams={config.num_beams}, penalty_alpha={config.penalty_alpha:g})"
            )
    else:
        name, strategy = next((n, s) for n, s in STRATEGIES.items() if s.chosen(config))
    if strategy.drafts != drafted:
        raise ConfigError(
            f"strategy: {name} decodes with a draft model (give draft=…)"
            if strategy.drafts
            else f"draft: {name} search takes no draft model"
        )
    return name, strategy
