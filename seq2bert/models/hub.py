"""Models by name: a checkpoint given as a name of the Hugging Face Hub — ``org/name`` or ``name``, either with
``@revision`` (a branch, a tag or a commit hash) — is the folder of the huggingface_hub cache that holds it,
downloaded there once (``snapshot_download``) and read from there after.

A local directory is always taken first: what exists on disk, or looks like a path (``./x``, ``/x``, ``~/x``,
``runs/x/best``), is never sent to the Hub. Of a repository only the files a family reads are fetched —
config.json, the tokenizer's files (tokenizer.json, vocab.txt, vocab.json + merges.txt, SentencePiece
models), a sentence-transformers model's modules.json and pooling settings, and the weights: safetensors when
the repository has them, else ``pytorch_model.bin``, which the loader reads with ``weights_only=True`` only
(models/hf.py). huggingface_hub reads its settings itself: the cache (``HF_HOME``, ``HF_HUB_CACHE``), offline
mode (``HF_HUB_OFFLINE=1``: the cache alone), the token (``HF_TOKEN``, ``hf auth login``) of a private or gated
model. A name that cannot be resolved — not a name at all, absent from the Hub, a revision the Hub (or, offline,
the cache) does not have — is a one-line CheckpointError naming the model (and the cache folder).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from seq2bert.errors import CheckpointError

log = logging.getLogger(__name__)

# the files any family reads beside its weights (models/*/: config, tokenizers, sentence-transformers modules)
FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",  # WordPiece (BERT, DistilBERT, ELECTRA, MobileBERT)
    "vocab.json",  # byte-level BPE (GPT-2, RoBERTa), GPT's BPE and Marian's pieces
    "merges.txt",
    "target_vocab.json",  # Marian with separate vocabularies
    "spiece.model",  # SentencePiece (ALBERT)
    "source.spm",  # Marian
    "target.spm",
    "modules.json",  # sentence-transformers: the modules after the encoder …
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "*Pooling/config.json",  # … and its pooling settings (1_Pooling/)
)
SAFETENSORS = ("model.safetensors", "model.safetensors.index.json", "model-*-of-*.safetensors")
PICKLED = ("pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*-of-*.bin")
NAME_HELP = "ORG/NAME or NAME, with @REVISION (a branch, tag or commit hash) if wanted"
_RESOLVED: dict[tuple[str, str], Path] = {}  # (name, cache folder) → its snapshot folder, once per process


def looks_like_path(text: str) -> bool:
    """Whether ``text`` names a place on disk rather than a model of the Hub: it exists, starts as a path does
    (``/``, ``./``, ``../``, ``~``), ends with a slash, or has more folders than a Hub name (``runs/x/best``)."""
    if Path(text).expanduser().exists() or text in (".", "..") or "\\" in text:
        return True
    if text.startswith(("/", "./", "../", "~")):
        return True
    repo = text.split("@", 1)[0]
    return repo.endswith("/") or repo.count("/") > 1


def parse(name: str) -> tuple[str, str | None]:
    """(repo id, revision or None) of ``org/name[@revision]``; anything else is a one-line CheckpointError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo, at, revision = name.partition("@")
    try:
        validate_repo_id(repo)
    except HFValidationError:
        raise CheckpointError(f"{name}: no such directory, and not a model name ({NAME_HELP})") from None
    if at and (not revision or any(c.isspace() for c in revision)):
        raise CheckpointError(f"{name}: expected a revision after @ ({NAME_HELP})")
    return repo, revision or None


def local_path(model: str | Path) -> Path:
    """The folder of a checkpoint given as ``model``: a path as it is (a Path object, or text that is one,
    ``looks_like_path``), else a Hub name's folder in the huggingface_hub cache (downloaded if need be)."""
    if isinstance(model, Path) or looks_like_path(str(model)):
        return Path(model)
    from huggingface_hub import constants

    key = (str(model), str(constants.HF_HUB_CACHE))
    if key not in _RESOLVED:
        _RESOLVED[key] = snapshot(str(model))
    return _RESOLVED[key]


