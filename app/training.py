"""The training pages' side of the app: data, background jobs, results, downloads.

Jobs (DESIGN.md §5). One `TrainingJobs` (an app.jobs.JobManager) serves the whole server
(`manager()`, st.cache_resource): at most K jobs train at once (BERT_EXPLORER_MAX_JOBS, default
one per two cores), the others wait in order. A job belongs to the session that started it:
it is submitted and looked up with the session's owner id (app.train_state.owner()), so a
session never lists or reaches another's jobs. The job functions below wrap the generators of
bert/finetune.py and bert/pretrain.py; they run in the job's thread and call no `st.*`.

Liveness. A watchdog thread of the manager looks every second at each job's browser session
(Streamlit's `Runtime.is_active_session`, documented thread-safe; a closed tab's websocket closes
and the session leaves the active ones at once): a connected session keeps its job alive while
its user looks at another page; a job whose session has been gone `session_grace_s` (3 s: a
network blip reconnects within it) is stopped, and its thread ends after the current step
(at most ~3 s under the token cap, app/budget.py): the slot is free within 10 s. Without a
runtime (tests, scripts) the page's `@st.fragment` heartbeats and `heartbeat_timeout` decides.
The watchdog also forgets finished jobs nobody came back for (their model is freed) and runs
the disk cleanup (app/runs_store.py) every `CLEANUP_EVERY_S`.

Caps (app/budget.py) are checked before a job is queued: tokens per step and the memory estimate
(`check_finetune` / `check_pretrain`), one active job per student (`student_key`: the browser, so
two tabs count once), the queue length, and the time a job trains.

Run codes. Each job gets a 6-character code when it is queued (shown while it trains and on its
results). When it ends, for any reason (done, Stop, time cap, tab closed), its job function saves
the model, card, curves and report under that code (app/runs_store.py, a day), so a refresh, a
closed tab or a server restart loses nothing: "Reopen a run" on the page loads it back.

Torch threads. A job trains with BERT_EXPLORER_JOB_THREADS torch threads (default 1: on a 2-core
server one core trains, the other serves every session's inference). `torch.set_num_threads`
in the job thread also becomes the default of threads started afterwards, and Streamlit starts
a thread per script run: so while a job trains, page inference runs on one thread too. The job
restores the previous value when it ends.

Nothing a session made is lost on rerun: a finished job's model, curves and report are moved
into st.session_state (`collect`), registered with app.state.add_user_model so the other pages
can pick it, and the server-side job is forgotten. A session keeps at most MAX_MODELS models
(both pages together); the oldest is dropped from memory, and stays on disk under its code.
"""

from __future__ import annotations

import io
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
import unicodedata
import zipfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
import torch

import bert
from bert import BertExplorerError, DataError, TrainingError, settings
from bert.attention_snapshots import AttentionSnapshots
from bert.corpus import bert_cache_dir
from bert.finetune import FinetuneArgs, evaluate_classifier, finetune
from bert.labelled import LabelledData, read_labelled, stratified_sample, stratified_split
from bert.pretrain import PretrainArgs, pretrain

from . import budget, runs_store, snapshots, state
from . import train_state as ts
from .helpers import table_csv  # noqa: F401 - the training pages serve their tables through it
from .jobs import SESSION, Job, JobManager, LimitError, stop_message
from .memory import release_memory

log = logging.getLogger("bert_explorer")

FINETUNE, PRETRAIN = "finetune", "pretrain"
# The live panel's refresh interval. Each refresh rebuilds the curves (plotly) in a script run:
# about 0.1-0.2 s of processor, so at 1 s every watching tab took 10-20 % of a core from the
# class (measured by scripts/loadtest.py); 2 s halves that and still looks live.
POLL_S = 2.0
CLEANUP_EVERY_S = 600.0
MAX_MODELS = ts.MAX_MODELS


def job_threads() -> int:
    return settings.whole("BERT_EXPLORER_JOB_THREADS")


def default_finetune_base() -> str:
    """The Fine-tuning page's starting model: BERT_EXPLORER_FINETUNE_BASE if set (e.g. minilm-l6
    on a 1 GB host: the pages' model, so one model in memory instead of two), else the backend's
    default, the published sentence encoder (the better classifiers, README: Built-in models)."""
    return settings.text("BERT_EXPLORER_FINETUNE_BASE") or FinetuneArgs.checkpoint


def jobs_dir() -> Path:
    """Per-job scratch folders (pre-training checkpoints) live here, never in the repository."""
    return bert_cache_dir() / "jobs"


# ==== the server-wide job manager ==============================================================


def session_alive(session_id: str | None) -> bool | None:
    """True/False when Streamlit's runtime knows; None without a runtime (tests, scripts)."""
    if not session_id:
        return None
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        return bool(runtime.get_instance().is_active_session(session_id))
    except Exception:  # noqa: BLE001 - an internal API that may change: then rely on heartbeats
        return None


def current_session_id() -> str | None:
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        return ctx.session_id if ctx is not None else None
    except Exception:  # noqa: BLE001
        return None


