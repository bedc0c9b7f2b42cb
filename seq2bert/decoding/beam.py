"""Batched beam search for any seq2bert encoder-decoder.

Sutskever, Vinyals & Le (2014, Sect. 3.2) translate with "a simple left-to-right beam search decoder which
maintains a small number B of partial hypotheses": at every step each partial hypothesis is extended by
every word of the vocabulary, only the B most likely extensions are kept, and a hypothesis that emits
[EOS] leaves the beam and joins the complete ones. This module implements that search, batched the way
fairseq (Ott et al., 2019) and Hugging Face transformers do it:

    for t = 0, 1, …                                       t = tokens generated so far by every live beam
        log p(y | x, y_≤t) for every beam                  one decode_step over all B·K rows, log_softmax in fp32
        forbid [EOS] while t < min_length                  log-prob of [EOS] → −∞
        forbid tokens that repeat an n-gram                log-prob → −∞ (no_repeat_ngram_size, Paulus et al., 2018)
        s(y_≤t+1) = s(y_≤t) + log p(y_t+1 | x, y_≤t)       (B, K, V), flattened per input to (B, K·V)
        take the 2K best candidates per input              K = num_beams
        candidates ending in [EOS] among the first K ranks are finished: stored with score s / lp(|Y|)
        the K best candidates not ending in [EOS] are the new beams; the decoder state follows them

Taking 2K candidates guarantees K live beams even when K of them end in [EOS] (each beam contributes at
most one [EOS] candidate).

Length penalty (``length_penalty`` = α; α = 0 ranks by log-probability alone). Beam search prefers short
hypotheses because every token adds a negative log-probability; dividing by lp(Y) counters this:

    "wu":    lp(Y) = ((5 + |Y|) / 6)^α      Wu et al. (2016), Eq. 14 (GNMT; the coverage penalty is not used)
    "power": lp(Y) = |Y|^α                 what transformers does

where |Y| counts the generated tokens, [EOS] included, [BOS] excluded — transformers divides by
``(cur_len + 1 - decoder_prompt_len) ** length_penalty`` (generation/utils.py, ``_update_finished_beams``;
``generated_len`` in the older ``BeamHypotheses.add``), i.e. the same count. A hypothesis cut at the maximum
length has no [EOS]: |Y| is its number of tokens. An empty hypothesis (maximum length 0) gets lp = 1 in
the "power" form, where 0^α would divide by zero.

Semantics, where implementations differ:
- Maximum length per input: ⌊max_len_a · |x| + max_len_b⌋ generated tokens (fairseq's ``max_len_a/b``),
  |x| = the number of real source tokens (``attention_mask.sum()``, or the count of tokens ≠ pad_token_id
  when no mask is given). At that length the live beams are finished as they are, without [EOS].
- ``min_length``: [EOS] is forbidden while fewer than ``min_length`` tokens have been generated, so every
  finished hypothesis has at least ``min_length`` tokens before its [EOS] (fairseq's ``min_len``;
  transformers' ``min_length`` also counts the decoder start token). The forbidden log-probabilities are
  set to −∞ after the softmax, without renormalising the others, so ``log_prob`` stays the model's.
- No-repeat n-grams are taken over the generated tokens ([BOS] excluded); [EOS] can be blocked too.
- Finished hypotheses: each input keeps the K best (a new one enters a full list only if strictly better
  than the worst; equal scores keep the order in which they were found).
- Stopping: an input is done when it has K finished hypotheses and either ``early_stopping`` is True, or
  no live beam is expected to beat the worst finished one. The latter is transformers' heuristic for
  ``early_stopping=False``: stop when  s(best live beam) / lp(t) ≤ worst finished score,  with t the current
  length. It is exact for α = 0 (scores only fall as tokens are added) and a heuristic otherwise. An input
  is also done when it has no live beam of finite score left, and at its maximum length. A done input
  keeps its rows in the batch (fed [PAD]) but no longer changes.
- Ties are broken deterministically: among equal scores the candidate with the lower flattened index
  beam · V + token comes first, i.e. the lower beam index, then the lower token id. (``torch.topk`` does
  not promise any order among ties, so it is only used to find the k-th value; see ``_topk``.)
- With K = 1 this is exactly greedy decoding (``seq2bert.decoding.greedy.greedy_decode``).

The model must offer ``encode(input_ids, attention_mask) -> state``, ``decode_step(tokens (N,), state) ->
(logits (N, V), state)`` and ``reorder_state(state, index (N,)) -> state`` (see models/seq2seq/model.py).
It may offer ``repeat_state(state, K) -> state``, the state of K consecutive rows per input: then every
``index`` given to ``reorder_state`` keeps each row among its input's K rows, so what depends on the source
alone (the Transformer's encoder output and cross-attention keys/values) is kept once per input instead
of K times and never reordered.

References: Sutskever et al. (2014) arXiv:1409.3215; Wu et al. (2016) arXiv:1609.08144; Paulus et al.
(2018) arXiv:1705.04304; Ott et al. (2019) fairseq, arXiv:1904.01038.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from seq2bert.decoding.greedy import force_token

LENGTH_PENALTY_FORMS = ("wu", "power")


@dataclass
class Hypothesis:
    """One complete hypothesis of one input."""

    # generated tokens, without [BOS]; they end with [EOS] unless cut at the maximum length
    tokens: list[int]
    score: float  # log_prob / lp(|tokens|): the length-penalised score used for ranking
    log_prob: float  # sum of the token log-probabilities


@dataclass
class BeamSearchOutput:
    """The n-best list of every input, best first."""

    hypotheses: list[list[Hypothesis]]  # per input, up to num_return_sequences hypotheses, best first
    num_return_sequences: int = 1

    def sequences(self, pad_token_id: int) -> torch.Tensor:
        """The hypotheses as one padded tensor (B · num_return_sequences, T), like transformers' ``generate``
        but without the decoder start token.

        Row b · n + i is the i-th best hypothesis of input b: its tokens ([EOS] included when it finished,
        [BOS] never), then pad_token_id up to T, the longest hypothesis. An input with fewer than n
        hypotheses (only possible when the model gives probability 0 to nearly everything, or the
        maximum length is 0) gets all-padding rows.
        """
        rows = []
        for hypotheses in self.hypotheses:
            for i in range(self.num_return_sequences):
                rows.append(hypotheses[i].tokens if i < len(hypotheses) else [])
        T = max((len(row) for row in rows), default=0)
        padded = [row + [pad_token_id] * (T - len(row)) for row in rows]
        return torch.tensor(padded, dtype=torch.long).view(len(rows), T)  # (B · n, T)


def _length_penalty(length: int, alpha: float, form: str) -> float:
    """lp(Y) for a hypothesis of ``length`` generated tokens ([EOS] included)."""
    if form == "wu":
        return ((5 + length) / 6) ** alpha  # Wu et al. (2016), Eq. 14: (5 + |Y|)^α / (5 + 1)^α
    return max(length, 1) ** alpha  # transformers: |Y|^α


def _topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(x, k)`` along dim 1 with a fixed tie rule: among equal values the lower index comes first.

    x: (B, N) → values, indices (B, k), values in descending order. ``torch.topk`` picks the right *set*
    unless the k-th and the (k+1)-th largest values are equal; it is then unspecified which of the tied
    elements it keeps. So one topk of k + 1 finds the set of every row, the rows with a tie across that
    boundary (rare with real scores) are redone by ``_topk_exact``, and each set is put in order.
    """
    N = x.size(1)
    if k >= N:
        return _topk_exact(x, k)
    values, indices = x.topk(k + 1, dim=1)  # (B, k + 1), descending
    boundary_tie = values[:, k - 1] == values[:, k]  # (B,) the k-th value also lies outside the set
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


