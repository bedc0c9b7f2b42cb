"""Batched beam search over the incremental-decoder protocol (seq2bert/decoding/protocol.py).

Sutskever, Vinyals & Le (2014, Sect. 3.2) translate with "a simple left-to-right beam search decoder which
maintains a small number B of partial hypotheses": at every step each partial hypothesis is extended by
every word of the vocabulary, only the B most likely extensions are kept, and a hypothesis that emits
[EOS] leaves the beam and joins the complete ones. This module implements that search, batched the way
fairseq (Ott et al., 2019) and Hugging Face transformers do it:

    for t = 0, 1, …                                       t = tokens generated so far by every live beam
        log p(y | x, y_≤t) for every beam                  one model.step over all B·K rows, log_softmax in fp32
        the rules of rules.py                              repetition penalty (on log p, as transformers),
                                                           min_new_tokens, no-repeat n-grams, forced last token
        s(y_≤t+1) = s(y_≤t) + log p(y_t+1 | x, y_≤t)       (B, K, V), flattened per input to (B, K·V)
        take the 2K best candidates per input              K = num_beams
        candidates ending in [EOS] among the first K ranks are finished: stored with score s / lp(|Y|)
        (so are those that meet a ``stopping`` criterion, stopping.py, with their last token: transformers)
        the K best candidates not ending are the new beams; the decoder state follows them

Diverse beam search (Vijayakumar et al. 2016, Alg. 1; ``num_beam_groups`` G > 1): the K beams are G groups of
K/G, each a beam search of its own (its 2K/G candidates, its finished hypotheses, its stopping), taken in order
at every step; group g's log-probabilities are first lowered by λ = ``diversity_penalty`` for every beam of an
earlier group that took the same token at this step (Hamming diversity, the paper's Eq. 3 with Δ counting equal
tokens; transformers' HammingDiversityLogitsProcessor, applied before the other rules). The penalised scores
are carried on, and the hypotheses of all groups are ranked together at the end. G = 1 is the search above.

Taking 2K candidates guarantees K live beams even when K of them end in [EOS] (each beam contributes at
most one [EOS] candidate).

Length penalty (``length_penalty`` = α; α = 0 ranks by log-probability alone). Beam search prefers short
hypotheses because every token adds a negative log-probability; dividing by lp(Y) (rules.py: GNMT's "wu" or
transformers' "power" form) counters this. |Y| counts the new tokens, [EOS] included, [BOS] excluded —
transformers divides by ``(cur_len + 1 - decoder_prompt_len) ** length_penalty`` (generation/utils.py,
``_update_finished_beams``), i.e. the same count. A hypothesis cut at the maximum length has no [EOS]: |Y| is
its number of tokens.

Semantics, where implementations differ:
- Maximum length per input (``GenerationConfig.max_lengths``): ``max_new_tokens``, or ⌊max_len_a · |x| +
  max_len_b⌋ new tokens (fairseq's ``max_len_a/b``), |x| = the number of real source tokens
  (``attention_mask.sum()``, or the count of tokens ≠ pad_token_id when no mask is given). At that length
  the live beams are finished as they are, without [EOS] (unless it was forced).
- ``min_new_tokens``: every finished hypothesis has at least that many tokens before its [EOS] (fairseq's
  ``min_len``, transformers' ``min_new_tokens``).
- Finished hypotheses: each input keeps the K best (a new one enters a full list only if strictly better
  than the worst; equal scores keep the order in which they were found).
- Stopping: an input is done when it has K finished hypotheses and either ``early_stopping`` is True, or
  no live beam is expected to beat the worst finished one. The latter is transformers' heuristic for
  ``early_stopping=False``: stop when  s(best live beam) / lp(t) ≤ worst finished score,  with t the current
  length. It is exact for α = 0 (scores only fall as tokens are added) and a heuristic otherwise. An input
  is also done when it has no live beam of finite score left, and at its maximum length. A done input
  keeps its rows in the batch (fed [PAD]) but no longer changes.
- Ties are broken deterministically: among equal finite scores the candidate with the lower flattened
  index beam · V + token comes first, i.e. the lower beam index, then the lower token id. (``torch.topk``
  does not promise any order among ties, so it is only used to find the k-th value; see ``_topk``.)
  Candidates of score −∞ (impossible ones: extensions of dead beams, every token but the forced one at a
  forced last step) come last in no promised order; they never become hypotheses.
- With K = 1 this is exactly greedy decoding (greedy.py, the fast path ``generate`` takes for one beam).

The model is driven through ``start``, ``step``, ``reorder`` and, when it has it, ``repeat``: after
``repeat(state, K)`` every ``index`` given to ``reorder`` keeps each row among its input's K rows, so what
depends on the source alone is kept once per input instead of K times (protocol.py).

References: Sutskever et al. (2014) arXiv:1409.3215; Wu et al. (2016) arXiv:1609.08144; Paulus et al.
(2018) arXiv:1705.04304; Ott et al. (2019) fairseq, arXiv:1904.01038.
"""

