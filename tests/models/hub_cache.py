"""A huggingface_hub cache folder made by a test, in the library's documented layout
(https://huggingface.co/docs/huggingface_hub/guides/manage-cache): models--ORG--NAME/ holding blobs/ (each
file once, named by its hash), refs/<branch or tag> (a file holding the commit hash) and
snapshots/<commit hash>/ (the repository's files as symbolic links to the blobs)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_COMMIT = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"  # a commit hash (any 40 hex digits name one)


def put_in_cache(
    cache: Path, repo: str, folder: Path, commit: str, refs: tuple[str, ...] = ("main",)
) -> Path:
    """``folder``'s files as huggingface_hub stores a download of ``repo`` at ``commit``; returns the snapshot."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    for ref in refs:
        (repo_dir / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo_dir / "refs" / ref).write_text(commit)
    (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        blob = repo_dir / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        shutil.copyfile(file, blob)
        link = snapshot / file.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot
