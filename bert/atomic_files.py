"""Crash-safe file writing: write to a temporary name in the same folder, then rename.

A folder (a checkpoint) is written whole under `.<name>.tmp…` and swapped into place by
`replace_dir`. On Linux the swap is one system call (renameat2 RENAME_EXCHANGE), so at every
instant `<name>` is either the old folder or the new one, whole, even if the process is killed
(SIGKILL, power cut) at any point. A save killed half way leaves its `.<name>.tmp…` folder behind:
the next save of that folder removes it (`remove_leftovers`; one writer per folder), and the
app's cleanup timer removes any left in folders nobody saves to again (`remove_stale_leftovers`).
Tested by killing a saving process at random moments: tests/test_kill_save.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
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
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; others may read our files
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


# ---- folders ----------------------------------------------------------------------------------

_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux >= 3.15, glibc >= 2.28). False if unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not on this file system
        return False
    raise OSError(err, os.strerror(err), str(a))


def _old_name(final_dir: Path) -> Path:
    return final_dir.with_name(f".{final_dir.name}.old")


def recover_dir(final_dir: Path) -> None:
    """Where the swap is two renames (no RENAME_EXCHANGE), a kill between them leaves only
    `.<name>.old`: put it back."""
    final_dir, old = Path(final_dir), _old_name(Path(final_dir))
    if not final_dir.exists() and old.is_dir():
        os.replace(old, final_dir)


def leftovers(final_dir: Path) -> list[Path]:
    """What killed saves of `final_dir` left next to it: `.<name>.tmp…` and `.<name>.old`."""
    final_dir = Path(final_dir)
    if not final_dir.parent.is_dir():
        return []
    tmp, old = f".{final_dir.name}.tmp", _old_name(final_dir).name
    return [p for p in final_dir.parent.iterdir() if p.name.startswith(tmp) or p.name == old]


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def remove_leftovers(final_dir: Path, keep: Path | None = None) -> int:
    """Remove what earlier killed saves of `final_dir` left (but `keep`). Assumes one writer per
    folder, as everywhere in this project. Returns how many were removed."""
    recover_dir(final_dir)
    gone = [p for p in leftovers(final_dir) if keep is None or p != Path(keep)]
    for p in gone:
        _remove(p)
    return len(gone)


def remove_stale_leftovers(folder: Path, older_than_s: float = 600.0) -> int:
    """In `folder`, remove hidden `.<name>.tmp…` / `.<name>.old` entries not touched for
    `older_than_s` seconds (saves that were killed and never retried). Returns how many."""
    folder, now, n = Path(folder), time.time(), 0
    if not folder.is_dir():
        return 0
    for p in folder.iterdir():
        if p.name.startswith(".") and (".tmp" in p.name or p.name.endswith(".old")):
            try:
                if now - p.lstat().st_mtime > older_than_s:
                    if p.name.endswith(".old"):
                        recover_dir(p.with_name(p.name[1 : -len(".old")]))
                    if p.exists():
                        _remove(p)
                    n += 1
            except OSError:
                pass
    return n


@contextlib.contextmanager
def written_dir(final_dir) -> Iterator[Path]:
    """A temporary folder beside `final_dir` to write into: moved into place (replace_dir) when the
    block ends, removed when it raises."""
    final_dir = Path(final_dir)
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final_dir.parent, prefix=f".{final_dir.name}.tmp"))
    try:
        yield tmp
        replace_dir(tmp, final_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def replace_dir(tmp_dir: Path, final_dir: Path) -> None:
    """Move a fully written folder into place; an older folder of that name is replaced.
    `final_dir` is whole at every instant (see the module's docstring)."""
    tmp_dir, final_dir = Path(tmp_dir), Path(final_dir)
    os.chmod(tmp_dir, 0o755)  # mkdtemp makes 0700
    remove_leftovers(final_dir, keep=tmp_dir)
    if not final_dir.exists():
        os.replace(tmp_dir, final_dir)
    elif _exchange(tmp_dir, final_dir):
        shutil.rmtree(tmp_dir, ignore_errors=True)  # it now holds the old folder
    else:
        old = _old_name(final_dir)
        os.replace(final_dir, old)  # a kill here: recover_dir puts it back
        os.replace(tmp_dir, final_dir)
        shutil.rmtree(old, ignore_errors=True)
