"""ELECTRA in the registry: its architectures (transformers' class names), the heads the jobs ask for and
the Hugging Face conversions, as one ``Family`` (seq2bert/models/family.py). Its checkpoints carry BERT's
WordPiece vocabulary (vocab.txt). Its "pretraining" head is the discriminator (ElectraForPreTraining); what
`seq2bert pretrain` trains is pretrainer.py's ElectraPretrainer — the generator and the discriminator, their
embeddings shared — on replaced token detection (recipes/pretrain_electra.py), over single segments: ELECTRA
has no sentence task. A run's checkpoint keeps the generator in ``generator/``, where fill-mask finds it."""

from __future__ import annotations

from functools import partial

from seq2bert.models.electra.config import ElectraConfig, electra_small
from seq2bert.models.electra.convert import (
    config_from_hf,
    config_to_hf,
    from_hf_state_dict,
    to_hf_state_dict,
)
from seq2bert.models.electra.model import ElectraForMaskedLM, ElectraForPreTraining, ElectraModel
from seq2bert.models.electra.pretrainer import ElectraPretrainer
from seq2bert.models.electra.tasks import TASK_CLASSES
from seq2bert.models.family import Family
from seq2bert.models.keymap import named

CLASSES = named(ElectraModel, ElectraForPreTraining, ElectraForMaskedLM, *TASK_CLASSES.values())

GENERATOR = "generator"  # the generator's directory inside a checkpoint

FAMILY = Family(
    model_type="electra",
    config_class=ElectraConfig,
    architectures=CLASSES,
    heads={
        "base": "ElectraModel",
        "pretraining": "ElectraForPreTraining",
        "masked_lm": "ElectraForMaskedLM",
        "sequence": "ElectraForSequenceClassification",
        "tokens": "ElectraForTokenClassification",
        "qa": "ElectraForQuestionAnswering",
        "choice": "ElectraForMultipleChoice",
    },
    head_dirs={"masked_lm": GENERATOR},  # the discriminator has no MLM head; the generator is one
    kind="encoder",
    base_model_prefix="electra",
    tokenizer="wordpiece",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    state_from_hf=from_hf_state_dict,
    state_to_hf=to_hf_state_dict,
    head_modules=("rtd", "mlm", "classifier", "qa_outputs", "sequence_summary"),
    pretraining_objective="replaced_token_detection",
    pretrainer=ElectraPretrainer,
    sentence_pairs="none",  # no NSP: the losses are the generator's MLM and replaced token detection
    # the generator's input as the released code masks it: 85 % [MASK], 15 % kept, no random tokens
    pretraining_data={"mask_fraction": 0.85, "random_fraction": 0.0},
    presets={"mini": partial(electra_small, num_hidden_layers=4)},
)
