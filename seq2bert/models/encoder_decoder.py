"""What the encoder-decoders of seq2bert share: one teacher-forced ``forward``, the incremental-decoder protocol
the searches drive, and ``generate``.

Each model — Seq2Seq, ChoEncoderDecoder, RNNSearch, LuongNMT, Transformer — implements what its paper
describes, and nothing else:

    encode(input_ids, attention_mask, *, output_attentions) → state          the encoder, and the decoder's
                                                                             initial state
    decode(decoder_input_ids, state, *, output_attentions) → DecoderOutput   T decoder steps: all target
                                                                             positions at once (teacher
                                                                             forcing) or one (decoding)
    reorder(state, index) → state                                            rows ``index`` of the state

and this class turns them into

    forward              teacher forcing: logits for every target position, the loss, the attention weights;
                         or, with ``scheduled_sampling``, the decoder fed its own predictions now and then
                         (Bengio et al. 2015), step by step through ``start`` and ``step``
    start, step, reorder the protocol of seq2bert/decoding/protocol.py (``start`` is ``encode``; ``step`` is
                         ``decode`` of one token); a model may add ``repeat`` (the Transformer does)
    generate             ids as transformers' ``generate`` returns them, through seq2bert.decoding.generate
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from seq2bert.decoding import generation
from seq2bert.decoding.config import GenerationConfig
from seq2bert.decoding.config import settings as config_settings
from seq2bert.decoding.protocol import StepOutput
from seq2bert.decoding.sampling import sample
from seq2bert.models.outputs import DecoderOutput, Seq2SeqLMOutput
from seq2bert.models.pretrained import SavePretrained
from seq2bert.models.weight_only import int8_twin, parameter_dtype, quantized_bits
from seq2bert.objectives.cross_entropy import linear_cross_entropy, sequence_cross_entropy


@dataclass(frozen=True)
class ScheduledSampling:
    """How one training batch feeds the decoder (Bengio et al. 2015, Sect. 2.4): each input token after [BOS]
    is the true previous token with probability ``epsilon`` (ε_i of training/scheduled_sampling.py), else the
    model's own token for that position — ``sample``d from its distribution (the paper) or its ``argmax``.
    Coins and samples come from ``generator`` (None: torch's global generator, which checkpoints restore)."""

    epsilon: float
    sampling: Literal["sample", "argmax"] = "sample"
    generator: torch.Generator | None = None


@dataclass
class FedDecoder:
    """What the decoder computed when fed step by step: logits (B, T, V) and the tokens it was fed (B, T)."""

    logits: torch.Tensor
    decoder_input_ids: torch.Tensor


class EncoderDecoder(SavePretrained, nn.Module):
    """The shared half of an encoder-decoder; a subclass implements ``encode``, ``decode`` and ``reorder``.

    ``config``: the model's config dataclass, validated here; it gives the special ids (``bos_token_id`` is
    the decoder start token) and, when it has one, ``forced_eos_token_id``."""

    def __init__(self, config: Any):
        super().__init__()
        config.validate()
        config.check_vocab()
        self.config = config

    # --- what each model implements
    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        output_attentions: bool = False,
    ) -> Any:
        """input_ids, attention_mask (B, S), right-padded → the decoder's initial state."""
        raise NotImplementedError

    def decode(
        self, decoder_input_ids: torch.Tensor, state: Any, *, output_attentions: bool = False
    ) -> DecoderOutput:
        """decoder_input_ids (B, T) → logits (B, T, V), the state after the T steps and, when asked, the
        attention weights."""
        raise NotImplementedError

    def reorder(self, state: Any, index: torch.Tensor) -> Any:
        """Rows ``index`` (N,) of the state: (B, …) → (N, …)."""
        raise NotImplementedError

    def output_layer(self) -> nn.Linear | None:
        """The last layer, where it is one Linear over ``decoder_states``: a loss-only forward then fuses it
        with the cross-entropy (objectives/cross_entropy.py, ``linear_cross_entropy``). None: the logits are
        built first (the recurrent models)."""
        return None

    def alignment_loss(self, out: DecoderOutput, labels: torch.Tensor) -> torch.Tensor:
        """The loss term of alignments the decoder sampled (``out.alignment_log_probs``): a model with hard
        attention defines it (models/attention/bahdanau.py)."""
        raise NotImplementedError(f"{type(self).__name__} samples no alignments")

    def decoder_states(self, decoder_input_ids: torch.Tensor, state: Any) -> torch.Tensor:
        """decoder_input_ids (B, T) → the decoder's final states (B, T, d), the input of ``output_layer``."""
        raise NotImplementedError

    # --- teacher forcing
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        label_smoothing: float = 0.0,
        output_attentions: bool = False,
        scheduled_sampling: ScheduledSampling | None = None,
        return_logits: bool = True,
    ) -> Seq2SeqLMOutput:
        """Teacher forcing: logits (B, T, V) for decoder inputs [BOS] y_1 … y_{T−1}; ``loss``, the mean token
        cross-entropy (with label smoothing ε, objectives/cross_entropy.py), when ``labels`` (B, T) are given;
        with ``output_attentions``, the attention weights the model has (none for Seq2Seq and Cho).

        With ``scheduled_sampling``, the inputs after [BOS] are mixed with the model's own tokens
        (``feed_own_predictions``); the loss is still against ``labels``.

        ``return_logits=False`` with ``labels``: the loss alone (``logits`` None), where the model's last layer
        is one Linear fused with the loss — the same loss and gradients without the (B, T, V) tensors around
        the logits (what the trainer asks for)."""
        if decoder_input_ids is None:
            raise ValueError(f"{type(self).__name__}.forward needs decoder_input_ids ([BOS] y_1 … y_{{T-1}})")
        loss_only = (
            labels is not None and not (return_logits or output_attentions) and scheduled_sampling is None
        )
        layer = self.output_layer() if loss_only else None
        if layer is not None:
            states = self.decoder_states(decoder_input_ids, self.encode(input_ids, attention_mask))
            loss = linear_cross_entropy(
                states, layer.weight, labels, bias=layer.bias, label_smoothing=label_smoothing
            )
            return Seq2SeqLMOutput(logits=None, loss=loss)
        if scheduled_sampling is not None:
            if output_attentions:
                raise ValueError("scheduled sampling feeds the decoder step by step: no attention weights")
            fed = self.feed_own_predictions(input_ids, attention_mask, decoder_input_ids, scheduled_sampling)
            out = DecoderOutput(fed.logits, None)
        else:
            state = self.encode(input_ids, attention_mask, output_attentions=output_attentions)
            out = self.decode(decoder_input_ids, state, output_attentions=output_attentions)
        loss = None
        if labels is not None:
            loss = sequence_cross_entropy(out.logits, labels, label_smoothing=label_smoothing)
            if out.alignment_log_probs is not None:  # sampled alignments: their REINFORCE term
                loss = loss + self.alignment_loss(out, labels)
        return Seq2SeqLMOutput(
            logits=out.logits,
            loss=loss,
            attentions=out.attentions,
            encoder_attentions=out.encoder_attentions,
            decoder_attentions=out.decoder_attentions,
            cross_attentions=out.cross_attentions,
        )

    # --- scheduled sampling
    def feed_own_predictions(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        decoder_input_ids: torch.Tensor,
        how: ScheduledSampling,
    ) -> FedDecoder:
        """Bengio et al. (2015), Sect. 2.4: the decoder run one step at a time (``start``, ``step``); at each
        step t > 1 of each row it is fed, with probability 1 − ε, the model's own ŷ_{t−1} (from its output at
        step t − 1) instead of the true y_{t−1}. decoder_input_ids (B, T) = [BOS] y_1 … y_{T−1} → logits
        (B, T, V) and the tokens fed (B, T).

        Per step, the model's token is drawn first, then the coins. The fed token is a discrete choice:
        no gradient flows through it (as in the paper). Padding stays padding."""
        state = self.start(input_ids, attention_mask)
        true = decoder_input_ids  # (B, T); column 0 is [BOS]
        real = true.ne(self.config.pad_token_id)  # (B, T)
        fed: list[torch.Tensor] = []  # the fed columns, (B,) each
        logits: list[torch.Tensor] = []
        for t in range(true.size(1)):
            tokens = true[:, t]
            if t > 0:
                # step t − 1's distribution over ŷ_{t−1}: (B, V)
                scores = logits[-1].detach().float().log_softmax(dim=-1)
                if how.sampling == "argmax":
                    own = scores.argmax(dim=-1)  # (B,)
                else:
                    own = sample(scores, 1.0, 0, 1.0, how.generator)  # (B,) drawn from p itself
                coin = torch.rand(true.size(0), generator=how.generator, device=true.device)  # (B,)
                tokens = torch.where((coin >= how.epsilon) & real[:, t], own, tokens)  # y_{t−1} w.p. ε
            step_logits, state = self.step(tokens, state)  # (B, V)
            fed.append(tokens)
            logits.append(step_logits)
        return FedDecoder(torch.stack(logits, dim=1), torch.stack(fed, dim=1))  # (B, T, V), (B, T)

    # --- the incremental-decoder protocol (seq2bert/decoding/protocol.py)
    def start(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> Any:
        """Encode the source: the state before the decoder start token is fed."""
        return self.encode(input_ids, attention_mask)

    def step(self, tokens: torch.Tensor, state: Any) -> StepOutput:
        """One decoder step: tokens (B,) → next-token logits (B, V) and the state after it, with the decoder's
        last hidden state (B, d) when the model gives it."""
        out = self.decode(tokens[:, None], state)
        hidden = None if out.hidden_states is None else out.hidden_states[:, -1]
        return StepOutput(out.logits[:, -1], out.state, hidden)

    def step_many(self, tokens: torch.Tensor, state: Any) -> StepOutput:
        """tokens (B, k) fed at once → logits (B, k, V) and the state after them (speculative decoding)."""
        out = self.decode(tokens, state)
        return StepOutput(out.logits, out.state, out.hidden_states)

    # --- generation
    def generation_config(self, **settings: Any) -> GenerationConfig:
        """A GenerationConfig with this model's special ids (and forced [EOS], when its config sets one) and
        ``settings`` (GenerationConfig's fields)."""
        c = self.config
        special = dict(
            eos_token_id=c.eos_token_id,
            pad_token_id=c.pad_token_id,
            decoder_start_token_id=c.bos_token_id,
            # only the Transformer's config has these (Marian checkpoints set them)
            forced_eos_token_id=getattr(c, "forced_eos_token_id", None),
            bad_words_ids=tuple(tuple(w) for w in getattr(c, "bad_words_ids", ())),
        )
        return GenerationConfig(**{**special, **settings})

    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        int8: bool = False,
        int4: bool = False,
        draft: Any = None,
        **settings: Any,
    ) -> torch.Tensor:
        """Token ids (B · R, 1 + L) as transformers' ``generate`` returns them for an encoder-decoder: each row
        [decoder start] y_1 … [EOS] then padding, L the longest hypothesis, R = ``num_return_sequences``.

        ``settings``: GenerationConfig's (seq2bert/decoding/config.py), with ``max_new_tokens=64`` and
        transformers' ``top_k=50`` by default: greedy for one beam, else beam search with transformers'
        length penalty (score / |Y|^length_penalty), or another strategy (seq2bert/decoding/strategies.py);
        at most ``max_new_tokens`` tokens, the last of them the config's ``forced_eos_token_id`` when it has
        one (Marian's). ``int8``: decoded by the model's int8 twin (models/weight_only.py: int8
        Linear weights, their inputs int8 where the CPU has VNNI/AMX, activations between them in the model's dtype), made once and kept until the weights change;
        ``int4``: by its int4 twin (weights in groups of 32: faster for one sentence, slower for a batch).
        ``draft``: a smaller model of the same vocabulary (a Transformer) for speculative decoding
        (seq2bert/decoding/speculative.py): greedy decoding's tokens or sampling's distribution.
        ``seq2bert.decoding.generate`` with ``self.generation_config(…)`` gives the hypotheses and their
        scores as well."""
        if bits := quantized_bits(int8, int4):
            twin = int8_twin(self, parameter_dtype(self), bits)
            return twin.generate(input_ids, attention_mask, draft=draft, **settings)
        config = self.generation_config(**config_settings(settings, {"max_new_tokens": 64, "top_k": 50}))
        return generation.generate(self, input_ids, attention_mask, config, draft=draft).sequences
