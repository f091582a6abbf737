"""Names made safe: plain file names for downloads and folders, and unique model names."""

from __future__ import annotations

import re
import unicodedata

from .. import state

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_filename(name: str, fallback: str = "model", limit: int = 80) -> str:
    """A plain file name: ASCII letters, digits, . _ - only; no path parts, no leading dots."""
    name = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode()
    name = _UNSAFE.sub("-", name.replace("/", "-").replace("\\", "-"))
    name = re.sub(r"\.{2,}", ".", name).strip(".-_ ")
    return name[:limit].strip(".-_") or fallback


def display_name(name: str, limit: int = 60) -> str:
    """A model name for the picker: no control characters, not too long."""
    name = "".join(ch for ch in str(name) if unicodedata.category(ch)[0] != "C").strip()
    return name[:limit] or "model"


def unique_model_name(name: str) -> str:
    """`name` made displayable, with -2, -3… added if this session already has a model of that name."""
    taken = set(state.user_models())
    name = display_name(name)
    if name not in taken:
        return name
    k = 2
    while f"{name}-{k}" in taken:
        k += 1
    return f"{name}-{k}"
