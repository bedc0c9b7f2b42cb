"""Speculative decoding (Leviathan, Kalman & Matias 2023, "Fast Inference from Transformers via Speculative
Decoding"; Chen et al. 2023, "Accelerating Large Language Model Decoding with Speculative Sampling"): a small
draft model M_q proposes γ tokens one at a time, the target M_p scores all of them in one forward pass, and a
prefix of them is kept — the target runs once for up to γ + 1 tokens, and what comes out is the target's own
decoding.

One step of the search, after the tokens so far (Leviathan et al., Algorithm 1):

    d_1 … d_γ  from M_q, each fed back          q_i = M_q's distribution at position i
    p_1 … p_{γ+1}  from M_p on [x, d_1 … d_γ]    one forward pass of γ + 1 tokens
    n = the number of d_i kept; then one token from M_p: at the first d_i not kept, or after d_γ

Greedy (T = 0): d_i is the draft's most probable token and is kept while it is the target's most probable
one, d_i = argmax p_i; the token after the kept ones is argmax p_{n+1}. The tokens are exactly those of the
target's greedy decoding (tests/decoding/test_speculative.py), rules included: the target's
log-probabilities at each position go through the same rules (rules.py) with the history of the kept
tokens, as greedy.py applies them.

Sampling: d_i ~ q_i, kept with probability min(1, p_i(d_i) / q_i(d_i)); at the first rejection the token is
drawn from norm(max(0, p_i − q_i)) instead; when all γ are kept, one more from p_{γ+1}. Every token is then
distributed as p (Leviathan et al., Theorem 3.5; Chen et al., Theorem 1) — p being the distribution sampling
draws from (rules, temperature, top-k, nucleus: sampling.py), and q the draft's under the same temperature
and filters (any q keeps the result exact; a closer one keeps more tokens).

A batch: greedy rows run in lockstep and keep, at each step, as many tokens as the row that keeps fewest
(every row's kept prefix is its greedy decoding, so cutting it shorter changes nothing). Sampling cannot cut
a row short without biasing it (a kept token is distributed as min(p, q), not p: only the mixture with the
rejection draw is p), so a sampled batch runs row by row.

The two models implement, beside the protocol (protocol.py), two methods:

    logits, state = model.step_many(tokens, state)     tokens (N, k) fed at once → logits (N, k, V)
    state = model.rewind(state, n)                     forget the last n tokens fed (the caches shrink)

and share a vocabulary. The draft is usually a distilled student of the target (``seq2bert distill``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.greedy import Rows
from seq2bert.decoding.protocol import IncrementalDecoder, begin
from seq2bert.decoding.rules import Hypothesis
from seq2bert.decoding.sampling import filtered_scores
from seq2bert.decoding.stopping import StoppingCriterion, Streamer
from seq2bert.errors import ConfigError


@dataclass
class Acceptance:
    """What the drafts came to: tokens proposed and kept (their ratio: the acceptance rate α̂), and the
    target's forward passes against the tokens it produced (their ratio: tokens per target pass)."""

    proposed: int = 0
    kept: int = 0
    target_passes: int = 0
    tokens: int = 0

    @property
    def rate(self) -> float:
        return self.kept / self.proposed if self.proposed else 0.0

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.target_passes if self.target_passes else 0.0


def can_draft(model) -> bool:
    """Whether ``model`` offers what speculative decoding asks of the target and of the draft."""
    return all(callable(getattr(model, name, None)) for name in ("start", "step", "step_many", "rewind"))


@torch.no_grad()
def speculative_search(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
    *,
    draft: IncrementalDecoder,
    stopping: StoppingCriterion | None = None,
    streamer: Streamer | None = None,
    acceptance: Acceptance | None = None,
) -> list[list[Hypothesis]]:
    """input_ids, attention_mask (B, S) → one hypothesis per input, as ``greedy_search`` gives it (greedy: the
    same tokens; sampling: the same distribution), decoded by ``model`` with proposals from ``draft``.
    ``acceptance`` (optional) counts what the drafts came to."""
    for name, m in (("model", model), ("draft", draft)):
        if not can_draft(m):
            raise ConfigError(
                f"draft: speculative decoding needs step_many and rewind of the {name} "
                f"({type(m).__name__} has not both: a Transformer or a decoder-only model has)"
            )
    generator = None
    if config.do_sample and config.seed is not None:
        generator = torch.Generator(device=input_ids.device).manual_seed(config.seed)
    acceptance = acceptance if acceptance is not None else Acceptance()
    if not config.do_sample or input_ids.size(0) == 1:
        return _search(
            model, draft, input_ids, attention_mask, config, stopping, streamer, generator, acceptance
        )
    out = []
    for b in range(input_ids.size(0)):  # a sampled batch, row by row (see the module docstring)
        mask = None if attention_mask is None else attention_mask[b : b + 1]
        out += _search(
            model, draft, input_ids[b : b + 1], mask, config, stopping, streamer, generator, acceptance
        )
    return out


