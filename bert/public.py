"""Paths as students may see them: never the server's absolute paths.

Messages, cards and model sources go through `public_text` (every absolute path cut to
its last part) or `public_path` (relative inside the project, else its last part), so no
user names, home folders or virtual environments of the server reach a page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Absolute paths (POSIX, ~/..., file://, C:\...) not inside a URL or a word: "a/b", "1/2" stay.
_ABS_PATH = re.compile(
    r"(?<![\w.:/~\\…-])(?:file://)?(?:/|~/|[A-Za-z]:[\\/])"
    r"(?:[^\s/\\'\"`()<>\[\]|]+[/\\])*[^\s/\\'\"`()<>\[\]|]*"
)


def public_path(path: str | os.PathLike) -> str:
    """A path as students may see it: relative inside the project, else only its last part."""
    path = Path(path)
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except (ValueError, OSError, RuntimeError):
        return f"…/{path.name}" if path.name else "…"


def public_text(text: str) -> str:
    """`text` with every absolute path cut to its last part ("…/model"): no user names,
    home folders or virtual environments of the server in what students see."""

    def tail(m: re.Match) -> str:
        parts = [p for p in re.split(r"[/\\]", m.group(0)) if p and p not in ("~", "file:")]
        return f"…/{parts[-1]}" if parts else m.group(0)

    return _ABS_PATH.sub(tail, text or "")
