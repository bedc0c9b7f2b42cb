"""Hugging Face MarianMT checkpoints to and from our Transformer: one declarative key map, both directions.

A MarianMT checkpoint (``MarianMTModel``) is a post-norm Transformer with split sinusoids, √d_model-scaled
embeddings shared by encoder, decoder and the output layer, and a ``final_logits_bias``. Its weights map to
ours one to one, except that our self-attention stores [W^Q; W^K; W^V] as one fused matrix and our
cross-attention [W^K; W^V] as one: those rows are concatenated (in) and split (out).

Tested three ways (tests/models/test_marian.py): every checkpoint key is consumed, a state dict survives
the round trip, and logits and beam search equal transformers' on the same weights.
"""

from __future__ import annotations

from typing import Any

import torch

from seq2bert.errors import CheckpointError
from seq2bert.models.keymap import KeyMap, Loader, linear, save
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.nn.embeddings import sinusoidal_table

# our sub-module within a layer → the Marian sub-modules it is made of (several: concatenated, keymap.py)
ENCODER_LAYER = {
    "self_attn.qkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
    "self_attn.out": ("self_attn.out_proj",),
    "self_attn_sublayer.norm": ("self_attn_layer_norm",),
    "feed_forward.w_1": ("fc1",),
    "feed_forward.w_2": ("fc2",),
    "ffn_sublayer.norm": ("final_layer_norm",),
}
DECODER_LAYER = {
    **ENCODER_LAYER,
    "cross_attn.q": ("encoder_attn.q_proj",),
    "cross_attn.kv": ("encoder_attn.k_proj", "encoder_attn.v_proj"),
    "cross_attn.out": ("encoder_attn.out_proj",),
    "cross_attn_sublayer.norm": ("encoder_attn_layer_norm",),
}
# MarianConfig fields that are ours under the same name
SAME_FIELDS = (
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "dropout",
    "attention_dropout",
    "activation_dropout",
    "activation_function",
    "max_position_embeddings",
    "scale_embedding",
    "tie_word_embeddings",
    "pad_token_id",
    "eos_token_id",
)


# transformers' MarianConfig default for forced_eos_token_id, used when config.json has no such key
MARIAN_FORCED_EOS_DEFAULT = 0


def config_from_marian(hf: dict[str, Any], source: str = "config.json") -> TransformerConfig:
    """Our config from a MarianConfig dictionary (config.json). The decoder starts from
    ``decoder_start_token_id`` (Marian: the pad token): that is our ``bos_token_id``.

    ``forced_eos_token_id`` is taken as it is, null included (nothing forced); a config.json without the key
    gets what transformers' MarianConfig gives it, 0 — not ``eos_token_id``, so that a checkpoint whose
    [EOS] is not 0 still decodes as transformers decodes it. ``bad_words_ids`` (published opus-mt configs
    ban [PAD], which is also the decoder start token) are never generated, as in transformers.

    ``hf`` is config.json with generation_config.json's settings over it, when the directory has one
    (transformers reads the generation settings from there first)."""
    if hf.get("model_type") != "marian":
        raise CheckpointError(f"{source}: model_type {hf.get('model_type')!r}, expected 'marian'")
    if hf.get("normalize_before") or hf.get("add_bias_logits") or hf.get("normalize_embedding"):
        raise CheckpointError(f"{source}: pre-norm or embedding-norm Marian variants are not supported")
    try:
        fields = {name: hf[name] for name in SAME_FIELDS if name in hf}
        vocab = hf.get("vocab_size", 58101)
        fields["eos_token_id"] = _single(fields.get("eos_token_id", 0), "eos_token_id", source)
        forced = hf.get("forced_eos_token_id", MARIAN_FORCED_EOS_DEFAULT)
        fields["forced_eos_token_id"] = (
            None if forced is None else _single(forced, "forced_eos_token_id", source)
        )
        fields["bad_words_ids"] = [[int(i) for i in word] for word in hf.get("bad_words_ids") or []]
        return TransformerConfig(
            **fields,
            src_vocab_size=vocab,
            tgt_vocab_size=hf.get("decoder_vocab_size") or vocab,
            bos_token_id=hf.get("decoder_start_token_id", fields.get("pad_token_id", 58100)),
            share_embeddings=hf.get("share_encoder_decoder_embeddings", True),
            interleave_sinusoids=False,
            final_logits_bias=True,
            normalize_before=False,
            position_embedding="sinusoidal",
            layer_norm_eps=1e-5,
        )
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{source}: {e}") from None