def browser_id(xsrf_cookie: str | None) -> str | None:
    """A stable id of one browser from Streamlit's `_streamlit_xsrf` cookie, or None. The cookie
    ("2|mask|masked token|time") is set once per browser and sent by all its tabs; its token,
    unmasked, is the same in each. Hashed: the token itself is never kept."""
    parts = (xsrf_cookie or "").strip("\"'").split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            token = bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
        elif len(parts) == 1 and len(parts[0]) >= 16:
            token = parts[0].encode()
        else:
            return None
    except ValueError:
        return None
    import hashlib

    return hashlib.sha256(b"bert-explorer:" + token).hexdigest()[:20] if token else None


def student_key() -> str:
    """Who the one-job-per-student cap counts: this browser (all its tabs) when Streamlit's XSRF
    cookie is there (server.enableXsrfProtection, on by default), else this session. Another
    browser or a private window is another student: the queue cap still bounds them all."""
    try:
        cookie = st.context.cookies.get("_streamlit_xsrf")
    except Exception:  # noqa: BLE001 - no context (tests)
        cookie = None
    bid = browser_id(cookie)
    return f"browser:{bid}" if bid else f"session:{ts.owner()}"


class TrainingJobs(JobManager):
    """JobManager + the browser session of each job + forgetting abandoned finished jobs."""

    def __init__(
        self,
        max_running: int | None = None,
        heartbeat_timeout: float = 30.0,
        keep_finished_s: float = 1800.0,
        session_grace_s: float = 3.0,
        alive: Callable[[str | None], bool | None] = session_alive,
        **caps,
    ):
        super().__init__(max_running=max_running, heartbeat_timeout=heartbeat_timeout, **caps)
        self.keep_finished_s = keep_finished_s
        self.session_grace_s = session_grace_s
        self._alive = alive
        self._session_of: dict[int, str | None] = {}
        self._gone_since: dict[int, float] = {}
        self._watchdog: threading.Thread | None = None
        self.last_cleanup: dict | None = None

    def submit_for(
        self, owner: str, kind: str, fn, title: str = "", session_id: str | None = None, student: str | None = None
    ) -> tuple[Job, bool]:
        """(job, True) for a new job; (the running one, False) when `owner` already has an
        active job of this kind (a second Start click). LimitError over a cap."""
        existing = self.active_of(owner, kind)
        if existing is not None:
            return existing, False
        job = self.submit(owner, kind, fn, title=title, student=student)
        with self._lock:
            new = job.id not in self._session_of  # False if a concurrent click got there first
            self._session_of.setdefault(job.id, session_id)
        return job, new

    def active_of(self, owner: str, kind: str) -> Job | None:
        return next((j for j in self.jobs_of(owner) if j.kind == kind and j.active), None)

    def keep_alive(self, now: float | None = None) -> list[Job]:
        """Heartbeat every job whose browser session is still connected (a running job keeps
        training while its user is on another page; a finished one waits for them). Stop the
        active jobs whose session has been gone `session_grace_s`; forget the finished ones (they
        are saved under their run code). Returns the jobs stopped."""
        now = now or time.time()
        with self._lock:
            jobs = [(j, self._session_of.get(j.id)) for j in self._jobs]
        stopped = []
        for job, sid in jobs:
            alive = self._alive(sid)
            if alive is not False:
                self._gone_since.pop(job.id, None)
                if alive:
                    job.heartbeat()
                continue
            since = self._gone_since.setdefault(job.id, now)
            if now - since < self.session_grace_s:
                continue
            if job.active and not job.stop_event.is_set():
                job.stop(SESSION)
                stopped.append(job)
            elif not job.active:
                self.forget(job)
        return stopped

    def reap(self, now: float | None = None) -> list[Job]:
        now = now or time.time()
        stopped = self.keep_alive(now)
        stopped += super().reap(now)
        with self._lock:
            stale = [j for j in self._jobs if not j.active and now - j.last_seen > self.keep_finished_s]
            for j in stale:
                self._jobs.remove(j)
                self._session_of.pop(j.id, None)
                self._gone_since.pop(j.id, None)
        return stopped

    def forget(self, job: Job) -> None:
        super().forget(job)
        with self._lock:
            if job not in self._jobs:
                self._session_of.pop(job.id, None)
                self._gone_since.pop(job.id, None)

    def cleanup(self) -> dict:
        """The disk cleanup (app/runs_store.py), sparing the folders of jobs still active."""
        with self._lock:
            busy = {f"job-{j.id}-" for j in self._jobs if j.active}
        folders = {d.name for d in jobs_dir().iterdir()} if jobs_dir().is_dir() else set()
        in_use = {name for name in folders if any(name.startswith(b) for b in busy)}
        self.last_cleanup = {**runs_store.cleanup(busy=in_use), "at": time.time()}
        return self.last_cleanup

    def start_watchdog(self, every_s: float = 1.0, cleanup_every_s: float = CLEANUP_EVERY_S) -> None:
        """A daemon thread that reaps every `every_s` seconds and cleans the disk every
        `cleanup_every_s` (no st.* calls in it)."""
        if self._watchdog is not None:
            return

        def loop():
            last = time.time()
            while True:
                time.sleep(every_s)
                try:
                    self.reap()
                    if time.time() - last >= cleanup_every_s:
                        last = time.time()
                        self.cleanup()
                except Exception:  # noqa: BLE001 - the watchdog must never die
                    log.exception("job watchdog")

        self._watchdog = threading.Thread(target=loop, name="training-watchdog", daemon=True)
        self._watchdog.start()


