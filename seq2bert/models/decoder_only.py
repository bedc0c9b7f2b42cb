"""What the decoder-only Transformer language models of seq2bert share (GPT, GPT-2): the incremental-decoder
protocol the searches drive (seq2bert/decoding/protocol.py) and ``generate``, as transformers' generate
decodes them.

A model that mixes in ``DecoderOnlyLM`` has

    transformer   a causal stack called as transformer(input_ids, attention_mask, position_ids=…,
                  past_key_values=caches) → .last_hidden_state, and with ``new_caches()`` (seq2bert/nn/stack.py)
    lm_head       hidden states (…, d_model) → next-token logits (…, V)
    config        with eos_token_id and pad_token_id (None allowed)

and gets

    start(prompt, mask)      the prompt (but its last column, protocol.py) runs once through the stack, its keys
                             and values kept in one LayerCache per layer
    step(tokens, state)      one new token per row at its next position: its logits and the grown cache
    step_many, rewind        k tokens per row at once, and forgetting the last n (speculative decoding)
    reorder(state, index)    rows ``index`` of the caches (in place), the mask and the positions (beam search)
    generate(…)              the prompt followed by the new tokens, as transformers' generate returns them

Positions, as transformers' generate numbers them (generation/utils.py, _prepare_position_ids_for_generation):
a left-padded row's real tokens sit at 0, 1, … — position = cumsum(attention_mask) − 1, padding at 0 — and each
new token at the next one; padding is masked as a key throughout. The forward of a model instead puts column t
at position t whatever the padding (transformers' forward does too): the same logits for unpadded rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from seq2bert.decoding import generation
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.config import settings as config_settings
from seq2bert.decoding.protocol import StepOutput
from seq2bert.decoding.stopping import StopStrings, Streamer
from seq2bert.models.weight_only import int8_twin, parameter_dtype, quantized_bits
from seq2bert.nn.layers import LayerCache

# model.generate's defaults where GenerationConfig has none or another: transformers' (max_length 20 tokens,
# top_k 50)
LM_DEFAULTS = {"max_new_tokens": 20, "top_k": 50}


@dataclass
class DecoderState:
    """What ``step`` needs: the keys and values so far (one LayerCache per layer, (N, h, T_k, d_k) each), the
    attention mask over them (N, T_k), 1 on real tokens — None when no prompt is padded: every key is real,
    and a step then builds and applies no mask —, and the position of the next token of each row (N,)."""

    caches: list[LayerCache]
    attention_mask: torch.Tensor | None
    positions: torch.Tensor
    # the prompt's last hidden states (N, P, d) as ``start`` computed them (contrastive search reads them
    # right after ``start``); ``reorder`` drops them
    hidden_states: torch.Tensor | None = None


def _grown(mask: torch.Tensor | None, k: int) -> torch.Tensor | None:
    """The attention mask (N, T_k) with k real tokens added (None: no padding, none to add)."""
    return None if mask is None else torch.cat([mask, mask.new_ones(mask.size(0), k)], dim=1)


def generation_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T) 0/1 → (B, T): each row's real tokens numbered 0, 1, …; padding at 0 (transformers' generate)."""
    mask = attention_mask.long()
    return (mask.cumsum(dim=-1) - 1).masked_fill(mask == 0, 0)


def inferred_attention_mask(
    input_ids: torch.Tensor, pad_token_id: int | None, eos_token_id: int | None
) -> torch.Tensor:
    """transformers' mask when ``generate`` is given none: the tokens ≠ [PAD] when [PAD] occurs and is not also
    [EOS] (GPT-2 pads with <|endoftext|>: then nothing can be told apart and every token is real)."""
    if pad_token_id is None or pad_token_id == eos_token_id or not bool(input_ids.eq(pad_token_id).any()):
        return torch.ones_like(input_ids)
    return input_ids.ne(pad_token_id).long()


