"""The project as one wheel, for a student to take home beside a saved notebook: what `make wheel`
builds (setup.py says what it holds: bert with the built-in models as bert/assets, app with its
figure builders, benchmarks), so `pip install <the wheel>` is all a notebook needs.

- Built once per process, on the first request, from a temporary copy of the project's own files
  (SOURCES: the checkout is never written to), offline: `pip wheel --no-index --no-deps
  --no-build-isolation` with this environment's setuptools. Its dependencies (torch, plotly...) are
  named in the wheel and come from PyPI when the student installs it.
- The bytes are kept for the process (the built-in models make it large; one copy however many students download it: the
  server's file store keeps files by their content); a failed build is kept too, so a broken
  environment costs one try, not one per click.

No streamlit: app/ui/show_figure.py offers the download, the tests build it directly.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .stamp import DISTRIBUTION, app_version

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("setup.py", "pyproject.toml", "README.md", "bert", "app", "benchmarks", "assets")
NOT_COPIED = ("__pycache__", "*.pyc", "*.egg-info")
BUILD_TIMEOUT_S = 600
MIME = "application/zip"  # a wheel is a zip archive (PEP 427)

_lock = threading.Lock()
_built: bytes | None = None
_failed: str | None = None


class WheelUnavailable(RuntimeError):
    """The wheel cannot be built here (the app runs from an installed copy, or the build failed):
    the message says why."""


def wheel_name() -> str:
    """The wheel's file name, as pip names it (PEP 427): a notebook's first cell installs this file."""
    return f"{DISTRIBUTION.replace('-', '_')}-{app_version()}-py3-none-any.whl"


def can_build() -> bool:
    """True when the project's own files are here to build from (a checkout, not an installed copy)
    and no build of this process has failed: the page offers the wheel only then."""
    return _failed is None and _sources_here()


def _sources_here() -> bool:
    return all((ROOT / name).exists() for name in SOURCES)


def project_wheel() -> bytes:
    """The wheel's bytes: built on the first call of the process (one build at a time), then kept.
    Raises WheelUnavailable when it cannot be built."""
    global _built, _failed
    with _lock:
        if _built is None and _failed is None:
            try:
                _built = _build()
            except WheelUnavailable as e:
                _failed = str(e)
        if _built is None:
            raise WheelUnavailable(_failed)
        return _built


def _build() -> bytes:
    if not _sources_here():
        missing = ", ".join(name for name in SOURCES if not (ROOT / name).exists())
        raise WheelUnavailable(f"the project's files are not here to build the wheel from (missing: {missing})")
    with tempfile.TemporaryDirectory(prefix="bert-explorer-wheel-") as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "dist"
        src.mkdir()
        for name in SOURCES:
            path = ROOT / name
            if path.is_dir():
                shutil.copytree(path, src / name, ignore=shutil.ignore_patterns(*NOT_COPIED))
            else:
                shutil.copy2(path, src / name)
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-index", "--no-deps"]
        cmd += ["--no-build-isolation", "-w", str(out), str(src)]
        try:
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise WheelUnavailable(f"building the wheel failed: {e}") from e
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise WheelUnavailable("building the wheel failed: " + " ".join(tail))
        wheel = out / wheel_name()
        if not wheel.is_file():
            made = ", ".join(p.name for p in out.glob("*.whl")) or "nothing"
            raise WheelUnavailable(f"building the wheel made {made}, not {wheel_name()}")
        return wheel.read_bytes()
