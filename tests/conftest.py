import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (real checkpoints, training)")
    config.addinivalue_line("markers", "browser: drives a real Chromium")


@pytest.fixture(scope="session")
def real_vocab_path():
    from bert.checkpoint import minilm_package_dir
    return minilm_package_dir() / "vocab.txt"