from __future__ import annotations

import itertools
import math

import torch

from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.protocol import IncrementalDecoder, begin, repeat
from seq2bert.decoding.rules import Hypothesis, apply_rules, hypothesis, length_penalty, penalize_repetitions
from seq2bert.decoding.stopping import StoppingCriterion


def _topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(x, k)`` along dim 1 with a fixed tie rule: among equal finite values the lower index
    comes first (−∞ entries, when fewer than k are finite, fill the rest in no promised order).

    x: (B, N) → values, indices (B, k), values in descending order. ``torch.topk`` picks the right *set*
    unless the k-th and the (k+1)-th largest values are equal; it is then unspecified which of the tied
    elements it keeps. So one topk of k + 1 finds the set of every row, the rows with a finite tie across
    that boundary (rare with real scores) are redone by ``_topk_exact``, and each set is put in order.
    """
    N = x.size(1)
    if k >= N:
        return _topk_exact(x, k)
    values, indices = x.topk(k + 1, dim=1)  # (B, k + 1), descending
    # (B,) the k-th value also lies outside the set; a tie at −∞ (dead beams; every candidate but the forced
    # token at a forced last step) is left as it is: those candidates are dropped whichever are taken
    boundary_tie = (values[:, k - 1] == values[:, k]) & values[:, k - 1].isfinite()
    indices = indices[:, :k].sort(dim=1).values  # (B, k) ascending, so that a stable sort keeps index order
    values = x.gather(1, indices)
    order = values.argsort(dim=1, descending=True, stable=True)
    values, indices = values.gather(1, order), indices.gather(1, order)
    if bool(boundary_tie.any()):
        values[boundary_tie], indices[boundary_tie] = _topk_exact(x[boundary_tie], k)
    return values, indices


def _topk_exact(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``_topk`` by counting: every element above the k-th largest value is kept, and the ties at it are
    filled in index order. x: (B, N) → values, indices (B, k)."""
    kth = x.topk(k, dim=1).values[:, -1:]  # (B, 1) the k-th largest value of each row
    above = x > kth  # (B, N)
    at = x == kth  # (B, N)
    room = k - above.sum(dim=1, keepdim=True)  # (B, 1) how many of the ties at the k-th value are kept
    keep = above | (at & (at.cumsum(dim=1) <= room))  # (B, N) exactly k per row
    indices = keep.nonzero()[:, 1].view(-1, k)  # (B, k) in ascending index order
    values = x.gather(1, indices)  # (B, k)
    order = values.argsort(dim=1, descending=True, stable=True)  # (B, k) stable: ties stay in index order
    return values.gather(1, order), indices.gather(1, order)


def _add(finished: list[Hypothesis], hypothesis: Hypothesis, capacity: int) -> None:
    """Insert into a best-first list holding at most ``capacity`` hypotheses; equal scores keep arrival order."""
    if len(finished) == capacity and hypothesis.score <= finished[-1].score:
        return
    position = next((i for i, h in enumerate(finished) if h.score < hypothesis.score), len(finished))
    finished.insert(position, hypothesis)
    del finished[capacity:]