@st.cache_resource(show_spinner=False)
def manager() -> TrainingJobs:
    """The one job manager of this server (shared by every session)."""
    jm = TrainingJobs()
    try:
        jm.cleanup()  # what a killed server left: job folders, half-saved runs
    except Exception:  # noqa: BLE001 - a cleanup problem must not stop the app
        log.exception("cleanup at start")
    jm.start_watchdog()
    return jm


def _job_key(kind: str) -> str:
    return ts.FT_JOB if kind == FINETUNE else ts.PT_JOB


def current_job(kind: str, jm: JobManager | None = None) -> Job | None:
    """This session's followed job of `kind` (looked up by owner: never another session's)."""
    ts.init()
    jid = st.session_state.get(_job_key(kind))
    if jid is None:
        return None
    return (jm or manager()).get(ts.owner(), jid)


@contextmanager
def notice_errors(notice_key: str, what: str):
    """Like app.errors.show_errors, for button callbacks: the message is kept under
    `notice_key` and the page shows it (a callback runs before the page draws anything)."""
    try:
        yield
    except BertExplorerError as e:
        st.session_state[notice_key] = ("error", str(e) or "That input cannot be used.")
    except Exception as e:  # noqa: BLE001 - never a traceback on screen
        log.exception("unexpected error while %s", what)
        st.session_state[notice_key] = (
            "error",
            f"Something went wrong while {what} ({type(e).__name__}); the details are in the server log.",
        )


def tick(job: Job, jm: JobManager | None = None) -> list[dict]:
    """One poll of the live panel: heartbeat, reap abandoned jobs, drain new metrics."""
    job.heartbeat()
    (jm or manager()).reap()
    return job.drain()


# ==== data ======================================================================================


def remember_upload(key: str, uploaded) -> dict | None:
    """Copy an st.file_uploader value's bytes into session_state (the widget forgets it on a
    page switch). Returns what is stored: {name, data, id} or None. The bytes are never changed."""
    ss = st.session_state
    if uploaded is not None:
        ss.get(ts.FREED, {}).pop(key, None)
        fid = getattr(uploaded, "file_id", None) or f"{uploaded.name}:{uploaded.size}"
        cur = ss.get(key)
        if not cur or cur.get("id") != fid:
            ss[key] = {"name": os.path.basename(str(uploaded.name)) or "upload", "data": uploaded.getvalue(), "id": fid}
    return ss.get(key)


def parse_upload(
    upload: dict,
    text_col: str | None = None,
    label_col: str | None = None,
    classes: list[str] | None = None,
    min_per_class: int = 2,
) -> LabelledData:
    """read_labelled on stored upload bytes, memoised per (file, columns) for this session."""
    memo = st.session_state.setdefault(ts.FT_PARSED, {})
    key = (upload["id"], text_col, label_col, tuple(classes) if classes else None, min_per_class)
    hit = memo.get(key)
    if hit is None:
        try:
            hit = read_labelled(
                upload["data"],
                upload["name"],
                text_col=text_col,
                label_col=label_col,
                classes=classes,
                min_per_class=min_per_class,
            )
        except BertExplorerError as e:
            hit = e
        # parsed copies of files no longer uploaded go; at most a few (columns tried) stay
        current = {u["id"] for u in (st.session_state.get(ts.FT_UPLOAD), st.session_state.get(ts.FT_VAL_UPLOAD)) if u}
        for k in [k for k in memo if k[0] not in current or len(memo) >= 4]:
            del memo[k]
        memo[key] = hit
    if isinstance(hit, BertExplorerError):
        raise hit
    return hit


def sniff_columns(upload: dict) -> list[str]:
    """The column names of an uploaded file even when no text/label pair could be detected
    (so the user can choose them); [] when the file cannot be read at all."""
    from bert import labelled as lab

    try:
        text, _ = lab.decode_bytes(upload["data"])
        text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        if lab._is_json(text, upload["name"]):
            columns, _, _ = lab._parse_jsonl(text, {})
        else:
            columns, _, _ = lab._parse_delimited(text, upload["name"], {})
        return list(columns)
    except Exception:  # noqa: BLE001 - the real reader says what is wrong
        return []


@st.cache_resource(max_entries=2, show_spinner="Reading the built-in data set…")
def builtin_data(name: str) -> LabelledData:
    """A built-in data set, shared by all sessions: read-only (splits and samples copy it)."""
    from bert.datasets import load_dataset

    return load_dataset(name)


@st.cache_resource(max_entries=3, show_spinner="Reading the corpus…")
def builtin_corpus(name: str):
    """A built-in pre-training corpus (bert.corpus.load_corpus), shared by all sessions: read-only."""
    from bert.corpus import load_corpus

    return load_corpus(name)


MIN_DOCUMENTS = 2


