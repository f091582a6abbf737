"""Shared fixtures. The repository root is importable through pytest's `pythonpath` option and
the markers (`slow`, `browser`) are registered, both in pyproject.toml."""

import os

import pytest
import torch

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def real_vocab_path():
    from bert.checkpoint import minilm_package_dir

    return minilm_package_dir() / "vocab.txt"