def config_to_marian(cfg: TransformerConfig) -> dict[str, Any]:
    """The MarianConfig dictionary of a Marian-compatible config (see ``check_marian_compatible``)."""
    check_marian_compatible(cfg)
    return {
        "model_type": "marian",
        "architectures": ["MarianMTModel"],
        **{name: getattr(cfg, name) for name in SAME_FIELDS},
        "vocab_size": cfg.src_vocab_size,
        "decoder_vocab_size": cfg.tgt_vocab_size,
        "decoder_start_token_id": cfg.bos_token_id,
        "forced_eos_token_id": cfg.forced_eos_token_id,
        "bad_words_ids": cfg.bad_words_ids or None,
        "share_encoder_decoder_embeddings": cfg.share_embeddings,
        "normalize_before": False,
        "is_encoder_decoder": True,
    }


def check_marian_compatible(cfg: TransformerConfig) -> None:
    """Raise unless transformers' MarianMTModel can represent the model."""
    wrong = [
        name
        for name, ok in (
            ("normalize_before (Marian is post-norm)", not cfg.normalize_before),
            ("position_embedding (Marian has split sinusoids)", cfg.position_embedding == "sinusoidal"),
            ("interleave_sinusoids (Marian puts the cosines second)", not cfg.interleave_sinusoids),
            ("d_k / d_v (Marian has d_model / h)", not cfg.d_k and not cfg.d_v),
            ("final_logits_bias (Marian has one)", cfg.final_logits_bias),
            ("layer_norm_eps (Marian's is 1e-5)", cfg.layer_norm_eps == 1e-5),
        )
        if not ok
    ]
    if wrong:
        raise CheckpointError("this Transformer cannot be saved as MarianMT: " + "; ".join(wrong))


def _single(value: Any, name: str, source: str) -> int:
    if isinstance(value, list):
        if len(value) != 1:
            raise CheckpointError(f"{source}: {name} {value}: expected one id")
        return int(value[0])
    return int(value)


def layer_keymap(cfg: TransformerConfig) -> KeyMap:
    """The key map of every encoder and decoder layer."""
    out: KeyMap = []
    for stack, n, table in (
        ("encoder", cfg.encoder_layers, ENCODER_LAYER),
        ("decoder", cfg.decoder_layers, DECODER_LAYER),
    ):
        for i in range(n):
            for sub, parts in table.items():
                out += linear(f"{stack}.layers.{i}.{sub}", *(f"model.{stack}.layers.{i}.{p}" for p in parts))
    return out


def from_marian_state_dict(hf: dict[str, torch.Tensor], cfg: TransformerConfig, source: str = "") -> dict:
    """Our state dict from a MarianMTModel state dict; every Marian key must be used (or be a copy of a
    used matrix: tied embeddings, the fixed sinusoids), else CheckpointError names the leftovers."""
    taken = Loader(hf, source or "checkpoint")
    out = taken.load(layer_keymap(cfg))
    shared = ("model.shared.weight",) if cfg.share_embeddings else ()
    out["encoder.embeddings.tokens.weight"] = taken.first("model.encoder.embed_tokens.weight", *shared)
    out["decoder.embeddings.tokens.weight"] = taken.first("model.decoder.embed_tokens.weight", *shared)
    if cfg.tie_word_embeddings:  # the same matrix as the target embedding
        taken.ignore("lm_head.weight")
        out["output.weight"] = out["decoder.embeddings.tokens.weight"]
    else:
        out["output.weight"] = taken.take("lm_head.weight")
    out["output.bias"] = taken.take("final_logits_bias").reshape(-1)
    for stack in ("encoder", "decoder"):  # the fixed sinusoids: checked, not loaded
        key = f"model.{stack}.embed_positions.weight"
        if key in hf:
            table = sinusoidal_table(hf[key].size(0), cfg.d_model, interleaved=False)
            if not torch.allclose(hf[key].float(), table, atol=1e-4):
                raise CheckpointError(f"{source}: {key} is not Marian's sinusoidal table")
            taken.ignore(key)
    taken.check_all_used()
    return out


def to_marian_state_dict(ours: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    """The MarianMTModel state dict of our weights (tied matrices under each of their names)."""
    check_marian_compatible(cfg)
    out = save(ours, layer_keymap(cfg))
    if cfg.share_embeddings:
        out["model.shared.weight"] = ours["encoder.embeddings.tokens.weight"]
    out["model.encoder.embed_tokens.weight"] = ours["encoder.embeddings.tokens.weight"]
    out["model.decoder.embed_tokens.weight"] = ours["decoder.embeddings.tokens.weight"]
    out["lm_head.weight"] = ours["output.weight"]
    out["final_logits_bias"] = ours["output.bias"].reshape(1, -1)
    for stack in ("encoder", "decoder"):
        out[f"model.{stack}.embed_positions.weight"] = sinusoidal_table(
            cfg.max_position_embeddings, cfg.d_model, interleaved=False
        )
    return out
