"""Finished runs kept on disk for a day under a short run code, and the app's disk kept bounded.

A run is a folder `<cache>/runs/<CODE>/` (git-ignored): `model/` (bert.save, weights in fp16 to
halve the disk) and `run.json` (what the results view shows: metrics, report, settings, card). It
is written whole in a temporary folder and renamed into place (bert.atomic_files.replace_dir), so a
kill leaves either no run or a whole one. The code is 6 characters of [A-Z0-9] (36^6, about
2 x 10^9 codes); what a student types is checked against exactly that before it becomes part of
a path, so it can never name another folder.

`cleanup` (run by the job manager's timer and after each save) removes runs older than a day,
what killed saves left, job folders no job uses, tokenized copies of uploaded texts, and then
the oldest runs until runs + job folders + tokenized files fit in BERT_EXPLORER_MAX_DISK_MB.

A run belongs to a student (the browser that started its job): each keeps their last
BERT_EXPLORER_RUNS_PER_STUDENT runs, and no run younger than BERT_EXPLORER_RUN_SAFE_HOURS is
removed to make room for another's: with the disk full of such runs a new run is refused with a
message (`make_room`) rather than a classmate's run lost: otherwise jobs started and stopped from
fresh cookies could push every classmate's run off the disk.
No streamlit here.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path

import bert
from bert import settings
from bert.atomic_files import atomic_write_text, remove_stale_leftovers, replace_dir
from bert.data.corpus.fetch import bert_cache_dir
from bert.data.corpus.registry import CORPORA
from bert.errors import DataError, InputError

from . import budget, run_models
from .budget import LimitError

log = logging.getLogger("bert_explorer")

CODE = re.compile(r"[A-Z0-9]{6}")
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: easy to copy from a screen
TTL_S = 24 * 3600.0
RECORD = "run.json"
_cleaning = threading.Lock()  # the timer and a job saving its run may clean at once


def runs_dir() -> Path:
    return bert_cache_dir() / "runs"


def parse_code(text: str) -> str:
    """The run code in what a student typed (spaces and case forgiven), or InputError."""
    code = re.sub(r"[\s-]+", "", str(text or "")).upper()
    if not CODE.fullmatch(code):
        raise InputError("A run code is 6 letters and digits, like K7QX2M: check what you typed.")
    return code


def new_code() -> str:
    while True:
        code = "".join(secrets.choice(ALPHABET) for _ in range(6))
        if not (runs_dir() / code).exists():
            return code


def _jsonable(obj):
    if hasattr(obj, "tolist"):  # numpy and torch numbers and arrays
        return obj.tolist()
    return str(obj)


def runs_per_student() -> int:
    return settings.whole("BERT_EXPLORER_RUNS_PER_STUDENT")


def safe_seconds() -> float:
    """How long a saved run is never removed to make room for another student's."""
    return 3600.0 * settings.number("BERT_EXPLORER_RUN_SAFE_HOURS")


