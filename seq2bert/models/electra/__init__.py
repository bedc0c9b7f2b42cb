"""ELECTRA (Clark et al. 2020): config.py, model.py (the encoder and the pretraining heads), tasks.py (the
fine-tuning heads), pretrainer.py (generator + discriminator trained together), convert.py (Hugging Face
checkpoints) and pretrained.py (the registry record)."""
