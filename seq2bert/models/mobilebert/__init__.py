"""MobileBERT (Sun et al. 2020): a deep, thin BERT of bottleneck blocks. config.py, model.py (the bare model
and transformers' head classes, composed from models/bert/ and nn/), convert.py (Hugging Face checkpoints)
and pretrained.py (the registry record)."""
