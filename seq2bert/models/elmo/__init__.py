"""ELMo (Peters et al. 2018): the character-CNN biLM, its pretraining, and the published models' weights."""