def _repeated_ngram_mask(history: torch.Tensor, n: int, vocab_size: int) -> torch.Tensor:
    """Tokens that would complete an n-gram already present in the row.

    history: (N, t) generated tokens, t ≥ n → (N, V) bool, True where (last n−1 tokens, y) occurs in the row.
    """
    N, t = history.shape
    ngrams = history.unfold(1, n, 1)  # (N, t − n + 1, n) every n-gram of each row
    prefix = history[:, t - (n - 1) :]  # (N, n − 1) the n−1 tokens the next token would follow
    seen = ngrams[:, :, :-1].eq(prefix[:, None, :]).all(dim=-1)  # (N, t − n + 1) n-grams starting with prefix
    counts = torch.zeros(N, vocab_size, dtype=torch.long, device=history.device)  # (N, V)
    # count, for each token, the n-grams it would repeat
    counts.scatter_add_(1, ngrams[:, :, -1], seen.long())
    return counts > 0


def _add(finished: list[Hypothesis], hypothesis: Hypothesis, capacity: int) -> None:
    """Insert into a best-first list holding at most ``capacity`` hypotheses; equal scores keep arrival order."""
    if len(finished) == capacity and hypothesis.score <= finished[-1].score:
        return
    position = next((i for i, h in enumerate(finished) if h.score < hypothesis.score), len(finished))
    finished.insert(position, hypothesis)
    del finished[capacity:]