def _search(model, draft, input_ids, attention_mask, config, stopping, streamer, generator, acceptance):
    start = begin(model, input_ids, attention_mask, config)
    state, tokens = start.state, start.tokens  # tokens (B,): the next to feed, which neither model has read
    draft_state = begin(draft, input_ids, attention_mask, config).state
    rows = Rows(start, config, input_ids.device)
    sampling = config.do_sample

    def filtered(log_probs: torch.Tensor) -> torch.Tensor:  # (B, V) → the distribution sampling draws from
        return filtered_scores(log_probs, config.temperature, config.top_k, config.top_p).softmax(dim=-1)

    while not rows.done:
        left = int((rows.max_lengths - rows.t).masked_fill(rows.finished, 0).max())  # tokens still allowed
        k = min(config.num_draft_tokens, left - 1)  # the target adds one token of its own
        # 1. the draft proposes d_1 … d_k, each fed back
        proposals, q, draft_vocab = [], [], None
        x = tokens
        for _ in range(k):
            logits, draft_state = draft.step(x, draft_state)  # (B, V)
            draft_vocab = logits.size(-1)
            if sampling:
                q.append(filtered(logits.log_softmax(dim=-1, dtype=torch.float32)))
                x = torch.multinomial(q[-1], 1, generator=generator).squeeze(1)
            else:  # the draft's most probable token: no softmax needed
                x = logits.argmax(dim=-1)
            proposals.append(x)
        # 2. the target scores [x, d_1 … d_k] in one pass: its logits at each position (B, k + 1, V)
        fed = torch.stack([tokens, *proposals], dim=1)  # (B, k + 1)
        logits, state = model.step_many(fed, state)
        if k and logits.size(-1) != draft_vocab:
            raise ConfigError(
                f"draft: its vocabulary has {draft_vocab} tokens, the model's {logits.size(-1)}; "
                "a draft shares the model's vocabulary (a student distilled from it)"
            )
        acceptance.target_passes += 1
        acceptance.proposed += k
        # 3. keep d_i while the target agrees; then the target's own token
        for i in range(k + 1):
            log_p = rows.log_probs(logits[:, i])  # (B, V), the rules applied with the kept history
            kept = False
            if sampling:
                p = filtered(log_p)  # (1, V)
                if i < k:
                    d = proposals[i]
                    ratio = p.gather(1, d[:, None]) / q[i].gather(1, d[:, None])  # p_i(d_i) / q_i(d_i)
                    u = torch.rand(ratio.shape, generator=generator, device=ratio.device)
                    kept = bool((u < ratio).all())
                    if not kept:  # norm(max(0, p_i − q_i)); p = q leaves nothing to draw, and p is then exact
                        residual = (p - q[i]).clamp(min=0)
                        p = residual if bool(residual.sum() > 0) else p
                y = d if kept else torch.multinomial(p, 1, generator=generator).squeeze(1)
            else:
                y = log_p.max(dim=-1).indices  # the first maximal index, as greedy_search takes it
                kept = i < k and bool((y.eq(proposals[i]) | rows.finished).all())
            acceptance.kept += int(kept)
            acceptance.tokens += 1
            y = rows.take(y, log_p.gather(1, y[:, None]).squeeze(1), stopping, streamer)
            if not kept or rows.done:
                break
        n = i  # fed[:, : n + 1] stay read; the token to feed next is y
        state = model.rewind(state, k - n)
        if n < k:  # the draft read fed[:, :k]
            draft_state = draft.rewind(draft_state, k - 1 - n)
        else:  # every proposal kept: the draft has not read the last one yet
            _, draft_state = draft.step(fed[:, k], draft_state)
        tokens = y
    return rows.hypotheses()
