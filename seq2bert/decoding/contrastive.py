"""Contrastive search (Su et al. 2022, "A Contrastive Framework for Neural Text Generation", Sect. 4.1, Eq. 5).

At each step the next token is taken among the k most probable ones, V^(k), by its probability minus how much
its hidden state resembles one of the tokens so far (the "degeneration penalty"):

    x_t = argmax_{v ∈ V^(k)} { (1 − α) · p(v | x_<t) − α · max_{1 ≤ j ≤ t−1} s(h_v, h_{x_j}) }       (Eq. 5)

s is the cosine similarity, h_v the model's last hidden state at v when x_<t v is fed, h_{x_j} those of the
tokens before it — the prompt's (padding excluded) and the new tokens' (a decoder-only model), or the decoder's
inputs from [decoder start] on (an encoder-decoder). α = ``penalty_alpha``, k = ``top_k``; α = 0 is greedy
decoding. p is the model's distribution after the rules of rules.py (the −∞ ones renormalised away, as
transformers' softmax of the processed logits does), and a hypothesis' ``log_prob`` is the sum of log p of
its tokens.

Each step feeds the k candidates of every row at once (the state taken k times, ``reorder``), and keeps the
row of the one chosen: its logits are the next step's. The model's ``step`` must give its hidden state
(protocol.py, ``StepOutput``); a decoder-only model's ``context_hidden_states`` gives the prompt's.
"""

from __future__ import annotations

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.greedy import Rows
from seq2bert.decoding.protocol import IncrementalDecoder, begin, hidden_state
from seq2bert.decoding.rules import Hypothesis
from seq2bert.decoding.stopping import StoppingCriterion, Streamer
from seq2bert.errors import ConfigError


def degeneration_penalty(context: torch.Tensor, mask: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """max_j s(h_v, h_{x_j}) of Eq. 5: context (B, T, d) the hidden states so far, mask (B, T) True on the
    real ones, candidates (B, k, d) → (B, k), the largest cosine similarity of each candidate."""
    context = context / context.norm(dim=-1, keepdim=True)
    candidates = candidates / candidates.norm(dim=-1, keepdim=True)
    cosine = torch.einsum("bkd,btd->bkt", candidates, context)  # (B, k, T)
    return cosine.masked_fill(~mask[:, None, :], -torch.inf).max(dim=-1).values


def _step(model: IncrementalDecoder, tokens: torch.Tensor, state):
    out = model.step(tokens, state)
    logits, state = out
    hidden = hidden_state(out)
    if hidden is None:
        raise ConfigError(
            f"penalty_alpha: contrastive search compares hidden states, and {type(model).__name__}.step "
            "gives none (a StepOutput with hidden_state, seq2bert/decoding/protocol.py)"
        )
    return logits, state, hidden


@torch.no_grad()
def contrastive_search(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
    *,
    stopping: StoppingCriterion | None = None,
    streamer: Streamer | None = None,
) -> list[list[Hypothesis]]:
    """input_ids, attention_mask (B, S) → one hypothesis per input (see the module docstring): its new tokens
    up to [EOS] (included), the token that met ``stopping``, or its maximum length."""
    start = begin(model, input_ids, attention_mask, config)
    B, k, alpha = input_ids.size(0), config.top_k, config.penalty_alpha
    device = input_ids.device
    context = getattr(model, "context_hidden_states", lambda state: None)(start.state)  # (B, P − 1, d)
    context_mask = start.prompt_mask[:, :-1]  # (B, P − 1) the tokens ``start`` read
    logits, state, hidden = _step(model, start.tokens, start.state)  # (B, V), the state, (B, d)
    context = hidden[:, None] if context is None else torch.cat([context, hidden[:, None]], dim=1)
    real = torch.ones(B, 1, dtype=torch.bool, device=device)  # a new token's column of the mask
    context_mask = torch.cat([context_mask, real], dim=1)  # (B, T)
    rows = Rows(start, config, device)
    batch = torch.arange(B, device=device)
    while not rows.done:
        log_probs = rows.log_probs(logits)  # (B, V)
        probs, candidates = log_probs.softmax(dim=-1).topk(k, dim=-1)  # (B, k) V^(k), renormalised
        # feed every candidate: row b·k + i is candidate i of input b
        logits_k, state_k, hidden_k = _step(
            model, candidates.view(B * k), model.reorder(state, batch.repeat_interleave(k))
        )
        penalty = degeneration_penalty(context, context_mask, hidden_k.view(B, k, -1))  # (B, k)
        chosen = ((1 - alpha) * probs - alpha * penalty).argmax(dim=-1)  # (B,) Eq. 5
        tokens = candidates.gather(1, chosen[:, None]).squeeze(1)  # (B,)
        keep = batch * k + chosen  # (B,) the rows of the chosen candidates
        logits, state, hidden = logits_k[keep], model.reorder(state_k, keep), hidden_k[keep]
        context = torch.cat([context, hidden[:, None]], dim=1)
        context_mask = torch.cat([context_mask, real], dim=1)
        rows.take(tokens, log_probs.gather(1, tokens[:, None]).squeeze(1), stopping, streamer)
    return rows.hypotheses()
