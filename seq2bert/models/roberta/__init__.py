"""RoBERTa (Liu et al. 2019): BERT's encoder with another input layer and other heads. config.py, model.py
(the bare model and transformers' head classes, composed from models/bert/), convert.py (Hugging Face
checkpoints) and pretrained.py (the registry record)."""
