"""The server-wide job manager of the training pages, its watchdog, and this session's jobs.

One `TrainingJobs` (an app.jobs.JobManager) serves the whole server (`manager()`,
st.cache_resource): at most K jobs train at once (BERT_EXPLORER_MAX_JOBS, default one per two
cores), the others wait in order. A job belongs to the session that started it: it is submitted
and looked up with the session's owner id (app.train_state.owner()), so a session never lists or
reaches another's jobs.

Liveness. A watchdog thread of the manager looks every second at each job's browser session
(Streamlit's `Runtime.is_active_session`, documented thread-safe; a closed tab's websocket closes
and the session leaves the active ones at once): a connected session keeps its job alive while
its user looks at another page; a job whose session has been gone `session_grace_s` (3 s: a
network blip reconnects within it) is stopped, and its thread ends after the current step
(at most ~3 s under the token cap, app/budget.py): the slot is free within 10 s. Without a
runtime (tests, scripts) the page's `@st.fragment` heartbeats and `heartbeat_timeout` decides.
The watchdog also forgets finished jobs nobody came back for (their model is freed) and runs
the disk cleanup (app/runs_store.py) every `CLEANUP_EVERY_S`.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from bert import BertExplorerError, settings
from bert.corpus import bert_cache_dir

from .. import runs_store
from .. import train_state as ts
from ..jobs import SESSION, Job, JobManager

log = logging.getLogger("bert_explorer")

FINETUNE, PRETRAIN = "finetune", "pretrain"
# The live panel's refresh interval. Each refresh rebuilds the curves (plotly) in a script run:
# about 0.1-0.2 s of processor, so at 1 s every watching tab took 10-20 % of a core from the
# class (measured by scripts/loadtest.py); 2 s halves that and still looks live.
POLL_S = 2.0
CLEANUP_EVERY_S = 600.0


def job_threads() -> int:
    return settings.whole("BERT_EXPLORER_JOB_THREADS")


def jobs_dir() -> Path:
    """Per-job scratch folders (pre-training checkpoints) live here, never in the repository."""
    return bert_cache_dir() / "jobs"


def current_jobs_dir() -> Path:
    """`jobs_dir()` as the package exports it when called, so pointing app.training.jobs_dir
    elsewhere (the tests do) moves every job folder."""
    return sys.modules[__package__].jobs_dir()


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
        root = current_jobs_dir()
        folders = {d.name for d in root.iterdir()} if root.is_dir() else set()
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


def job_key(kind: str) -> str:
    """The session-state key of the job of `kind` this session follows."""
    return ts.FT_JOB if kind == FINETUNE else ts.PT_JOB


def current_job(kind: str, jm: JobManager | None = None) -> Job | None:
    """This session's followed job of `kind` (looked up by owner: never another session's)."""
    ts.init()
    jid = st.session_state.get(job_key(kind))
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


def live_job(kind: str) -> Job | None:
    """The live panel's job of `kind`, after one tick; None when this session follows none. When
    the job has finished, the page runs again instead (a full run collects the result)."""
    job = current_job(kind)
    if job is None:
        return None
    tick(job)
    if not job.active:
        st.rerun()
    return job