def upload_corpus(upload: dict):
    """An uploaded .txt as a corpus (memoised per file in this session); a DataError when it is
    too small to make next-sentence pairs and a validation part."""
    from bert.corpus import corpus_from_text

    memo = st.session_state.setdefault("pt_parsed", {})
    hit = memo.get(upload["id"])
    if hit is None:
        try:
            hit = corpus_from_text(upload["data"], name=safe_filename(Path(upload["name"]).stem, "upload"))
            if hit.num_documents < MIN_DOCUMENTS:
                raise DataError(
                    f"{upload['name']} gives {hit.num_documents} document(s) of "
                    f"{hit.num_sentences} sentence(s): pre-training needs at least "
                    f"{MIN_DOCUMENTS} (one to learn from, one to check on). Separate "
                    f"passages with a blank line, or give at least 40 sentences."
                )
        except BertExplorerError as e:
            hit = e
        memo.clear()
        memo[upload["id"]] = hit
    if isinstance(hit, BertExplorerError):
        raise hit
    return hit


def split_data(
    data: LabelledData,
    valid: LabelledData | None,
    valid_fraction: float,
    seed: int,
    max_train: int | None,
    max_valid: int | None,
) -> tuple[LabelledData, LabelledData]:
    """(train, valid): the uploaded validation file or a stratified split, then stratified caps."""
    if valid is None:
        train, valid = stratified_split(data, valid_fraction, seed=seed)
    else:
        train = data
    if max_train and len(train) > max_train:
        train = train.subset(
            stratified_sample(train.labels, max_train, seed=seed),
            notes=train.notes + [f"a stratified sample of {max_train:,} training texts is used"],
        )
    if max_valid and len(valid) > max_valid:
        valid = valid.subset(
            stratified_sample(valid.labels, max_valid, seed=seed + 1),
            notes=valid.notes + [f"a stratified sample of {max_valid:,} validation texts is used"],
        )
    return train, valid


def class_table(data: LabelledData) -> pd.DataFrame:
    counts = data.class_counts
    n = max(len(data), 1)
    return pd.DataFrame(
        {"class": list(counts), "texts": list(counts.values()), "share": [v / n for v in counts.values()]}
    )


def dropped_text(data: LabelledData) -> str:
    if not data.dropped:
        return "no rows dropped"
    return "dropped: " + ", ".join(f"{n:,} {why}" for why, n in data.dropped.items())


# ==== names and files ===========================================================================

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
    taken = set(state.user_models())
    name = display_name(name)
    if name not in taken:
        return name
    k = 2
    while f"{name}-{k}" in taken:
        k += 1
    return f"{name}-{k}"