def save_run(code: str, bundle: bert.Bundle, record: dict, student: str | None = None) -> Path:
    """Write run `code` (model + record) atomically, as one of `student`'s runs (their oldest go
    past BERT_EXPLORER_RUNS_PER_STUDENT); then keep the disk under its cap. LimitError, and
    nothing written, when the disk is full of runs too young to remove (`make_room`)."""
    record = {**record, "name": record.get("name") or bundle.name}

    def write(folder: Path) -> None:
        bert.save(bundle, folder / "model", card=bundle.card, half=True)

    return save_files(code, write, run_models.model_bytes(bundle.model) // 2, record, student)  # fp16 on disk


def save_files(code: str, write, size: int, record: dict, student: str | None = None) -> Path:
    """`save_run` of a run whose files `write(folder)` puts in its folder (about `size` bytes):
    the same atomic write, per-student count and disk cap, whatever the run holds."""
    code = parse_code(code)
    root = runs_dir()
    root.mkdir(parents=True, exist_ok=True)
    with _cleaning:
        make_room(code, student, size)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{code}.tmp"))
    try:
        write(tmp)
        record = {**record, "code": code, "saved": time.time()}
        if student:
            record["student"] = student
        atomic_write_text(tmp / RECORD, json.dumps(record, default=_jsonable))
        replace_dir(tmp, root / code)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    cleanup(keep={code})
    return root / code


def _saved_runs(root: Path) -> list[tuple[Path, float, str | None]]:
    """(folder, last change, student) of every saved run, oldest first."""
    runs = []
    for d in root.iterdir() if root.is_dir() else ():
        if not (CODE.fullmatch(d.name) and d.is_dir()):
            continue
        try:
            changed = d.stat().st_mtime
        except OSError:
            continue
        try:
            student = json.loads((d / RECORD).read_text(encoding="utf-8")).get("student")
        except (OSError, ValueError, AttributeError):
            student = None
        runs.append((d, changed, student))
    return sorted(runs, key=lambda r: r[1])


def make_room(code: str, student: str | None, size: int, now: float | None = None) -> dict:
    """Before run `code` of `size` bytes is saved for `student`: remove their oldest runs past
    BERT_EXPLORER_RUNS_PER_STUDENT, then, if the disk cap needs it, the oldest runs older than
    BERT_EXPLORER_RUN_SAFE_HOURS. Younger runs of others are never removed for it: LimitError
    (with a message for the page) when they leave no room. Called under `_cleaning`."""
    now = now or time.time()
    runs = [r for r in _saved_runs(runs_dir()) if r[0].name != code]
    done = {"own": 0, "for_space": 0}
    if student:
        mine = [r for r in runs if r[2] == student]
        for r in mine[: max(0, len(mine) - (runs_per_student() - 1))]:
            shutil.rmtree(r[0], ignore_errors=True)
            runs.remove(r)
            done["own"] += 1
    cap = budget.max_disk_mb() * 2**20
    used = disk_usage(whole=False)["capped"]
    for folder, changed, _ in runs:
        if used + size <= cap:
            break
        if now - changed >= safe_seconds():
            used -= _size(folder)
            shutil.rmtree(folder, ignore_errors=True)
            done["for_space"] += 1
    if used + size > cap:
        hours = f"{safe_seconds() / 3600:g}"
        raise LimitError(
            f"This run could not be saved on the server: its disk for saved runs is full "
            f"({used / 2**20:,.0f} of {cap / 2**20:,.0f} MB), and runs younger than {hours} hours are "
            f"never removed to make room for another student's. Download the model to keep it."
        )
    if any(done.values()):
        log.info("room for run %s: %s", code, done)
    return done


def _shared_run(code: str, folder: Path, record: dict):
    """(key, load, estimate) of a saved run for app/jobs/run_models.py: keyed by its folder and the time
    it was saved (a code reused after its run went is another run); fp16 on disk (an encoder-decoder:
    fp32), fp32 in memory."""
    key = f"{folder.resolve()}@{record.get('saved')}"
    half = record.get("kind") != "seq2seq"  # an encoder-decoder is written in transformers' form, fp32
    estimate = (2 if half else 1) * sum(_size(f) for f in (folder / "model").glob("*.safetensors"))

    def load() -> bert.Bundle:
        if not (folder / RECORD).is_file():
            raise DataError(
                f"Run {code} is no longer on this server (runs are kept for a day, and a student's "
                f"last {runs_per_student()}): its model cannot be loaded again."
            )
        return bert.load(folder / "model")

    return key, load, estimate


def adopt_run(code: str, bundle: bert.Bundle) -> bert.Bundle:
    """A just-finished job's model, saved as run `code`, as its session's Bundle: the server's one
    copy from now on (app/jobs/run_models.py), let go when unused and loaded again from the run's folder;
    `bundle` itself when the run is not on disk."""
    folder = runs_dir() / parse_code(code)
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return bundle
    key, load, _ = _shared_run(code, folder, record)
    return run_models.adopt(key, bundle, load)


def is_saved(code: str) -> bool:
    """Whether run `code` is (still) on disk."""
    return bool(CODE.fullmatch(code or "")) and (runs_dir() / code / RECORD).is_file()


def run_record_of(code: str) -> tuple[Path, dict]:
    """(folder, record) of saved run `code`; DataError if there is none (or it has expired)."""
    code = parse_code(code)
    folder = runs_dir() / code
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise DataError(
            f"There is no run {code} on this server: runs are kept for a day "
            f"(and the oldest go first when its disk is full)."
        ) from None
    if time.time() - float(record.get("saved", 0)) > TTL_S:
        raise DataError(f"Run {code} is more than a day old and has expired.")
    return folder, record


def open_run(code: str) -> tuple[bert.Bundle, dict]:
    """(model, record) of a saved run; DataError if there is none (or it has expired). The model
    is loaded once for the whole server and shared read-only (app/jobs/run_models.py): LimitError when
    the server's cap on reopened runs leaves no room."""
    folder, record = run_record_of(code)
    if not (folder / "model").is_dir():
        raise DataError(f"Run {record.get('code', code)} holds no model (it is a {record.get('kind', 'other')} run).")
    bundle = run_models.shared(*_shared_run(record.get("code", code), folder, record))
    bundle.name = record.get("name") or bundle.name
    return bundle, record


# ---- disk ----------------------------------------------------------------------------------------


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def disk_usage(whole: bool = True) -> dict[str, int]:
    """Bytes under the cache: runs, job folders, tokenized files (these count against the cap),
    and (`whole`) the whole cache, corpora and data sets fetched at set-up included."""
    root = bert_cache_dir()
    use = {name: _size(root / name) if (root / name).exists() else 0 for name in ("runs", "jobs", "tokenized")}
    use["capped"] = use["runs"] + use["jobs"] + use["tokenized"]
    if whole:
        use["cache"] = _size(root) if root.exists() else 0
    return use


def _is_builtin_tokenized(path: Path) -> bool:
    """Tokenized files are named <corpus>-<hash>-<vocab>.npz; the built-ins' corpus is a '+'-joined
    list of CORPORA names, possibly with _train / _valid. Anything else came from an upload."""
    corpus = path.name.split("-", 1)[0]
    corpus = re.sub(r"_(train|valid)$", "", corpus)
    return all(part in CORPORA for part in corpus.split("+"))


CLEANUP_EVERY_S = 600.0  # how often each backend's watchdog runs `cleanup`


def cleanup(
    max_age_s: float = TTL_S,
    max_mb: float | None = None,
    busy: set[str] = frozenset(),
    keep: set[str] = frozenset(),
    now: float | None = None,
) -> dict:
    """Remove expired and left-over files, then the oldest runs until the capped folders fit in
    `max_mb` (default BERT_EXPLORER_MAX_DISK_MB). `busy`: job folder names in use; `keep`: run
    codes not to remove for space (one just saved). Returns what was done, for the status page."""
    with _cleaning:
        return _cleanup(max_age_s, max_mb, busy, keep, now or time.time())


def _cleanup(max_age_s: float, max_mb: float | None, busy: set[str], keep: set[str], now: float) -> dict:
    root = bert_cache_dir()
    done = {"expired": 0, "leftovers": 0, "jobs": 0, "tokenized": 0, "for_space": 0, "freed": 0}

    def rm(p: Path, what: str) -> None:
        size = _size(p)
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        done[what] += 1
        done["freed"] += size

    def age(p: Path) -> float:
        try:
            return now - p.stat().st_mtime
        except OSError:
            return 0.0

    runs = root / "runs"
    done["leftovers"] += remove_stale_leftovers(runs)
    if runs.is_dir():
        for d in runs.iterdir():
            if CODE.fullmatch(d.name) and d.is_dir() and age(d) > max_age_s:
                rm(d, "expired")
    jobs = root / "jobs"
    if jobs.is_dir():  # a job folder lives while its job trains: at most the time cap
        for d in jobs.iterdir():
            if d.name not in busy and age(d) > budget.max_job_seconds() + 600:
                rm(d, "jobs")
    tok = root / "tokenized"
    done["leftovers"] += remove_stale_leftovers(tok)
    if tok.is_dir():  # uploads are tokenized in their job's folder; older copies go
        for f in tok.glob("*.npz"):
            if not _is_builtin_tokenized(f) and age(f) > 3600:
                rm(f, "tokenized")

    cap = (max_mb if max_mb is not None else budget.max_disk_mb()) * 2**20
    used = disk_usage(whole=False)["capped"]
    if used > cap and runs.is_dir():  # the oldest first, never one still safe (safe_seconds)
        oldest = sorted(
            (d for d in runs.iterdir() if CODE.fullmatch(d.name) and d.name not in keep),
            key=lambda d: d.stat().st_mtime,
        )
        for d in oldest:
            if used <= cap or age(d) < safe_seconds():
                break
            size = _size(d)
            rm(d, "for_space")
            used -= size
    done["used"] = used
    if any(done[k] for k in ("expired", "leftovers", "jobs", "tokenized", "for_space")):
        log.info("cleanup: %s", done)
    return done
