"""A small config of any family: the sizes below, set where the family's config has the field."""

import dataclasses

# small sizes, set where a family's config has the field
SMALL = dict(
    vocab_size=40,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    embedding_size=8,
    max_position_embeddings=32,
    n_embd=16,
    n_layer=1,
    n_head=2,
    n_positions=32,
    dim=16,
    n_layers=1,
    n_heads=2,
    hidden_dim=32,
    d_model=16,
    d_k=8,
    d_v=8,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    src_vocab_size=40,
    tgt_vocab_size=40,
    embedding_dim=8,
    num_layers=1,
    maxout_size=8,
    attention_size=8,
    cell_size=32,
    projection_dim=16,
    filters=[[1, 4], [2, 8]],
    char_embedding_dim=4,
    num_highway=1,
    intra_bottleneck_size=8,
    d_inner=32,
)
OWN = {"rnn-lm": dict(embedding_dim=16)}  # its output layer is its embedding matrix


def small_config(family):
    names = {f.name for f in dataclasses.fields(family.config_class)}
    sizes = {**SMALL, **OWN.get(family.model_type, {})}
    return dataclasses.replace(family.config_class(), **{k: v for k, v in sizes.items() if k in names})