def _zip_folder(folder: Path, root: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                # weights hardly compress: store them (fast); deflate the text files
                how = zipfile.ZIP_STORED if f.suffix in (".safetensors", ".bin") else zipfile.ZIP_DEFLATED
                z.write(f, f"{root}/{f.relative_to(folder).as_posix()}", compress_type=how)
    return buf.getvalue()


def model_zip(bundle: bert.Bundle, name: str, fmt: str = "ours") -> bytes:
    """The model as a zip, in our format (bert.save; bert.load opens the unzipped folder) or as a
    Hugging Face folder (bert.export_hf). Written to a temporary folder outside the repo, zipped
    in memory, the folder removed."""
    root = safe_filename(name) + ("-hf" if fmt == "hf" else "")
    with tempfile.TemporaryDirectory(prefix="bert-explorer-zip-") as d:
        out = Path(d) / root
        if fmt == "hf":
            bert.export_hf(bundle, out)
        else:
            bert.save(bundle, out, card=bundle.card)
        return _zip_folder(out, root)


# ==== fine-tuning job ============================================================================


def finetune_job(
    base: bert.Bundle,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    mistakes: int = 12,
    recorder: AttentionSnapshots | None = None,
):
    """A JobFn: the bert.finetune generator, then a "report" event (evaluate_classifier on the
    validation data: per-class scores, confusion matrix, confident mistakes). `base` may be a
    shared cached model: bert.finetune copies its weights and never changes it. A `recorder`
    (app.snapshots) gets the probe sentence's attention every few steps."""
    if recorder is not None and not recorder.bound:
        recorder.bind(base.tokenizer)

    def fn(stop: threading.Event):
        before = torch.get_num_threads()
        threads = args.threads or job_threads()
        torch.set_num_threads(threads)
        try:
            model = None
            for m in finetune(base, train, valid, args, stop, on_step=recorder):
                if m.get("event") == "done":
                    model = m.get("bundle")
                yield m
            if model is not None and getattr(stop, "reason", None) != SESSION:  # nobody to read it
                torch.set_num_threads(threads)  # finetune restored its own setting
                t = time.perf_counter()
                report = evaluate_classifier(model, valid, max_length=args.max_length, mistakes=mistakes)
                yield {"event": "report", "seconds": time.perf_counter() - t, **report}
        finally:
            torch.set_num_threads(before)
            release_memory()

    return fn


def check_finetune(base: bert.Bundle, args: FinetuneArgs, classes: int = 2) -> int:
    """The memory estimate of this fine-tuning job (MB); LimitError if it is over a cap."""
    mb = budget.finetune_mb(
        base.config, args.batch_size, args.max_length, args.freeze_embeddings, args.freeze_layers, classes
    )
    budget.check_step(args.batch_size, args.max_length, mb, "text")
    return mb


def _budget_view(batch: int, seq_len: int, mb: int, what: str) -> dict:
    """{ok, line, mb} for the page: the budget line before Start, or what is over a cap."""
    try:
        budget.check_step(batch, seq_len, mb, what)
    except LimitError as e:
        return {"ok": False, "line": str(e), "mb": mb}
    return {"ok": True, "line": budget.budget_line(batch, seq_len, mb, what), "mb": mb}


def check_finetune_settings(
    base: bert.Bundle, batch: int, max_length: int, freeze_embeddings: bool, freeze_layers: int, classes: int
) -> dict:
    mb = budget.finetune_mb(base.config, batch, max_length, freeze_embeddings, freeze_layers, classes)
    return _budget_view(batch, max_length, mb, "text")


def check_pretrain_settings(layers: int, hidden: int, heads: int, vocab: int, batch: int, seq_len: int) -> dict:
    return _budget_view(batch, seq_len, budget.pretrain_mb(layers, hidden, heads, vocab, batch, seq_len), "sequence")


def run_record(
    kind: str, events: list[dict], info: dict, status: str, error: str | None, stop_reason: str | None
) -> dict:
    """What a finished job's results view shows (kept in the session and saved with the run)."""
    return {
        "kind": kind,
        "status": status,
        "error": error,
        "stop_reason": stop_reason,
        "metrics": [m for m in events if m.get("event") not in ("report", "saved", "save_failed")],
        "report": last_event(events, "report"),
        "done": last_event(events, "done"),
        "info": info,
    }


def keep_run(fn, kind: str, code: str, info: dict):
    """A JobFn: `fn`, then what it made saved under run `code` (app/runs_store.py), whatever
    ended it, so a refresh, a closed tab or a server restart loses nothing. Then a "saved" event
    (or "save_failed" with a message: the model is still in the session, to download)."""

    def run(stop: threading.Event):
        events, bundle = [], None
        for m in fn(stop):
            if "bundle" in m:
                bundle = m["bundle"]
            events.append({k: v for k, v in m.items() if k != "bundle"})
            yield m
        if bundle is None:
            return
        error = last_event(events, "error")
        reason = getattr(stop, "reason", None) if stop.is_set() else None
        record = run_record(
            kind,
            events,
            info,
            "error" if error else "stopped" if reason else "done",
            error and error.get("message"),
            reason,
        )
        try:
            runs_store.save_run(code, bundle, {**record, "name": info.get("title") or bundle.name})
            yield {"event": "saved", "code": code}
        except Exception as e:  # noqa: BLE001 - a full disk must not lose the model in memory
            log.exception("saving run %s", code)
            yield {
                "event": "save_failed",
                "message": f"The model could not be saved on the server ({type(e).__name__}): download it to keep it.",
            }

    return run


def start_finetune(
    base: bert.Bundle,
    base_source: str,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    jm: TrainingJobs | None = None,
    recorder: AttentionSnapshots | None = None,
) -> tuple[Job, bool]:
    """Submit (or return the already active) fine-tuning job of this session. LimitError (with
    the message to show) when a cap refuses it."""
    jm = jm or manager()
    ts.init()
    existing = jm.active_of(ts.owner(), FINETUNE)
    if existing is not None:
        st.session_state[ts.FT_JOB] = existing.id
        return existing, False
    if args.threads is None:
        args.threads = job_threads()
    check_finetune(base, args, len(train.classes))
    code = runs_store.new_code()
    info = {
        "base_source": base_source,
        "base_name": base.name,
        "args": asdict(args),
        "code": code,
        "title": args.name or "",
        "train": train.summary(),
        "valid": len(valid),
        "classes": list(train.classes),
        "train_notes": list(train.notes),
        "valid_notes": list(valid.notes),
    }
    fn = keep_run(finetune_job(base, train, valid, args, recorder=recorder), FINETUNE, code, info)
    job, new = jm.submit_for(
        ts.owner(), FINETUNE, fn, title=args.name or "", session_id=current_session_id(), student=student_key()
    )
    if new and recorder is not None:
        snapshots.register(f"{args.name or 'fine-tuning'} (fine-tuning, job {job.id})", recorder)
    if new:
        job.info = info
    st.session_state[ts.FT_JOB] = job.id
    return job, new


# ==== pre-training job ===========================================================================


def _vocab_words(vocab: str) -> str:
    if vocab == "default":
        return "bert-base-uncased (30,522)"
    return f"WordPiece trained on the corpus ({vocab.split(':', 1)[-1]})"


def _pretrain_card(name: str, args: PretrainArgs, corpus_label: str, done: dict) -> str:
    return "\n".join(
        [
            f"# {name}",
            "",
            f"A small BERT pre-trained from random weights in BERT Explorer, on {corpus_label}: "
            f"{args.layers} layers, hidden size {args.hidden}, {args.heads} heads, vocabulary "
            f"{_vocab_words(args.vocab)}.",
            "",
            f"- Steps: {done.get('step', 0):,} of {args.steps:,}"
            + (" (stopped early)" if done.get("stopped") else "")
            + f", batch {args.batch_size}, sequences of {args.max_seq_length} tokens, learning rate {args.lr:g}.",
            (
                f"- Validation: masked-LM top-1 {done['mlm_top1']:.3f}, top-5 {done['mlm_top5']:.3f}, loss "
                f"{done['mlm_loss']:.3f}; next-sentence accuracy {done['nsp_acc']:.3f}."
                if "mlm_top1" in done
                else "- Validation: not measured (stopped before the end)."
            ),
            "",
            "Licence: that of the corpus it was trained on.",
            "",
        ]
    )


def _job_folder(holder: dict, wait_s: float = 5.0) -> Path:
    """bert_cache_dir()/jobs/job-<id>-<random>: named after the job once submit() has told us
    its id (it returns right after starting the thread), unique in any case."""
    end = time.monotonic() + wait_s
    while "job_id" not in holder and time.monotonic() < end:
        time.sleep(0.01)
    jobs_dir().mkdir(parents=True, exist_ok=True)
    prefix = f"job-{holder['job_id']}-" if "job_id" in holder else "job-"
    return Path(tempfile.mkdtemp(dir=jobs_dir(), prefix=prefix))


def pretrain_job(
    args: PretrainArgs,
    corpus,
    name: str,
    corpus_label: str,
    holder: dict | None = None,
    recorder: AttentionSnapshots | None = None,
):
    """A JobFn: bert.pretrain in a fresh folder under bert_cache_dir()/jobs (never in the repo);
    the "done" event's model is loaded into memory (under "bundle") and the folder removed (with
    any tokenized text in it: set args.cache_tokens False for an upload). If training fails (the
    loss became NaN), an "error" event is sent and the last saved checkpoint is kept.
    `holder["job_id"]`, set by start_pretrain, names the folder."""
    holder = {} if holder is None else holder

    def fn(stop: threading.Event):
        folder = _job_folder(holder)
        run = PretrainArgs(**{**asdict(args), "out": str(folder)})
        before = torch.get_num_threads()
        if not run.threads:
            run.threads = job_threads()
        try:
            try:
                bind = (lambda b: recorder.bind(b.tokenizer)) if recorder is not None else None
                for m in pretrain(run, stop, corpus=corpus, resume=False, on_step=recorder, on_start=bind):
                    if m.get("event") == "done":
                        bundle = bert.load(m["path"])
                        bundle.name = name
                        bundle.card = _pretrain_card(name, run, corpus_label, m)
                        bundle.source = "pre-trained in BERT Explorer"
                        m = {**m, "bundle": bundle}
                        m.pop("path", None)
                    yield m
            except TrainingError as e:
                yield {"event": "error", "message": str(e)}
                ckpt = folder / "checkpoint" / "model"
                if (ckpt / "config.json").is_file():
                    bundle = bert.load(ckpt)
                    bundle.name = name
                    bundle.card = _pretrain_card(name, run, corpus_label, {"stopped": True})
                    yield {"event": "done", "stopped": True, "from_checkpoint": True, "bundle": bundle}
        finally:
            torch.set_num_threads(before)
            shutil.rmtree(folder, ignore_errors=True)
            release_memory()

    return fn


def vocab_size(args: PretrainArgs) -> int:
    return int(args.vocab.split(":", 1)[1]) if args.vocab.startswith("train:") else 30522


def check_pretrain(args: PretrainArgs) -> int:
    """The memory estimate of this pre-training job (MB); LimitError if it is over a cap."""
    mb = budget.pretrain_mb(
        args.layers, args.hidden, args.heads, vocab_size(args), args.batch_size, args.max_seq_length
    )
    budget.check_step(args.batch_size, args.max_seq_length, mb, "sequence")
    return mb


def start_pretrain(
    args: PretrainArgs,
    corpus,
    name: str,
    corpus_label: str,
    jm: TrainingJobs | None = None,
    recorder: AttentionSnapshots | None = None,
) -> tuple[Job, bool]:
    """Submit (or return the already active) pre-training job of this session; LimitError over a cap."""
    jm = jm or manager()
    ts.init()
    existing = jm.active_of(ts.owner(), PRETRAIN)
    if existing is not None:
        st.session_state[ts.PT_JOB] = existing.id
        return existing, False
    check_pretrain(args)
    holder: dict = {}
    code = runs_store.new_code()
    info = {"args": asdict(args), "corpus": corpus_label, "code": code, "title": name}
    fn = keep_run(pretrain_job(args, corpus, name, corpus_label, holder, recorder), PRETRAIN, code, info)
    job, new = jm.submit_for(
        ts.owner(), PRETRAIN, fn, title=name, session_id=current_session_id(), student=student_key()
    )
    holder["job_id"] = job.id
    if new and recorder is not None:
        snapshots.register(f"{name} (pre-training, job {job.id})", recorder)
    if new:
        job.info = info
    st.session_state[ts.PT_JOB] = job.id
    return job, new


# ==== live view helpers ===========================================================================


def last_event(metrics, kind: str) -> dict | None:
    return next((m for m in reversed(metrics) if m.get("event") == kind), None)


def fmt_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "?"
    s = int(round(max(s, 0)))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def finetune_progress(metrics) -> tuple[float, str]:
    """(fraction done, one line: step, examples/s, time left) for the progress bar."""
    start = last_event(metrics, "start")
    tr = last_event(metrics, "train")
    if start is None:
        return 0.0, "Preparing: copying the model and tokenizing the texts…"
    total = start["steps"]
    done = last_event(metrics, "done")
    if done is not None:
        return (
            float(min(done["step"] / max(total, 1), 1.0)),
            f"{'Stopped' if done.get('stopped') else 'Finished'} at step {done['step']:,} of {total:,}: "
            f"scoring the validation texts for the report…",
        )
    if tr is None:
        return 0.0, f"Step 0 of {total:,}: the first batch is running…"
    frac = float(min(max(tr.get("progress", tr["step"] / max(total, 1)), 0.0), 1.0))
    return frac, (
        f"Step {tr['step']:,} of {total:,} · {tr.get('examples_per_s', 0):.1f} examples/s · "
        f"about {fmt_seconds(tr.get('eta_s'))} left"
    )


def pretrain_progress(metrics, total_steps: int, log_every: int) -> tuple[float, str]:
    start = last_event(metrics, "start")
    tr = last_event(metrics, "train")
    if start is None:
        return 0.0, "Preparing: building the vocabulary and tokenizing the corpus…"
    if tr is None:
        return 0.0, f"Step 0 of {total_steps:,}: the first steps are running…"
    step = tr["step"]
    per_step = tr.get("seconds", 0.0) / max(log_every, 1)
    eta = (total_steps - step) * per_step
    return (
        min(step / max(total_steps, 1), 1.0),
        f"Step {step:,} of {total_steps:,} · {tr.get('tokens_per_s', 0):,.0f} tokens/s · about {fmt_seconds(eta)} left",
    )


def probe_frame(metrics, top: int = 3) -> pd.DataFrame:
    """One row per evaluation: the probe sentence's top guesses for each [MASK]."""
    rows = []
    for m in metrics:
        if m.get("event") != "eval" or not m.get("probe"):
            continue
        row = {"step": m["step"]}
        for i, cands in enumerate(m["probe"]):
            row[f"[MASK] {i + 1}"] = "  ".join(f"{t} ({p:.0%})" for t, p in cands[:top])
        rows.append(row)
    return pd.DataFrame(rows)


# ==== collecting results ===========================================================================


def _results_key(kind: str) -> str:
    return ts.FT_RESULTS if kind == FINETUNE else ts.PT_RESULTS


def _notice_key(kind: str) -> str:
    return ts.FT_NOTICE if kind == FINETUNE else ts.PT_NOTICE


def collect(kind: str, jm: TrainingJobs | None = None) -> dict | None:
    """If this session's job of `kind` has finished, move what it made into session_state:
    returns the new result (or None). The model is registered for the other pages."""
    ts.init()
    jm = jm or manager()
    key = _job_key(kind)
    job = current_job(kind, jm)
    if job is None:
        st.session_state[key] = None
        return None
    if job.active:
        return None
    job.drain()
    info = job.info
    st.session_state[key] = None
    jm.forget(job)
    if job.result is None:
        # nothing to keep: it failed before training or was stopped while waiting
        msg = job.error or (
            "Stopped before it started: nothing was trained."
            if job.status == "stopped"
            else "The job ended without a model."
        )
        st.session_state[_notice_key(kind)] = ("error" if job.error else "info", msg)
        return None
    res = run_record(kind, job.metrics, info, job.status, job.error, job.stop_reason)
    failed = last_event(job.metrics, "save_failed")
    res.update(
        job_id=job.id, finished=job.finished, code=info.get("code"), saved=last_event(job.metrics, "saved") is not None
    )
    if failed:
        st.session_state[_notice_key(kind)] = ("error", failed["message"])
    return _add_result(kind, res, job.result, job.title or job.result.name)


def _add_result(kind: str, res: dict, bundle: bert.Bundle, name: str) -> dict:
    """Register a result's model for the other pages and keep it, at most MAX_MODELS in all."""
    name = unique_model_name(name)
    bundle.name = name
    res.update(bundle=bundle, name=name, key=state.add_user_model(name, bundle, select=False), added=time.time())
    st.session_state[_results_key(kind)].append(res)
    dropped = []
    while True:
        everything = [(r, k) for k in (FINETUNE, PRETRAIN) for r in st.session_state[_results_key(k)]]
        if len(everything) <= MAX_MODELS:
            break
        old, k = min(everything, key=lambda rk: rk[0].get("added", 0))
        st.session_state[_results_key(k)].remove(old)
        _unregister(old)
        dropped.append(old)
    if dropped:
        kept = "; ".join(f"{d['name']} (run code {d['code']})" if d.get("saved") else d["name"] for d in dropped)
        st.session_state[_notice_key(kind)] = (
            "info",
            f"This session keeps its last {MAX_MODELS} models in memory: {kept} was removed. "
            f"Reopen a run with its code (for a day), or download a model to keep it.",
        )
    return res


def reopen(text: str) -> dict:
    """A saved run back in this session from its run code (typed by the student: checked to be
    exactly 6 letters and digits). InputError / DataError with a message otherwise."""
    ts.init()
    code = runs_store.parse_code(text)
    for kind in (FINETUNE, PRETRAIN):
        for res in st.session_state[_results_key(kind)]:
            if res.get("code") == code:
                return res
    bundle, record = runs_store.open_run(code)
    kind = record.get("kind")
    if kind not in (FINETUNE, PRETRAIN):
        raise DataError(f"Run {code} cannot be opened here.")
    res = {**record, "job_id": code, "finished": record.get("saved"), "saved": True, "code": code}
    return _add_result(kind, res, bundle, record.get("name") or bundle.name)


def reopen_callback(kind: str, widget_key: str, select_key: str) -> None:
    """The "Reopen" button: the run goes to its page's results (and is selected there)."""
    with notice_errors(_notice_key(kind), "reopening the run"):
        res = reopen(st.session_state.get(widget_key, ""))
        if res["kind"] == kind:
            st.session_state[select_key] = res["name"]
            st.session_state[_notice_key(kind)] = ("info", f"Run {res['code']} is open: {res['name']}.")
        else:
            other = "Pre-training" if res["kind"] == PRETRAIN else "Fine-tuning"
            st.session_state[_notice_key(kind)] = (
                "info",
                f"Run {res['code']} ({res['name']}) is a {other.lower()} run: it is on the {other} "
                f"page, and in the sidebar's model list.",
            )


def _unregister(res: dict) -> None:
    name = res.get("name")
    models = state.user_models()
    if name in models and models[name] is res.get("bundle"):
        del models[name]
        st.session_state.get(state.USER_MODEL_IDS, {}).pop(name, None)


def results(kind: str) -> list[dict]:
    ts.init()
    return st.session_state[_results_key(kind)]


def result_status(res: dict) -> str | None:
    """The line a result shows when it stopped early (why), or None."""
    if res.get("status") == "stopped" or (res.get("done") or {}).get("stopped"):
        if res.get("kind") == PRETRAIN and res.get("stop_reason") in (None, "user"):
            return "Stopped early: the model as it was then is kept."
        return stop_message(res.get("stop_reason"))
    return None


def run_code_line(res: dict) -> str | None:
    if not res.get("saved") or not res.get("code"):
        return None
    until = time.strftime("%H:%M on %d %b", time.localtime((res.get("finished") or time.time()) + runs_store.TTL_S))
    return (
        f"Run code **{res['code']}**: this run is saved on the server until {until}. After a refresh "
        f"or a restart, type the code under “Reopen a run” to get it back."
    )


def free_uploads(*keys: str) -> None:
    """Once a job has its data, drop the uploaded files' bytes and parsed copies from this
    session (the job holds the texts it needs), and reset the upload widgets (Streamlit then
    frees its own copy of the file)."""
    if not keys:
        return
    ss = st.session_state
    for key in keys:
        up = ss.get(key)
        if up:
            ss[key] = None
            ss.setdefault(ts.FREED, {})[key] = up["name"]
    ss[ts.FT_PARSED] = {}
    ss.pop("pt_parsed", None)
    ss[ts.UPLOAD_GEN] = ss.get(ts.UPLOAD_GEN, 0) + 1


def use_model(key: str) -> None:
    """Button callback: make a result the model of the other pages."""
    st.session_state[state.MODEL_SOURCE] = key


# ==== results views ================================================================================


def per_class_frame(report: dict) -> pd.DataFrame:
    rows = [
        {"class": c, "precision": v["precision"], "recall": v["recall"], "F1": v["f1"], "texts": v["support"]}
        for c, v in report["per_class"].items()
    ]
    return pd.DataFrame(rows, columns=["class", "precision", "recall", "F1", "texts"])


def mistakes_frame(report: dict) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"text": m["text"], "true": m["true"], "predicted": m["predicted"], "confidence": m["prob"]}
            for m in report.get("mistakes", [])
        ],
        columns=["text", "true", "predicted", "confidence"],
    )


def cls_attention(base: bert.Bundle, tuned: bert.Bundle, text: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """[CLS]'s attention in the last layer, mean over heads, for the base and the fine-tuned
    model on one text: (tokens, before (T,), after (T,))."""
    from bert.analysis import attentions_of

    text = (text or "").strip()
    if not text:
        raise bert.InputError("Type a sentence to compare.")
    text = text[:2000]
    tok_a, att_a = attentions_of(base, text)  # (L, H, T, T)
    tok_b, att_b = attentions_of(tuned, text)
    if tok_a != tok_b:
        raise bert.InputError(
            "The two models split this text differently, so their attention cannot be compared token by token."
        )
    return tok_a, att_a[-1].mean(0)[0], att_b[-1].mean(0)[0]


def base_bundle(source: str | None) -> bert.Bundle | None:
    """The model a run started from (a built-in, a folder, or this session's own), if still there."""
    if not source:
        return None
    if source.startswith("session:"):
        return state.user_models().get(source[len("session:") :])
    from .resources import load_model

    return load_model(source)
