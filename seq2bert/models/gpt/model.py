"""GPT (Radford, Narasimhan, Salimans & Sutskever 2018, "Improving Language Understanding by Generative
Pre-Training") and GPT-2 (Radford, Wu, Child, Luan, Amodei & Sutskever 2019, "Language Models are Unsupervised
Multitask Learners"): the Transformer's decoder without its encoder-decoder attention — a causal stack
(seq2bert/nn/stack.py) of TransformerLayers (seq2bert/nn/layers.py) over token and learned position
embeddings, read left to right.

GPT-1, Sect. 3.1, Eq. 2 (a "multi-layer Transformer decoder", Liu et al. 2018):

    h_0 = U W_e + W_p                      token embeddings W_e, learned position embeddings W_p
    h_l = transformer_block(h_{l−1})       l = 1 … n; post-norm as the 2017 Transformer: LayerNorm(x + Sublayer(x)),
                                           masked self-attention, a 4·d_model feed-forward with GELU (Sect. 4.1)
    P(u) = softmax(h_n W_eᵀ)               the output layer is the token embedding matrix (the LM heads, heads.py)

GPT-2, Sect. 2.3, "a few modifications" to GPT-1:

    "Layer normalization was moved to the input of each sub-block, similar to a pre-activation residual network
    and an additional layer normalization was added after the final self-attention block."
        → pre-norm layers, x ← x + Sublayer(LayerNorm(x)), and the stack's final norm (``ln_f``)
    "A modified initialization which accounts for the accumulation on the residual path with model depth is
    used. We scale the weights of residual layers at initialization by a factor of 1/√N where N is the number
    of residual layers."
        → the projections that write into the residual stream (W^O and the feed-forward's second matrix,
          transformers' c_proj) drawn from N(0, 0.02/√(2·n_layer)): two residual layers per block
    "The vocabulary is expanded to 50,257. We also increase the context size from 512 to 1024 tokens."

Weights are named so that Hugging Face checkpoints map one to one (convert.py); outputs carry transformers'
field names. Conventions of transformers' GPT and GPT-2, followed here (marked where they happen):
- positions: by default past … past + T − 1 whatever the padding (transformers' forward); ``generate`` numbers
  the real tokens of each left-padded row from 0 (seq2bert/models/decoder_only.py), as transformers' generate;
- ``token_type_ids`` are looked up in the token embedding W_e and added (GPT-1 marks segments with delimiter
  tokens instead, Sect. 3.3; the option is transformers');
- GPT-1's "gelu" is the tanh approximation (config.AFN); its released code hid later keys with −1e4 where we
  use −∞: the same weights in fp32;
- the cache (``past_key_values``: one LayerCache per layer) is returned when asked for (``use_cache``) or given;
  transformers' GPT-2 returns one by default, its GPT-1 has none.
Departure: a left pad of a causal model sees no key; its output is computed from a zero attention output (as
torch's fused kernel gives it) where transformers attends uniformly. Outputs at real tokens are equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.models.gpt.config import AFN, GPT2Config, GPTConfig, OpenAIGPTConfig
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.feed_forward import PositionwiseFeedForward
from seq2bert.nn.init import normal_init
from seq2bert.nn.layers import LayerCache, TransformerLayer
from seq2bert.nn.multihead import MultiHeadAttention
from seq2bert.nn.stack import TransformerStack


@dataclass
class GPTModelOutput:
    """transformers' BaseModelOutputWithPast: (B, T, d_model); the cache (one LayerCache per layer, holding the
    keys and values of every position so far) when asked for or given; per-layer tuples when asked."""

    last_hidden_state: torch.Tensor
    past_key_values: list[LayerCache] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class GPTEmbeddings(nn.Module):
    """Eq. 2: h_0 = U W_e + W_p, then dropout (``embd_pdrop``)."""

    def __init__(self, vocab_size: int, n_positions: int, d_model: int, *, dropout: float = 0.0):
        super().__init__()
        self.token = nn.Embedding(vocab_size, d_model)  # W_e
        self.position = nn.Embedding(n_positions, d_model)  # W_p
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        offset: int = 0,
        position_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids (B, T) → (B, T, d_model), at ``position_ids`` (B, T) or (1, T) (None: offset … offset + T − 1)."""
        T = input_ids.size(1)
        if position_ids is None:
            if offset + T > self.position.num_embeddings:
                raise ValueError(
                    f"{offset + T} positions: the model's context is {self.position.num_embeddings}"
                )
            position_ids = torch.arange(offset, offset + T, device=input_ids.device)[None]  # (1, T)
        x = self.token(input_ids) + self.position(position_ids)  # Eq. 2: U W_e + W_p
        if token_type_ids is not None:  # transformers: segment ids are tokens of W_e
            x = x + self.token(token_type_ids)
        return self.dropout(x)


