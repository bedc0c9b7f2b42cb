"""ALBERT (Lan et al. 2019): config.py, model.py (BERT's modules composed: factorised embeddings, shared
layers, sentence-order prediction), convert.py (Hugging Face checkpoints) and pretrained.py (the registry
record)."""