@torch.no_grad()
def beam_search(
    model: IncrementalDecoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    config: GenerationConfig,
    *,
    stopping: StoppingCriterion | None = None,
) -> list[list[Hypothesis]]:
    """Decode a batch with beam search (see the module docstring for the algorithm and its semantics) — in
    ``num_beam_groups`` groups with a diversity penalty, diverse beam search, when the config asks for it.

    input_ids, attention_mask: (B, S) → the ``num_return_sequences`` best hypotheses of each input, best
    first (fewer only when the model gives probability 0 to nearly everything, or the maximum length is 0).
    """
    B, K, G = input_ids.size(0), config.num_beams, config.num_beam_groups
    Kg = K // G  # beams per group; G = 1: plain beam search
    device = input_ids.device
    eos = -1 if config.eos_token_id is None else config.eos_token_id  # no [EOS]: no candidate ends with it
    start = begin(model, input_ids, attention_mask, config)
    max_lengths = start.max_lengths
    # The K beams of an input are identical until the first token, so step 0 runs on the B inputs alone and
    # the state is repeated to B·K rows afterwards: row b·K + g·Kg + k is then beam k of group g of input b.
    state, tokens = start.state, start.tokens  # tokens (B,), then (B·K,): the last token of each beam
    # every beam's row — its prompt, then its new tokens — in one buffer made for the longest decode, and a
    # second one the rows are gathered into when the beams are reordered (the two swapped: no step allocates)
    P, longest = start.prompt.size(1), max(max_lengths, default=0)
    rows_buffer = start.prompt.new_zeros(B * K, P + longest)  # (B·K, P + max length)
    rows_buffer[:, :P] = start.prompt.repeat_interleave(K, dim=0)
    spare = torch.empty_like(rows_buffer)
    # (B·K, P + max length): False on left padding; a row keeps its input's prompt when the beams move
    mask_buffer = torch.ones_like(rows_buffer, dtype=torch.bool)
    mask_buffer[:, :P] = start.prompt_mask.repeat_interleave(K, dim=0)
    # The K copies are identical at t = 0: only beam 0 of each group may be extended, or the first step would
    # pick the same candidate Kg times.
    beam_scores = torch.full((B, K), -math.inf, device=device)  # (B, K) log P(y_≤t | x) of each live beam
    beam_scores[:, ::Kg] = 0.0
    finished: list[list[list[Hypothesis]]] = [[[] for _ in range(G)] for _ in range(B)]  # [b][g]
    done = [[False] * G for _ in range(B)]
    last_steps = torch.tensor(max_lengths, device=device).repeat_interleave(K)  # (B·K,) each row's maximum
    batch_starts = torch.arange(B, device=device) * K  # (B,) the row of beam 0 of each input

    def extend(g: int, taken: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Steps 3–5 of the module docstring for group g of every input: its 2·Kg best candidates, the finished
        hypotheses among its first Kg, its Kg new beams. ``taken`` (B, n): the tokens earlier groups took at this
        step, each lowering a token's log-probability by ``diversity_penalty`` (Hamming diversity). →
        (the new beams' scores (B, Kg), the rows they extend (B, Kg), their tokens (B, Kg))."""
        V = log_probs.size(-1)
        # the group's rows (B·Kg,) of every input; one group: all of them, taken as they are
        offsets = (batch_starts + g * Kg)[:, None]  # (B, 1) the row of the group's beam 0 of each input
        group = slice(None) if G == 1 else (offsets + torch.arange(Kg, device=device)).view(-1)
        lp = log_probs[group]  # (B·Kg, V)
        if taken is not None and config.diversity_penalty:  # before the other rules, as transformers
            counts = torch.zeros(B, V, device=device).scatter_add_(
                1, taken, torch.ones_like(taken, dtype=lp.dtype)
            )
            lp = lp - config.diversity_penalty * counts.repeat_interleave(Kg, dim=0)
        group_history = rows_history[group]
        if config.repetition_penalty != 1.0:  # on log p, as transformers' beam search
            group_mask = rows_mask[group]
            lp = penalize_repetitions(lp, group_history, group_mask, config.repetition_penalty)
        last = last_steps[group]
        lp = apply_rules(lp, t, group_history, last.eq(t + 1), config)
        scores = lp.add_(beam_scores[:, g * Kg : (g + 1) * Kg].reshape(B * Kg, 1))  # (B·Kg, V) in place
        # (B, Kg·V) all extensions of an input's group, index = beam·V + token
        scores = scores.view(B, Kg * V)

        # 3. The 2Kg best candidates of each input, best first.
        cand_scores, cand_index = _topk(scores, 2 * Kg)  # (B, 2Kg)
        cand_tokens = cand_index % V  # (B, 2Kg)
        cand_rows = cand_index // V + offsets  # (B, 2Kg) the row of the beam each candidate extends
        cand_ends = cand_tokens.eq(eos)  # (B, 2Kg)
        if stopping is not None:  # the candidates that meet the criterion end too, with their last token
            rows = cand_rows.view(-1)
            candidates = torch.cat([rows_history[rows], cand_tokens.view(-1, 1)], dim=1)
            cand_ends = cand_ends | stopping(candidates).view(B, 2 * Kg)

        # 4. Candidates that end among the first Kg ranks are finished hypotheses of length t + 1.
        new_finished = cand_ends[:, :Kg] & cand_scores[:, :Kg].isfinite()  # (B, Kg)
        for b, rank in new_finished.nonzero().tolist():  # input by input, best rank first
            if not done[b][g]:
                s = cand_scores[b, rank].item()
                row = int(cand_rows[b, rank])
                last_token = int(cand_tokens[b, rank])
                _add(finished[b][g], hypothesis(history()[row].tolist() + [last_token], s, config), Kg)

        # 5. The Kg best candidates that do not end become the beams; the state and history follow them.
        # a stable sort on "ends" lists the other candidates first, still in rank order
        live = cand_ends.to(torch.uint8).argsort(dim=1, stable=True)[:, :Kg]  # (B, Kg) their ranks
        # more than Kg candidates may end when a stopping criterion holds: the beams left over are dead
        new_scores = cand_scores.gather(1, live).masked_fill(cand_ends.gather(1, live), -math.inf)
        rows = cand_rows.gather(1, live)  # (B, Kg)
        done_rows = torch.tensor([d[g] for d in done], device=device)[:, None]  # (B, 1)
        tokens = cand_tokens.gather(1, live).masked_fill(done_rows, config.pad_token_id)  # done: fed [PAD]
        return new_scores, rows, tokens

    def history() -> torch.Tensor:
        """(B·K, t): the new tokens of each beam."""
        return rows_buffer[:, P : P + t]

    for t in itertools.count():  # t = number of tokens generated so far by every live beam
        # 1. Close the groups that are done: at their maximum length the live beams finish as they are.
        live_scores = beam_scores.tolist()  # B lists of K floats, best first within each group
        for b, g in itertools.product(range(B), range(G)):
            if done[b][g]:
                continue
            live = live_scores[b][g * Kg : (g + 1) * Kg]
            if t >= max_lengths[b]:
                for k, s in enumerate(live):
                    if s > -math.inf:
                        row = b * K + g * Kg + k
                        _add(finished[b][g], hypothesis(history()[row].tolist(), s, config), Kg)
                done[b][g] = True
            elif live[0] == -math.inf:  # no live beam can produce a hypothesis any more
                done[b][g] = True
            elif len(finished[b][g]) == Kg:
                # transformers' heuristic: the best live beam, scored at the current length, does not
                # beat the worst finished hypothesis kept
                lp = length_penalty(t, config.length_penalty, config.length_penalty_form)
                done[b][g] = config.early_stopping or live[0] / lp <= finished[b][g][-1].score
        if all(all(d) for d in done):
            break

        # 2. Score every one-token extension of every beam.
        logits, state = model.step(tokens, state)  # (B·K, V); (B, V) at t = 0
        log_probs = logits.log_softmax(dim=-1, dtype=torch.float32)  # (B·K, V) log p(y | x, y_≤t)
        if t == 0:  # the beams but the first of each group are copies with score −∞
            state = repeat(model, state, K, B, device)
            log_probs = log_probs.repeat_interleave(K, dim=0)  # (B·K, V)
        rows_history = rows_buffer[:, : P + t]  # (B·K, P + t) views: the prompt and the new tokens so far
        rows_mask = mask_buffer[:, : P + t]
        groups = [extend(0, None)]
        chosen = groups[0][2][:, None]  # (B, g, Kg) the tokens the groups before g took at this step
        for g in range(1, G):  # Vijayakumar et al. (2016), Alg. 1: group g sees the tokens of groups < g
            groups.append(extend(g, chosen.flatten(1)))
            chosen = torch.cat([chosen, groups[-1][2][:, None]], dim=1)
        beam_scores = torch.cat([scores for scores, _, _ in groups], dim=1)  # (B, K)
        rows = torch.stack([r for _, r, _ in groups], dim=1).view(B * K)  # (B·K,) the beam each extends
        tokens = chosen.reshape(B * K)  # (B·K,)
        torch.index_select(
            rows_buffer[:, : P + t], 0, rows, out=spare[:, : P + t]
        )  # the rows follow the beams
        rows_buffer, spare = spare, rows_buffer
        rows_buffer[:, P + t] = tokens  # (B·K, P + t + 1)
        state = model.reorder(state, rows)

    out = []
    for groups_of_input in finished:  # the best of every group, best first (a stable sort: group order)
        merged = sorted((h for hyps in groups_of_input for h in hyps), key=lambda h: -h.score)
        out.append(merged[: config.num_return_sequences])
    return out
