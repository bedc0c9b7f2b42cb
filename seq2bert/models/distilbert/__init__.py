"""DistilBERT (Sanh et al. 2019): BERT's encoder with half the layers, no segments and no pooler. config.py,
model.py (the bare model and transformers' head classes, composed from models/bert/), convert.py (Hugging
Face checkpoints) and pretrained.py (the registry record)."""