class DecoderOnlyLM:
    """The protocol and ``generate`` for a decoder-only language model (see the module docstring)."""

    # --- the incremental-decoder protocol (seq2bert/decoding/protocol.py)
    def start(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> DecoderState:
        """The state after the left-padded prompts input_ids, attention_mask (B, P) (P may be 0)."""
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.long()
        caches = self.transformer.new_caches()
        hidden = None
        if input_ids.size(1):
            positions = generation_positions(mask)  # (B, P)
            out = self.transformer(input_ids, mask, position_ids=positions, past_key_values=caches)
            hidden = out.last_hidden_state  # (B, P, d)
        positions = mask.sum(dim=-1)  # the next token follows the real ones
        return DecoderState(caches, None if bool(mask.all()) else mask, positions, hidden)

    def reserve(self, state: DecoderState, n: int) -> DecoderState:
        """Room for ``n`` more tokens in every cache, made once (a static cache: KVCache.reserve)."""
        for cache in state.caches:
            cache.self_attn.reserve(n)
        return state

    def context_hidden_states(self, state: DecoderState) -> torch.Tensor | None:
        """The last hidden states (N, P, d) of the prompt ``start`` read (None: an empty one)."""
        return state.hidden_states

    def step(self, tokens: torch.Tensor, state: DecoderState) -> StepOutput:
        """tokens (N,) → next-token logits (N, V) and the state after them (the caches grow in place), with
        the last hidden state (N, d) of the tokens."""
        mask = _grown(state.attention_mask, 1)
        out = self.transformer(
            tokens[:, None], mask, position_ids=state.positions[:, None], past_key_values=state.caches
        )
        hidden = out.last_hidden_state[:, -1]  # (N, d)
        logits = self.lm_head(hidden)  # (N, V)
        return StepOutput(logits, DecoderState(state.caches, mask, state.positions + 1), hidden)

    def step_many(self, tokens: torch.Tensor, state: DecoderState) -> StepOutput:
        """tokens (N, k) fed at once at the next k positions → logits (N, k, V) and the state after them, with
        the last hidden states (N, k, d) (speculative decoding: decoding/speculative.py)."""
        k = tokens.size(1)
        mask = _grown(state.attention_mask, k)
        positions = state.positions[:, None] + torch.arange(k, device=tokens.device)  # (N, k)
        out = self.transformer(tokens, mask, position_ids=positions, past_key_values=state.caches)
        hidden = out.last_hidden_state  # (N, k, d)
        return StepOutput(self.lm_head(hidden), DecoderState(state.caches, mask, state.positions + k), hidden)

    def rewind(self, state: DecoderState, n: int) -> DecoderState:
        """The state before the last ``n`` tokens fed (the caches shrink in place)."""
        if n == 0:
            return state
        mask = state.attention_mask
        mask = None if mask is None else mask[:, : mask.size(1) - n]
        return DecoderState([cache.rewind(n) for cache in state.caches], mask, state.positions - n)

    def reorder(self, state: DecoderState, index: torch.Tensor) -> DecoderState:
        """Rows ``index`` (N,) of the state; the caches are reordered in place (KVCache.reorder)."""
        return DecoderState(
            [cache.reorder(index) for cache in state.caches],
            None if state.attention_mask is None else state.attention_mask.index_select(0, index),
            state.positions.index_select(0, index),
        )

    # --- generation
    def generation_config(self, **settings: Any) -> GenerationConfig:
        """A GenerationConfig with this model's [EOS] and [PAD] (no [PAD]: [EOS], as transformers takes it; neither:
        0, which then only pads the n-best lists of inputs with fewer hypotheses) and ``settings``."""
        c = self.config
        pad = c.pad_token_id if c.pad_token_id is not None else c.eos_token_id
        special = dict(eos_token_id=c.eos_token_id, pad_token_id=0 if pad is None else pad)
        return GenerationConfig(**{**special, **settings})

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        stop_strings: str | list[str] | None = None,
        tokenizer: Any = None,
        streamer: Streamer | None = None,
        int8: bool = False,
        int4: bool = False,
        draft: Any = None,
        **settings: Any,
    ) -> torch.Tensor:
        """The left-padded prompts input_ids (B, P) followed by the new tokens: (B · R, P + L), R =
        ``num_return_sequences``, rows that end early padded with [PAD], as transformers' generate returns them.

        ``settings``: GenerationConfig's (seq2bert/decoding/config.py, where each is explained), with
        transformers' defaults ``max_new_tokens=20`` and ``top_k=50`` (read when sampling or in contrastive
        search). Greedy for one beam, beam search otherwise (transformers' length penalty and stopping), or
        sampling (``do_sample``: temperature, then top-k, then nucleus ``top_p``; ``seed`` makes the draws
        repeatable), or another strategy of seq2bert/decoding/strategies.py. ``stop_strings``: a row also
        ends when a new token completes one of them in its text (needs ``tokenizer``, as transformers' does;
        seq2bert/decoding/stopping.py). ``streamer``: called after every step with the tokens (B,) just
        chosen — greedy or sampling only. Without ``attention_mask`` the mask is inferred as transformers
        infers it (``inferred_attention_mask``). ``int8``: decoded by the model's int8 twin
        (models/weight_only.py: int8 Linear weights and LM head, their inputs int8 where the CPU has VNNI/AMX, activations between them in the model's dtype), made once
        and kept until the weights change; ``int4``: by its int4 twin (weights in groups of 32: faster for one
        prompt, slower for a batch; benchmarks/RESULTS.md). ``draft``: a smaller language model of the same vocabulary for
        speculative decoding (seq2bert/decoding/speculative.py): greedy decoding's tokens or sampling's
        distribution, in fewer passes of this model. Invalid settings raise ConfigError, a ValueError.
        ``seq2bert.decoding.generate`` with ``generation_config(…)`` gives the hypotheses and their scores
        too."""
        if bits := quantized_bits(int8, int4):
            twin = int8_twin(self, parameter_dtype(self), bits)
            return twin.generate(
                input_ids,
                attention_mask,
                stop_strings=stop_strings,
                tokenizer=tokenizer,
                streamer=streamer,
                draft=draft,
                **settings,
            )
        stopping = None if stop_strings is None else StopStrings(tokenizer, stop_strings)
        config = self.generation_config(**config_settings(settings, LM_DEFAULTS))
        if attention_mask is None:
            c = self.config
            pad = c.pad_token_id if c.pad_token_id is not None else c.eos_token_id  # transformers' [PAD]
            attention_mask = inferred_attention_mask(input_ids, pad, c.eos_token_id)
        modes = [(m, m.training) for m in (self, draft) if isinstance(m, torch.nn.Module)]
        for m, _ in modes:
            m.eval()
        try:
            out = generation.generate(
                self, input_ids, attention_mask, config, stopping=stopping, streamer=streamer, draft=draft
            )
            return out.sequences
        finally:
            for m, training in modes:
                m.train(training)
