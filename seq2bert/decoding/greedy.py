"""Greedy decoding over the incremental-decoder protocol (seq2bert/decoding/protocol.py).

At each step the most probable next token is taken: ŷ_t = argmax_y p(y | x, ŷ_<t), after the rules of
rules.py (min_new_tokens, no-repeat n-grams, the forced last token). A row ends at [EOS] or at its maximum
length and is then fed [PAD]; decoding stops when every row has ended. Among equal log-probabilities the
lower token id is taken (``torch.max`` returns the first maximal index).

With ``do_sample`` the token is drawn instead (temperature, top-k, nucleus: sampling.py). A repetition
penalty applies to the logits, before the log-softmax (rules.py). A ``stopping`` criterion ends a row as
[EOS] does, and a ``streamer`` sees each step's tokens as they are chosen (stopping.py).

Without sampling, this is beam search with one beam (beam.py gives the same hypotheses with ``num_beams=1``,
tests/decoding/test_generation.py), without the bookkeeping of K beams: the fast path of ``generate``.
"""

from __future__ import annotations

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.protocol import IncrementalDecoder, SearchStart, begin
from seq2bert.decoding.rules import Hypothesis, apply_rules, hypothesis, penalize_repetitions
from seq2bert.decoding.sampling import sample
from seq2bert.decoding.stopping import StoppingCriterion, Streamer


class Rows:
    """What a search that takes one token per row at each step keeps (greedy decoding, sampling, contrastive
    search): the decoder prompt and new tokens of each row, which rows have ended, their lengths and
    log-probabilities, and the step t."""

    def __init__(self, start: SearchStart, config: GenerationConfig, device: torch.device):
        self.config = config
        self.max_lengths = torch.tensor(start.max_lengths, device=device)  # (B,)
        self.limits = set(start.max_lengths)
        self.finished = self.max_lengths.eq(0)  # (B,) rows that have ended
        self.lengths = torch.zeros_like(self.max_lengths)  # (B,) tokens taken by each row until it ended
        self.log_prob = torch.zeros(len(start.max_lengths), device=device)  # (B,)
        P = self.prompt_length = start.prompt.size(1)
        # each row's prompt and new tokens in buffers made for the longest decode (no step allocates)
        self._rows = start.prompt.new_zeros(start.prompt.size(0), P + max(start.max_lengths, default=0))
        self._rows[:, :P] = start.prompt
        self._mask = torch.ones_like(self._rows, dtype=torch.bool)
        self._mask[:, :P] = start.prompt_mask
        self.t = 0

    @property
    def history(self) -> torch.Tensor:
        """(B, P + t): each row's decoder prompt and new tokens so far."""
        return self._rows[:, : self.prompt_length + self.t]

    @property
    def history_mask(self) -> torch.Tensor:
        """(B, P + t): False on a prompt's left padding."""
        return self._mask[:, : self.prompt_length + self.t]

    @property
    def done(self) -> bool:
        return bool(self.finished.all())

    def log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Next-token logits (B, V) → log p(y | x, ŷ_≤t) (B, V) after the rules: a repetition penalty on the
        logits (as transformers' greedy search and sampling), then the log-softmax, then rules.py's."""
        c, t = self.config, self.t
        if c.repetition_penalty != 1.0:
            logits = penalize_repetitions(
                logits.float(), self.history, self.history_mask, c.repetition_penalty
            )
        log_probs = logits.log_softmax(dim=-1, dtype=torch.float32)  # (B, V)
        # the rows whose next token is their last (only the forced token reads them)
        last = (
            self.max_lengths.eq(t + 1) if c.forced_eos_token_id is not None and t + 1 in self.limits else None
        )
        return apply_rules(log_probs, t, self.history, last, c)

    def take(
        self,
        tokens: torch.Tensor,
        log_p: torch.Tensor,
        stopping: StoppingCriterion | None = None,
        streamer: Streamer | None = None,
    ) -> torch.Tensor:
        """Each row takes ``tokens`` (B,) of log-probabilities ``log_p`` (B,); ended rows take [PAD] instead.
        → the tokens to feed (B,)."""
        c, finished = self.config, self.finished
        self.log_prob = self.log_prob + torch.where(finished, torch.zeros_like(log_p), log_p)
        self.lengths = self.lengths + (~finished).long()
        tokens = tokens.masked_fill(finished, c.pad_token_id)  # ended rows are fed [PAD]
        self._rows[:, self.prompt_length + self.t] = tokens
        if streamer is not None:
            streamer(tokens)
        self.t += 1
        ended = self.max_lengths.eq(self.t)
        if c.eos_token_id is not None:
            ended = ended | tokens.eq(c.eos_token_id)
        if stopping is not None:
            ended = ended | (stopping(self.history) & ~finished)
        self.finished = finished | ended
        return tokens

    def hypotheses(self) -> list[list[Hypothesis]]:
        """One hypothesis per row: its new tokens until it ended, and their log-probability."""
        new_tokens = self.history[:, self.prompt_length :].tolist()  # (B, t)
        return [
            [hypothesis(row[:n], s, self.config)]
            for row, n, s in zip(new_tokens, self.lengths.tolist(), self.log_prob.tolist(), strict=True)
        ]


@torch.no_grad()
def greedy_search(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
    *,
    stopping: StoppingCriterion | None = None,
    streamer: Streamer | None = None,
) -> list[list[Hypothesis]]:
    """input_ids, attention_mask (B, S) → one hypothesis per input: its new tokens up to [EOS] (included), the
    token that met ``stopping``, or its maximum length, and their log-probability."""
    start = begin(model, input_ids, attention_mask, config)
    state, tokens = start.state, start.tokens
    rows = Rows(start, config, input_ids.device)
    generator = None
    if config.do_sample and config.seed is not None:
        generator = torch.Generator(device=input_ids.device).manual_seed(config.seed)
    while not rows.done:
        logits, state = model.step(tokens, state)  # (B, V)
        log_probs = rows.log_probs(logits)  # (B, V) log p(y | x, ŷ_≤t)
        if config.do_sample:  # y_t ~ p (tempered, filtered), scored by its log-probability before both
            tokens = sample(log_probs, config.temperature, config.top_k, config.top_p, generator)
            best = log_probs.gather(1, tokens[:, None]).squeeze(1)
        else:
            best, tokens = log_probs.max(dim=-1)  # (B,), (B,)
        tokens = rows.take(tokens, best, stopping, streamer)
    return rows.hypotheses()
