"""What a saved view says about where it came from: the model's name and a short hash of its
weights, the date, and the app's version. No streamlit."""

from __future__ import annotations

import hashlib
import threading
import tomllib
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "bert-explorer"
HASH_CHARS = 12
_hashes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> hash, while the model lives
_lock = threading.Lock()


def app_version() -> str:
    """The installed distribution's version, else pyproject.toml's (a checkout run in place)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


def weights_hash(model) -> str:
    """The first HASH_CHARS hex digits of sha256 over every tensor of `model.state_dict()` (names,
    shapes, dtypes and bytes, in name order): two models share it only if their weights are equal.
    Kept per model object while it lives: hashing every weight grows with the model."""
    import torch  # here: a saved view of a page without a model needs no torch

    with _lock:
        known = _hashes.get(model)
    if known is not None:
        return known
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().to("cpu").contiguous()
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    digest = h.hexdigest()[:HASH_CHARS]
    with _lock:
        _hashes[model] = digest
    return digest


@dataclass(frozen=True)
class Stamp:
    """Where a view came from: shown at the top of its file and in its notebook."""

    model: str | None = None  # the model's label ("minilm-l6", "my-run (yours)")
    weights: str | None = None  # weights_hash of it
    inputs: tuple[tuple[str, str], ...] = ()  # (label, text) as the student typed them
    saved: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    version: str = field(default_factory=app_version)