def as_given(model: str) -> str:
    """What a run records of the model it starts from: a local path made absolute (the run can be resumed from
    another working directory), a Hub name as given."""
    return str(Path(model).resolve()) if looks_like_path(model) else model


def snapshot(name: str) -> Path:
    """The cache folder of the Hub model ``name`` (``org/name[@revision]``) holding the files a family reads:
    safetensors weights, else the pickled ones (read with weights_only=True only)."""
    from huggingface_hub import snapshot_download

    repo, revision = parse(name)
    with hub_errors(name, repo, revision):
        folder = Path(snapshot_download(repo, revision=revision, allow_patterns=[*FILES, *SAFETENSORS]))
        if not any(folder.glob("*.safetensors")):  # an older repository: pytorch_model.bin, of that commit
            folder = Path(snapshot_download(repo, revision=folder.name, allow_patterns=[*FILES, *PICKLED]))
    if not (folder / "config.json").is_file():
        raise CheckpointError(
            f"{name}: the Hub repository {repo} has no config.json (not a transformers model)"
        )
    log.info("%s: %s", name, folder)
    return folder


@contextlib.contextmanager
def hub_errors(name: str, repo: str, revision: str | None) -> Iterator[None]:
    """huggingface_hub's errors about ``name`` as one-line CheckpointErrors naming the model (and the cache
    folder, where the cache was the only place to look)."""
    try:
        yield
    except Exception as e:
        error = checkpoint_error(e, name, repo, revision or "main")
        if error is None:
            raise
        raise error from None


def checkpoint_error(error: Exception, name: str, repo: str, revision: str) -> CheckpointError | None:
    from huggingface_hub import constants
    from huggingface_hub import errors as hf

    cache = constants.HF_HUB_CACHE
    if isinstance(error, hf.GatedRepoError):
        return CheckpointError(
            f"{name}: a gated model; accept its conditions on huggingface.co/{repo} and log in "
            "(HF_TOKEN, or: hf auth login)"
        )
    if isinstance(error, hf.RepositoryNotFoundError):
        return CheckpointError(
            f"{name}: no such directory, and no model {repo} on the Hugging Face Hub "
            "(a private one needs HF_TOKEN)"
        )
    if isinstance(error, hf.RevisionNotFoundError):
        return CheckpointError(f"{name}: {repo} has no revision {revision!r} (a branch, tag or commit hash)")
    if isinstance(error, hf.LocalEntryNotFoundError):
        why = (
            "HF_HUB_OFFLINE=1: the Hub is not asked"
            if constants.HF_HUB_OFFLINE
            else "the Hub cannot be reached"
        )
        if isinstance(error, getattr(hf, "IncompleteSnapshotError", ())):  # newer huggingface_hub only
            return CheckpointError(
                f"{name}: its files are incomplete in the Hugging Face cache {cache} ({why})"
            )
        held = cached_revisions(Path(cache), repo)
        if held:
            return CheckpointError(
                f"{name}: revision {revision!r} not in the Hugging Face cache {cache} "
                f"(it holds {', '.join(held)}; {why})"
            )
        return CheckpointError(
            f"{name}: no such directory, and not in the Hugging Face cache {cache} ({why})"
        )
    if isinstance(error, hf.HfHubHTTPError):
        status = getattr(getattr(error, "response", None), "status_code", "?")
        return CheckpointError(f"{name}: the Hugging Face Hub answered {status} ({one_line(error)})")
    if isinstance(error, hf.HFValidationError):
        return CheckpointError(f"{name}: not a model name ({NAME_HELP}): {one_line(error)}")
    return None


def cached_revisions(cache: Path, repo: str) -> list[str]:
    """The branches and tags (refs/) and commits (snapshots/) the cache holds of ``repo`` (none: not cached)."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    refs = sorted(p.relative_to(folder / "refs").as_posix() for p in folder.glob("refs/**/*") if p.is_file())
    commits = sorted(p.name[:12] for p in folder.glob("snapshots/*") if p.is_dir())
    return refs + commits


def one_line(error: Exception) -> str:
    return re.sub(r"\s+", " ", str(error)).strip()[:200]
