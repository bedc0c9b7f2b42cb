"""SpanBERT in the registry: one architecture (pretraining), checkpoints in BERT's layout.

config.json and model.safetensors are exactly BertForMaskedLM's (models/bert/convert.py, with
``"model_type": "bert"``), so transformers and seq2bert read a SpanBERT checkpoint as BERT; the SBO head,
which only pretraining uses, is written beside them as span_boundary.safetensors and read back on resume
(``read_state``: the source of a checkpoint being resumed is its directory).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from safetensors.torch import load_file
from torch import nn

from seq2bert.errors import CheckpointError
from seq2bert.io import save_tensors
from seq2bert.models.bert.convert import config_from_hf, config_to_hf, from_hf_state_dict, to_hf_state_dict
from seq2bert.models.family import Family, PretrainingTerms
from seq2bert.models.spanbert.config import SpanBertConfig, spanbert_mini
from seq2bert.models.spanbert.model import SpanBertForPreTraining

SBO_FILE = "span_boundary.safetensors"
AS = "BertForMaskedLM"  # what the checkpoints are, for transformers


def write_config(cfg: SpanBertConfig, architecture: str) -> dict:
    return {**config_to_hf(cfg, AS), "model_type": "bert"}


def read_config(hf: dict, source: str) -> SpanBertConfig:
    bert = config_from_hf({**hf, "model_type": "bert"}, source=source)
    fields = {k: v for k, v in asdict(bert).items() if k != "model_type"}
    return SpanBertConfig(**fields, span_positions=hf.get("span_positions", SpanBertConfig.span_positions))


def save_sbo(model: nn.Module, directory: Path) -> None:
    save_tensors(
        {k: v.contiguous() for k, v in model.sbo.state_dict().items()}, str(Path(directory) / SBO_FILE)
    )


def read_state(hf: dict, cfg: SpanBertConfig, architecture: str, source: str, new_heads: bool) -> dict:
    """BertForMaskedLM's weights, and the SBO head's from span_boundary.safetensors beside them."""
    ours = from_hf_state_dict(hf, cfg, AS, source, new_heads=new_heads)
    path = Path(source) / SBO_FILE
    if not path.is_file():
        raise CheckpointError(f"{source}: no {SBO_FILE} (the span-boundary head, needed to resume)")
    return ours | {f"sbo.{k}": v for k, v in load_file(str(path)).items()}


FAMILY = Family(
    model_type="spanbert",
    config_class=SpanBertConfig,
    architectures={"SpanBertForPreTraining": SpanBertForPreTraining},
    heads={"pretraining": "SpanBertForPreTraining"},
    kind="encoder",
    base_model_prefix="bert",
    tokenizer="wordpiece",
    config_from_hf=read_config,
    config_to_hf=write_config,
    state_from_hf=read_state,
    state_to_hf=lambda ours, cfg, arch: to_hf_state_dict(ours, cfg, AS),
    save_files=save_sbo,
    head_modules=("mlm", "sbo"),
    pretraining_options={"sparse_prediction": True},
    sentence_pairs="none",  # single segments (Sect. 3.3)
    pretraining_data={"masking_strategy": "span"},  # Sect. 3.1 (for data.masking_strategy=auto)
    pretraining_terms=lambda out: PretrainingTerms(
        out.mlm_loss, out.prediction_logits, span_loss=out.sbo_loss
    ),
    span_boundaries=True,  # the SBO reads each masked token's span boundaries (Sect. 3.2)
    presets={"mini": spanbert_mini},
)
