"""GPT (Radford et al. 2018) and GPT-2 (Radford et al. 2019): config.py, model.py (the bare models), heads.py
(transformers' head classes), convert.py (Hugging Face checkpoints) and pretrained.py (the registry records)."""