@torch.no_grad()
def beam_search(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    bos_token_id: int,
    eos_token_id: int,
    pad_token_id: int = 0,
    num_beams: int = 5,
    max_len_a: float = 0.0,
    max_len_b: int = 200,
    min_length: int = 0,
    length_penalty: float = 1.0,
    length_penalty_form: str = "wu",
    no_repeat_ngram_size: int = 0,
    num_return_sequences: int = 1,
    early_stopping: bool = False,
    force_eos: bool = False,
) -> BeamSearchOutput:
    """Decode a batch with beam search (see the module docstring for the algorithm and its semantics).

    ``force_eos``: the last token a hypothesis may take at its maximum length is [EOS] (transformers'
    ``forced_eos_token_id``, set in Marian and BART configs), so no hypothesis is cut without one.

    input_ids, attention_mask: (B, S) with right padding → the ``num_return_sequences`` best hypotheses of
    each input, best first.
    """
    if num_beams < 1:
        raise ValueError(f"num_beams must be at least 1, got {num_beams}")
    if not 1 <= num_return_sequences <= num_beams:
        raise ValueError(
            f"num_return_sequences must be in [1, num_beams={num_beams}], got {num_return_sequences}"
        )
    if length_penalty_form not in LENGTH_PENALTY_FORMS:
        raise ValueError(
            f"length_penalty_form must be one of {LENGTH_PENALTY_FORMS}, got {length_penalty_form!r}"
        )
    if min_length < 0 or no_repeat_ngram_size < 0:
        raise ValueError("min_length and no_repeat_ngram_size must be >= 0")

    B, K = input_ids.size(0), num_beams
    device = input_ids.device
    mask = attention_mask if attention_mask is not None else input_ids.ne(pad_token_id)  # (B, S)
    max_lengths = [math.floor(max_len_a * n + max_len_b) for n in mask.sum(dim=1).tolist()]

    def lp(length: int) -> float:
        return _length_penalty(length, length_penalty, length_penalty_form)

    # Encode once, then copy each input's state K times: row b·K + k of every tensor below is beam k of input b.
    # Encode once. The K beams of an input are identical until the first token, so step 0 runs on the B
    # inputs alone and the state is copied to B·K rows afterwards: row b·K + k is then beam k of input b.
    state = model.encode(input_ids, attention_mask)

    def expand(state):
        if hasattr(model, "repeat_state"):  # a model that shares one copy of the source among the K beams
            return model.repeat_state(state, K)
        return model.reorder_state(state, torch.arange(B, device=device).repeat_interleave(K))

    tokens = torch.full((B,), bos_token_id, device=device)  # (B·K,) after step 0: the last token of each beam
    history = torch.zeros(B * K, 0, dtype=torch.long, device=device)  # (B·K, t) tokens generated by each beam
    # The K copies are identical at t = 0: only beam 0 may be extended, or the first step would pick the same
    # candidate K times.
    beam_scores = torch.full((B, K), -math.inf, device=device)  # (B, K) log P(y_≤t | x) of each live beam
    beam_scores[:, 0] = 0.0
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done = [False] * B
    batch_offsets = (torch.arange(B, device=device) * K)[:, None]  # (B, 1) row of beam 0 of each input

    for t in itertools.count():  # t = number of tokens generated so far by every live beam
        # 1. Close the inputs that are done: at their maximum length the live beams finish as they are.
        live_scores = beam_scores.tolist()  # B lists of K floats, best first
        for b in range(B):
            if done[b]:
                continue
            if t >= max_lengths[b]:
                for k, s in enumerate(live_scores[b]):
                    if s > -math.inf:
                        _add(finished[b], Hypothesis(history[b * K + k].tolist(), s / lp(t), s), K)
                done[b] = True
            elif live_scores[b][0] == -math.inf:  # no live beam can produce a hypothesis any more
                done[b] = True
            elif len(finished[b]) == K:
                # transformers' heuristic: the best live beam, scored at the current length, does not
                # beat the worst finished hypothesis kept
                done[b] = early_stopping or live_scores[b][0] / lp(t) <= finished[b][-1].score
        if all(done):
            break

        # 2. Score every one-token extension of every beam.
        logits, state = model.decode_step(tokens, state)  # (B·K, V); (B, V) at t = 0
        log_probs = logits.float().log_softmax(dim=-1)  # (B·K, V) log p(y | x, y_≤t)
        V = log_probs.size(-1)
        if t == 0:  # beams 1 … K−1 are copies of beam 0 with score −∞
            state = expand(state)
            log_probs = log_probs.repeat_interleave(K, dim=0)  # (B·K, V)
        if t < min_length:
            log_probs[:, eos_token_id] = -math.inf
        if force_eos:
            last = torch.tensor([m == t + 1 for m in max_lengths], device=device).repeat_interleave(
                K
            )  # (B·K,)
            if bool(last.any()):
                log_probs[last] = force_token(log_probs[last], eos_token_id)
        if no_repeat_ngram_size and t >= no_repeat_ngram_size:
            log_probs = log_probs.masked_fill(
                _repeated_ngram_mask(history, no_repeat_ngram_size, V), -math.inf
            )
        scores = beam_scores.view(B * K, 1) + log_probs  # (B·K, V) log P(y_≤t, y | x)
        scores = scores.view(B, K * V)  # (B, K·V) all extensions of an input's beams, index = beam·V + token

        # 3. The 2K best candidates of each input, best first.
        cand_scores, cand_index = _topk(scores, 2 * K)  # (B, 2K)
        cand_tokens = cand_index % V  # (B, 2K)
        cand_rows = cand_index // V + batch_offsets  # (B, 2K) the row of the beam each candidate extends
        cand_is_eos = cand_tokens.eq(eos_token_id)  # (B, 2K)

        # 4. Candidates ending in [EOS] among the first K ranks are finished hypotheses of length t + 1.
        new_finished = cand_is_eos[:, :K] & cand_scores[:, :K].isfinite()  # (B, K)
        for b, rank in new_finished.nonzero().tolist():  # input by input, best rank first
            if not done[b]:
                s = cand_scores[b, rank].item()
                row = int(cand_rows[b, rank])
                _add(finished[b], Hypothesis(history[row].tolist() + [eos_token_id], s / lp(t + 1), s), K)

        # 5. The K best candidates not ending in [EOS] become the beams; the state and history follow them.
        # a stable sort on "ends in [EOS]" lists the other candidates first, still in rank order
        live = cand_is_eos.to(torch.uint8).argsort(dim=1, stable=True)[:, :K]  # (B, K) their ranks
        beam_scores = cand_scores.gather(1, live)  # (B, K)
        rows = cand_rows.gather(1, live).view(B * K)  # (B·K,) the beam each new beam extends
        tokens = cand_tokens.gather(1, live).view(B * K)  # (B·K,)
        done_rows = torch.tensor(done, device=device).repeat_interleave(K)  # (B·K,)
        tokens = tokens.masked_fill(done_rows, pad_token_id)  # done inputs keep their rows, fed [PAD]
        history = torch.cat([history[rows], tokens[:, None]], dim=1)  # (B·K, t + 1)
        state = model.reorder_state(state, rows)

    return BeamSearchOutput([f[:num_return_sequences] for f in finished], num_return_sequences)
