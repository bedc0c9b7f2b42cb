"""Continued pretraining for `seq2bert pretrain FILES --init DIR` (recipes/pretrain.py, ``init.checkpoint``):
a checkpoint's own objective on new text, read with its own tokenizer — no vocabulary is trained and the model
section is not read. ULMFiT's target-task LM fine-tuning (Howard & Ruder 2018, Sect. 3.2), BioBERT's and
SciBERT's domain pretraining from BERT, and "Don't Stop Pretraining" (Gururangan et al. 2020: DAPT on a
domain's text, TAPT on a task's own unlabelled inputs) are this.

The objective is the checkpoint's (``continued_head``):

- a masked LM for the encoders (BERT, RoBERTa, ALBERT, DistilBERT, MobileBERT, SpanBERT, ELECTRA). A
  checkpoint of the family's pretraining model (BertForPreTraining, AlbertForPreTraining, RobertaForMaskedLM)
  continues it whole — MLM with its sentence task (NSP, SOP) where it has one; any other (a bare encoder
  such as all-MiniLM-L6-v2, a fill-mask model, a fine-tuned classifier, ELECTRA's discriminator) continues
  the masked LM alone (data.sentence_task none, or RoBERTa's full_sentences), its MLM head read from the
  checkpoint when it has one and else initialised as the family initialises it, the decoder tied to the
  input embeddings — a log line says so. Masking follows the family (RoBERTa's <mask> and dynamic masking,
  BERT's 80/10/10, ALBERT's n-grams): the data section's "auto" settings.
- the causal LM for the GPTs (and a BERT pretrained left to right, is_decoder), on contiguous blocks;
- the permutation LM for XLNet, whatever head the checkpoint was saved with (XLNetLMHeadModel's decoder is
  tied to the input embeddings; its bias starts at zero when the checkpoint has none).

ELECTRA's replaced token detection needs the generator: a checkpoint of `seq2bert pretrain`, which keeps it
beside the discriminator (``generator/``), continues the pair (at the generator's own width); a released
discriminator, without one, continues as a masked LM (the head new), as transformers' ElectraForMaskedLM.

The held-out loss is measured before the first step (the checkpoint as given) and after the last:
``valid_before_*`` beside ``valid_*`` in results.json (``held_out_before``). The recurrent LMs of
`seq2bert train-lm` continue with ``train-lm --init`` (recipes/lm.py).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2bert.errors import CheckpointError, ConfigError
from seq2bert.io import read_json, write_json
from seq2bert.models import registry
from seq2bert.models.family import Family, masked_lm_terms
from seq2bert.models.hf import read_weights
from seq2bert.models.pretrained import checkpoint_dir, hf_tokenizer, init_lm_model

log = logging.getLogger("seq2bert.recipes.pretrain")  # the run's log lines

# the files of a checkpoint's tokenizer, copied as they are into every checkpoint of the run
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
)
BEFORE = "valid_before.json"  # the held-out metrics of the checkpoint as given, kept for a resumed run


@dataclass(frozen=True)
class Start:
    """The checkpoint a continued pretraining starts from: its directory, family, config, the head trained
    (``continued_head``), the objective ("masked_lm", "causal_lm", ELECTRA's pair's
    "replaced_token_detection", XLNet's "permutation_lm") and its tokenizer."""

    path: Path
    family: Family
    config: Any
    head: str
    objective: str
    tokenizer: Any

    def model(self, device: str | torch.device = "cpu") -> nn.Module:
        """The model of the head, with the checkpoint's weights; what it lacked initialised, said."""
        model, new = init_lm_model(self.family, self.path, self.family.architecture_for(self.head), device)
        if new:
            log.info(
                "%s: the checkpoint (%s) has no %s head: initialised %s%s",
                self.path,
                self.named,
                self.head,
                ", ".join(new),
                self.tied(model),
            )
        return model

    @property
    def named(self) -> str:
        """The architecture config.json names."""
        return (read_json(self.path / "config.json").get("architectures") or ["bare model"])[0]

    def tied(self, model: nn.Module) -> str:
        """ "; tied: A = B" for the parameters the model shares (an MLM decoder and the word embeddings)."""
        names: dict[int, list[str]] = {}
        for name, p in model.named_parameters(remove_duplicate=False):
            names.setdefault(id(p), []).append(name)
        shared = [" = ".join(n) for n in names.values() if len(n) > 1]
        return f"; tied: {', '.join(shared)}" if shared else ""

    def kept(self, model: nn.Module) -> dict[str, torch.Tensor]:
        """The checkpoint's pooler, which a masked LM has no place for but a sentence task reads (finetune
        --init), in transformers' names under the head model's prefix: stored unchanged in every checkpoint
        of the run (the masked LM does not train it). Empty when the model has a pooler of its own."""
        if any(".pooler." in k or k.startswith("pooler.") for k in model.state_dict()):
            return {}
        prefix = f"{self.family.base_model_prefix}."
        named = {k if k.startswith(prefix) else prefix + k: v for k, v in read_weights(self.path).items()}
        return {k: v for k, v in named.items() if k.startswith(f"{prefix}pooler.")}

    def forward_options(self, pretraining_options: dict) -> dict:
        """The training forward's options: the family's for its pretraining model; a masked LM's head only at
        the masked positions (every masked LM of seq2bert takes ``sparse_prediction``)."""
        return pretraining_options if self.head == "pretraining" else {"sparse_prediction": True}

    def terms(self):
        """Where the model's output keeps each loss: the family's pretraining model's, or a masked LM's."""
        return self.family.pretraining_terms if self.head == "pretraining" else masked_lm_terms

    def source(self) -> dict:
        """What the corpus is tokenized with (prepared_from's fingerprint): the checkpoint's tokenizer files."""
        files = [self.path / name for name in TOKENIZER_FILES if (self.path / name).is_file()]
        return {"init": str(self.path.resolve()), "files": [[f.name, f.stat().st_size] for f in files]}

    def write_tokenizer_files(self, directory: Path) -> None:
        copy_tokenizer_files(self.path, directory)


def copy_tokenizer_files(checkpoint: Path, directory: Path) -> None:
    """A checkpoint's tokenizer files, as they are, into ``directory`` (over what the family wrote there)."""
    for name in TOKENIZER_FILES:
        if (Path(checkpoint) / name).is_file():
            shutil.copyfile(Path(checkpoint) / name, Path(directory) / name)


def continued_head(family: Family, named: str | None, config: Any, source: Path) -> str:
    """The head whose objective a checkpoint of ``family`` continues (the module docstring); a one-line
    error for a family without a language-model objective."""
    heads = family.heads
    if family.stream_lm:
        raise CheckpointError(
            f"--init {source}: a {family.model_type} language model; continue it with "
            f"seq2bert train-lm FILES --init {source}"
        )
    if family.kind == "encoder-decoder" or not family.huggingface:
        raise CheckpointError(
            f"--init {source}: a {family.model_type} ({family.kind}) checkpoint has no language-model "
            "objective to continue (pretrain --init takes an encoder with a masked LM or a GPT)"
        )
    if getattr(config, "is_decoder", False) and "causal_lm" in heads:  # BERT pretrained left to right
        return "causal_lm"
    if "pretraining" in heads and family.pretraining_objective in ("causal_lm", "permutation_lm"):
        return "pretraining"
    kept_apart = [source / d / "config.json" for d in family.head_dirs.values()]
    if (
        family.pretraining_objective == "replaced_token_detection"
        and named == heads.get("pretraining")
        and any(f.is_file() for f in kept_apart)
    ):  # ELECTRA's discriminator with its generator beside it (a run of ours): the pair continues
        return "pretraining"
    if (
        named is not None
        and named == heads.get("pretraining")
        and family.pretraining_objective == "masked_lm"
    ):
        return "pretraining"
    if "masked_lm" in heads:
        return "masked_lm"
    if "pretraining" in heads and family.pretraining_objective == "masked_lm":
        return "pretraining"
    raise CheckpointError(
        f"--init {source}: a {family.model_type} checkpoint has no masked or causal language model to "
        f"continue (its heads: {', '.join(heads)})"
    )


def open_checkpoint(init: str) -> Start:
    """The checkpoint (or a run directory's best) of ``--init``: its family, config, head and tokenizer."""
    path = checkpoint_dir(init)
    family = registry.family_at(path)
    if not family.huggingface:
        continued_head(family, None, None, path)  # a translation checkpoint: the one-line refusal
    config = family.read_config(read_json(path / "config.json"), str(path / "config.json"))
    named = (read_json(path / "config.json").get("architectures") or [None])[0]
    head = continued_head(family, named, config, path)
    tokenizer = hf_tokenizer(family, path)
    if tokenizer is None:
        raise CheckpointError(
            f"--init {path}: no tokenizer in the checkpoint (continued pretraining reads the text with the "
            "checkpoint's own: tokenizer.json, vocab.txt, …)"
        )
    causal = head == "causal_lm" or family.pretraining_objective == "causal_lm"
    if causal and tokenizer.eos_token_id is None:
        raise CheckpointError(f"--init {path}: its tokenizer has no end-of-text token to end documents with")
    if not causal and tokenizer.mask_token_id is None:
        raise CheckpointError(f"--init {path}: its tokenizer has no mask token for the masked LM")
    objective = "causal_lm" if causal else "masked_lm"
    if head == "pretraining" and family.pretraining_objective in (
        "replaced_token_detection",
        "permutation_lm",
    ):
        objective = family.pretraining_objective
    return Start(path, family, config, head, objective, tokenizer)


# the settings of a new vocabulary, refused with --init: (key, the value that leaves the checkpoint's)
VOCABULARY_SETTINGS = (("tokenizer", ""), ("vocab_size", 30522), ("lowercase", None))


def check_settings(cfg: Any, default_model: Any) -> None:
    """What --init cannot be combined with: a new vocabulary's settings (data.tokenizer, data.vocab_size,
    data.lowercase), a model section (the checkpoint's own model is continued), sinusoidal positions."""
    for key, default in VOCABULARY_SETTINGS:
        if getattr(cfg.data, key) != default:
            raise ConfigError(
                f"data.{key}: --init continues the checkpoint with its own tokenizer; a new vocabulary's "
                "settings (data.tokenizer, data.vocab_size, data.lowercase) cannot be given with it"
            )
    if cfg.model != default_model:
        raise ConfigError(
            "model: --init continues the checkpoint's own model; the model section cannot be given with it"
        )
    if cfg.init.positions != "normal":
        raise ConfigError("init.positions: the positions of an --init checkpoint are its own (leave normal)")


def data_settings(start: Start, data: Any) -> Any:
    """The data section for ``start``: a masked LM without the family's sentence-pair head trains on single
    segments (data.sentence_task none, or full_sentences), a sentence task it has no head for refused."""
    if start.objective != "masked_lm" or start.head == "pretraining":
        return data
    if data.sentence_task in ("nsp", "sop"):
        raise ConfigError(
            f"data.sentence_task: {data.sentence_task} needs the pretraining model's sentence head; "
            f"{start.path} (a {start.named}) continues its masked LM alone (none or full_sentences)"
        )
    if data.sentence_task == "auto" and start.family.sentence_pairs != "none":
        default = start.family.pretraining_data.get("sentence_task", "none")
        return replace(data, sentence_task=default if default == "full_sentences" else "none")
    return data


@torch.no_grad()
def held_out_before(trainer: Any, evaluate, out_dir: Path, resume: bool, is_main: bool) -> dict:
    """The held-out metrics of the checkpoint as given, before the first step (as the trainer evaluates: eval
    mode, its precision); a resumed run reads those its start measured (``BEFORE``)."""
    path = Path(out_dir) / BEFORE
    if resume and path.is_file():
        return read_json(path)
    model = trainer.model
    model.eval()
    with trainer.autocast():
        metrics = dict(evaluate(model))
    model.train()
    log.info("held-out before continuing: %s", ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    if is_main:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        write_json(path, metrics)
    return metrics