def gpt_layer(
    c: GPTConfig, *, norm_first: bool, activation: str, scale: float | None = None
) -> TransformerLayer:
    """One block: masked multi-head self-attention (n_head heads, dropout ``attn_pdrop`` on its weights) and a
    d_ff feed-forward, each with dropout ``resid_pdrop`` before its residual sum; ``norm_first`` places the
    LayerNorms (GPT-1 after, GPT-2 before each sub-layer). ``scale``: the factor of QKᵀ (None: 1/√d_k)."""
    self_attn = MultiHeadAttention(c.n_embd, c.n_head, dropout=c.attn_pdrop, scale=scale)
    ffn = PositionwiseFeedForward(c.n_embd, c.d_ff, activation=activation)
    return TransformerLayer(
        c.n_embd, self_attn, ffn, dropout=c.resid_pdrop, norm_first=norm_first, eps=c.layer_norm_epsilon
    )


class GPTStack(SavePretrained, TransformerStack):
    """The forward both models share: a causal stack over GPTEmbeddings, with transformers' arguments.

    ``past_key_values``: the cache an earlier call returned (a list of LayerCache, one per layer); the new
    ``input_ids`` follow its positions, ``attention_mask`` (B, past + T) covers the cached keys too, and the
    cache grows in place (as transformers' DynamicCache does). ``use_cache``: start a cache and return it."""

    config: GPTConfig

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        past_key_values: list[LayerCache] | None = None,
        use_cache: bool = False,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
    ) -> GPTModelOutput:
        """input_ids, attention_mask (1 on real tokens), position_ids, token_type_ids: (B, T) → GPTModelOutput."""
        caches = (
            past_key_values if past_key_values is not None else (self.new_caches() if use_cache else None)
        )
        past = caches[0].self_attn.length if caches else 0
        out = super().forward(
            input_ids,
            attention_mask,
            caches=caches,
            offset=past,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            position_ids=position_ids,
            token_type_ids=token_type_ids,
        )
        return GPTModelOutput(out.last_hidden_state, caches, out.hidden_states, out.attentions)


def embeddings(c: GPTConfig) -> GPTEmbeddings:
    return GPTEmbeddings(c.vocab_size, c.n_positions, c.n_embd, dropout=c.embd_pdrop)


class OpenAIGPTModel(GPTStack):
    """GPT-1 (Sect. 3.1): n post-norm blocks with GELU, no final LayerNorm."""

    def __init__(self, config: OpenAIGPTConfig):
        config.validate()
        c = config
        layers = [gpt_layer(c, norm_first=False, activation=AFN[c.afn]) for _ in range(c.n_layer)]
        super().__init__(embeddings(c), layers, causal=True)
        self.config = c
        init_gpt_weights(self, c)


def attention_scale(c: GPT2Config, layer: int) -> float:
    """The factor of QKᵀ in layer ``layer`` (0-based): 1/√d_k, or 1 without ``scale_attn_weights``; further
    1/(layer + 1) with ``scale_attn_by_inverse_layer_idx``."""
    scale = (c.n_embd // c.n_head) ** -0.5 if c.scale_attn_weights else 1.0
    return scale / (layer + 1) if c.scale_attn_by_inverse_layer_idx else scale


class GPT2Model(GPTStack):
    """GPT-2 (Sect. 2.3): n pre-norm blocks and a final LayerNorm, residual projections initialised smaller."""

    def __init__(self, config: GPT2Config):
        config.validate()
        c = config
        layers = [
            gpt_layer(c, norm_first=True, activation=c.activation_function, scale=attention_scale(c, i))
            for i in range(c.n_layer)
        ]
        final_norm = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)  # ln_f
        super().__init__(embeddings(c), layers, final_norm=final_norm, causal=True)
        self.config = c
        init_gpt_weights(self, c)
        residual_scaled_init(self, c)


def init_gpt_weights(module: nn.Module, c: GPTConfig) -> None:
    """N(0, initializer_range) weights (GPT-1 Sect. 4.1: "a simple weight initialization of N(0, 0.02)"), zero
    biases, LayerNorms at (1, 0): every Linear, Embedding and LayerNorm inside ``module``."""
    normal_init(module, c.initializer_range)


def residual_scaled_init(stack: TransformerStack, c: GPTConfig) -> None:
    """GPT-2 Sect. 2.3: the weights that write into the residual stream — W^O of the attention and W_2 of the
    feed-forward (c_proj in the released code) — from N(0, initializer_range / √(2·n_layer))."""
    std = c.initializer_range / math.sqrt(2 * c.n_layer)
    for layer in stack.layers:
        nn.init.normal_(layer.self_attn.out.weight, 0.0, std)
        nn.init.normal_(layer.feed_forward.w_2.weight, 0.0, std)
