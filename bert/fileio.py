"""Crash-safe file writing: write to a temporary name in the same folder, then rename."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)                 # mkstemp makes 0600; others may read our files
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def replace_dir(tmp_dir: Path, final_dir: Path) -> None:
    """Move a fully written folder into place; an older folder of that name is replaced."""
    final_dir = Path(final_dir)
    os.chmod(tmp_dir, 0o755)                 # mkdtemp makes 0700
    if final_dir.exists():
        old = final_dir.with_name(f".{final_dir.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final_dir, old)
        os.replace(tmp_dir, final_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp_dir, final_dir)
