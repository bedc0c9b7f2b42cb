"""XLNet (Yang et al. 2019): config.py, model.py (the two-stream permutation LM on the shared stack, with
Transformer-XL's relative positions and memory), heads.py (the fine-tuning heads), convert.py (Hugging Face
checkpoints), tokenizer.py (its SentencePiece vocabulary) and pretrained.py (the registry record)."""
