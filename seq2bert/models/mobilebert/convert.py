"""Hugging Face MobileBERT checkpoints to and from ours, declaratively (seq2bert/models/keymap.py HeadLayout).

ours (layers.i. …)                 transformers (encoder.layer.i. …, under ``mobilebert.`` in a head model)
embeddings.projection              embeddings.embedding_transformation
embeddings.norm                    embeddings.LayerNorm
input_bottleneck.dense / .norm     bottleneck.input.dense / .LayerNorm
shared_bottleneck.dense / .norm    bottleneck.attention.dense / .LayerNorm
self_attn.query / key / value      attention.self.query / key / value
self_attn.out                      attention.output.dense
self_attn_sublayer.norm            attention.output.LayerNorm
feed_forward.j.w_1 / w_2           ffn.j.intermediate.dense / ffn.j.output.dense       j < F − 1
ffn_sublayers.j.norm               ffn.j.output.LayerNorm
feed_forward.{F−1}.w_1 / w_2       intermediate.dense / output.dense                  the last network
ffn_sublayers.{F−1}.norm           output.LayerNorm
output_bottleneck                  output.bottleneck.dense
output_sublayer.norm               output.bottleneck.LayerNorm
pooler                             pooler.dense                       (with classifier_activation)
mlm.dense / mlm.norm               cls.predictions.transform.dense / .LayerNorm
mlm.extra.weight                   cls.predictions.dense.weight       the decoder's H − E columns
mlm.decoder.bias                   cls.predictions.bias               (= cls.predictions.decoder.bias)
mlm.decoder.weight                 the word embeddings                (cls.predictions.decoder.weight, tied)
nsp                                cls.seq_relationship
classifier, qa_outputs             the same names
"""

from __future__ import annotations

from typing import Any

from seq2bert.models.bert.convert import config_from_hf as bert_config_from_hf
from seq2bert.models.bert.convert import config_to_hf as bert_config_to_hf
from seq2bert.models.bert.convert import embeddings_keymap
from seq2bert.models.keymap import HeadLayout, KeyMap, conversions, linear, pooled, task_heads, tied_decoder
from seq2bert.models.mobilebert.config import MobileBertConfig

MLM_HEAD: KeyMap = [
    *linear("mlm.dense", "cls.predictions.transform.dense"),
    *linear("mlm.norm", "cls.predictions.transform.LayerNorm"),
    ("mlm.extra.weight", ("cls.predictions.dense.weight",)),
    ("mlm.decoder.bias", ("cls.predictions.bias",)),
]
HEADS: dict[str, KeyMap] = {
    "MobileBertModel": [],
    "MobileBertForPreTraining": MLM_HEAD + linear("nsp", "cls.seq_relationship"),
    "MobileBertForMaskedLM": MLM_HEAD,
    **task_heads("MobileBert"),
}
ARCHITECTURES = tuple(HEADS)
POOLED = pooled("MobileBert")
TIED = tied_decoder("mobilebert", "cls.predictions.decoder")  # the MLM decoder: the word embeddings


def config_from_hf(hf: dict[str, Any], source: str = "config.json") -> MobileBertConfig:
    """Our config from a transformers MobileBertConfig dictionary: BERT's reading, with MobileBERT's fields."""
    return bert_config_from_hf(hf, source, MobileBertConfig)


def config_to_hf(cfg: MobileBertConfig, architecture: str) -> dict[str, Any]:
    out = bert_config_to_hf(cfg, architecture)
    del out["position_embedding_type"]  # BERT's field MobileBERT has not
    return out


def layer_keymap(cfg: MobileBertConfig, ours: str, theirs: str) -> KeyMap:
    """One block's keys: our layer module at ``ours``, theirs at ``theirs``."""
    out = [
        *linear(f"{ours}self_attn.query", f"{theirs}attention.self.query"),
        *linear(f"{ours}self_attn.key", f"{theirs}attention.self.key"),
        *linear(f"{ours}self_attn.value", f"{theirs}attention.self.value"),
        *linear(f"{ours}self_attn.out", f"{theirs}attention.output.dense"),
        *linear(f"{ours}self_attn_sublayer.norm", f"{theirs}attention.output.LayerNorm"),
    ]
    F = cfg.num_feedforward_networks
    for j in range(F):  # the first F − 1 are transformers' ffn.j; the last its intermediate and output
        w_1, w_2 = (
            (f"ffn.{j}.intermediate.dense", f"ffn.{j}.output")
            if j < F - 1
            else ("intermediate.dense", "output")
        )
        out += linear(f"{ours}feed_forward.{j}.w_1", theirs + w_1)
        out += linear(f"{ours}feed_forward.{j}.w_2", f"{theirs}{w_2}.dense")
        out += linear(f"{ours}ffn_sublayers.{j}.norm", f"{theirs}{w_2}.LayerNorm")
    if cfg.use_bottleneck:
        out += linear(f"{ours}input_bottleneck.dense", f"{theirs}bottleneck.input.dense")
        out += linear(f"{ours}input_bottleneck.norm", f"{theirs}bottleneck.input.LayerNorm")
        out += linear(f"{ours}output_bottleneck", f"{theirs}output.bottleneck.dense")
        out += linear(f"{ours}output_sublayer.norm", f"{theirs}output.bottleneck.LayerNorm")
        if cfg.key_query_shared_bottleneck:
            out += linear(f"{ours}shared_bottleneck.dense", f"{theirs}bottleneck.attention.dense")
            out += linear(f"{ours}shared_bottleneck.norm", f"{theirs}bottleneck.attention.LayerNorm")
    return out


def encoder_keymap(cfg: MobileBertConfig, ours: str, theirs: str) -> KeyMap:
    """MobileBertModel's keys (without the pooler), ours under ``ours``, theirs under ``theirs``."""
    out = embeddings_keymap(ours, theirs) + linear(
        f"{ours}embeddings.projection", f"{theirs}embeddings.embedding_transformation"
    )
    for i in range(cfg.num_hidden_layers):
        out += layer_keymap(cfg, f"{ours}layers.{i}.", f"{theirs}encoder.layer.{i}.")
    return out


def layout(cfg: MobileBertConfig) -> HeadLayout:
    return HeadLayout(
        base="MobileBertModel",
        prefix="mobilebert",
        encoder=lambda ours, theirs: encoder_keymap(cfg, ours, theirs),
        heads=HEADS,
        head_modules=("cls", "classifier", "qa_outputs"),
        pooler=(lambda ours, theirs: linear(f"{ours}pooler", f"{theirs}pooler.dense"))
        if cfg.classifier_activation
        else None,
        pooled=POOLED,
        tied={"MobileBertForPreTraining": TIED, "MobileBertForMaskedLM": TIED},
    )


# our state dict from a transformers state dict of any of its classes, and back (tied tensors written
# under each of their names)
from_hf_state_dict, to_hf_state_dict = conversions(layout)
