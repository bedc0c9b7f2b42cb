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

    forward              teacher forcing: logits for every target position, the loss, the attention weights
    start, step, reorder the protocol of seq2bert/decoding/protocol.py (``start`` is ``encode``; ``step`` is
                         ``decode`` of one token); a model may add ``repeat`` (the Transformer does)
    generate             ids as transformers' ``generate`` returns them, through seq2bert.decoding.generate
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from seq2bert.decoding import generation
from seq2bert.decoding.config import GenerationConfig
from seq2bert.models.outputs import DecoderOutput, Seq2SeqLMOutput
from seq2bert.objectives.cross_entropy import sequence_cross_entropy


class EncoderDecoder(nn.Module):
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

    # --- teacher forcing
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        label_smoothing: float = 0.0,
        output_attentions: bool = False,
    ) -> Seq2SeqLMOutput:
        """Teacher forcing: logits (B, T, V) for decoder inputs [BOS] y_1 … y_{T−1}; ``loss``, the mean token
        cross-entropy (with label smoothing ε, objectives/cross_entropy.py), when ``labels`` (B, T) are given;
        with ``output_attentions``, the attention weights the model has (none for Seq2Seq and Cho)."""
        if decoder_input_ids is None:
            raise ValueError(f"{type(self).__name__}.forward needs decoder_input_ids ([BOS] y_1 … y_{{T-1}})")
        state = self.encode(input_ids, attention_mask, output_attentions=output_attentions)
        out = self.decode(decoder_input_ids, state, output_attentions=output_attentions)
        loss = None
        if labels is not None:
            loss = sequence_cross_entropy(out.logits, labels, label_smoothing=label_smoothing)
        return Seq2SeqLMOutput(
            logits=out.logits,
            loss=loss,
            attentions=out.attentions,
            encoder_attentions=out.encoder_attentions,
            decoder_attentions=out.decoder_attentions,
            cross_attentions=out.cross_attentions,
        )

    # --- the incremental-decoder protocol (seq2bert/decoding/protocol.py)
    def start(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> Any:
        """Encode the source: the state before the decoder start token is fed."""
        return self.encode(input_ids, attention_mask)

    def step(self, tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """One decoder step: tokens (B,) → next-token logits (B, V) and the state after it."""
        out = self.decode(tokens[:, None], state)
        return out.logits[:, -1], out.state

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
        num_beams: int = 1,
        max_new_tokens: int = 64,
        length_penalty: float = 1.0,
        early_stopping: bool = False,
        num_return_sequences: int = 1,
        min_new_tokens: int = 0,
        no_repeat_ngram_size: int = 0,
    ) -> torch.Tensor:
        """Token ids (B · R, 1 + L) as transformers' ``generate`` returns them for an encoder-decoder: each row
        [decoder start] y_1 … [EOS] then padding, L the longest hypothesis, R = ``num_return_sequences``.

        Greedy for one beam, else beam search; transformers' length penalty (score / |Y|^length_penalty); at
        most ``max_new_tokens`` tokens, the last of them the config's ``forced_eos_token_id`` when it has one
        (Marian's). ``seq2bert.decoding.generate`` with ``self.generation_config(…)`` gives the hypotheses and
        their scores as well."""
        config = self.generation_config(
            num_beams=num_beams,
            max_new_tokens=max_new_tokens,
            length_penalty=length_penalty,
            early_stopping=early_stopping,
            num_return_sequences=num_return_sequences,
            min_new_tokens=min_new_tokens,
            no_repeat_ngram_size=no_repeat_ngram_size,
        )
        return generation.generate(self, input_ids, attention_mask, config).sequences
