"""The local backend: training jobs in this server's own threads (BERT_EXPLORER_BACKEND=local, the default).

`Job`: one thread per running job, a queue of its events, a stop event. `JobManager`: at most
`max_running` jobs train at once, the others wait in order. No `st.*` call happens here: a page's
`@st.fragment(run_every=...)` calls `job.drain()` and `job.heartbeat()`, and redraws. A job
belongs to the session that started it: it is submitted and looked up with the session's owner
id (app.run_session.session.owner()), so a session never lists or reaches another's jobs; a job whose
session stops polling (tab closed) is stopped after `heartbeat_timeout` seconds, and what it
trained so far is kept.

Caps (app/jobs/budget.py), each refused with a message (`LimitError`) before anything is allocated:
at most `max_queue` jobs wait; a student (`student`: one browser, or one session) has at most one
job running or waiting; a job trains at most `max_seconds`, then stops itself and keeps its best
model. Why a job stopped is `job.stop_reason` (USER, TIME, SESSION, app/jobs/worker.py), also on
`job.stop_event.reason` so the job's function can see it (e.g. skip its report when nobody is left).
How a job runs to its end and when it is stopped is app/jobs/worker.py's, shared with the Ray backend.

`TrainingJobs` (a JobManager) is what the pages use: one serves the whole server (`manager()`, a
process-wide singleton; BERT_EXPLORER_MAX_JOBS at once, default one per core). Liveness: a
watchdog thread runs the reaper (app/jobs/worker.py) every second over each job's browser session
(Streamlit's `Runtime.is_active_session`, documented thread-safe; a closed tab's websocket closes
and the session leaves the active ones at once): a connected session keeps its job alive while its
user looks at another page; a job whose session has been gone `session_grace_s` (a network
blip reconnects within it) is stopped, and its thread ends after the current step (the slot is free
within a step). Without a runtime (tests, scripts) the page's `@st.fragment` heartbeats and
`heartbeat_timeout` decides. The watchdog also forgets finished jobs nobody came back for (their
model is freed) and runs the disk cleanup (app/jobs/saved_runs.py) every `CLEANUP_EVERY_S`.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from bert import settings
from bert.train.events import Done, Event

from ..server.memory import release_memory
from . import budget, saved_runs
from .budget import LimitError
from .saved_runs import CLEANUP_EVERY_S
from .spec import KINDS, JobSpec, busy_message, one_job_message
from .worker import USER, Reaper, StopEvent, drive, jobs_dir, run_job, session_alive

log = logging.getLogger("bert_explorer")

JobFn = Callable[[threading.Event], Iterator[Event]]
_ids = itertools.count(1)


def default_max_running() -> int:
    # one job a core, each on one thread (BERT_EXPLORER_JOB_THREADS): a class taking turns gets
    # the most runs an hour (benchmarks/class_queue.py); set 1 on a host with little memory
    return settings.whole("BERT_EXPLORER_MAX_JOBS", default=max(1, os.cpu_count() or 1))


def yield_to_pages() -> None:
    """Lower this thread's priority by BERT_EXPLORER_JOB_NICE (Linux gives each thread its own):
    a job trains at full speed on an idle processor and gives way to the pages' runs, whose
    students wait on the screen. Raising it back needs privileges, so it is done only in a job's
    own thread, which ends with the job."""
    nice = settings.whole("BERT_EXPLORER_JOB_NICE", minimum=0)
    if nice and sys.platform == "linux":
        tid = threading.get_native_id()
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
        except OSError as e:  # a sandbox that forbids it: the job runs at the pages' priority
            log.warning("training thread keeps its priority: %s", e)


@dataclass(eq=False)
class Job:
    owner: str
    kind: str
    fn: JobFn | None
    title: str = ""
    student: str = ""  # who may have only one active job (default: the owner)
    max_seconds: float | None = None  # training time cap; then it stops itself (TIME)
    id: int = field(default_factory=lambda: next(_ids))
    status: str = "queued"  # queued, running, done, stopped, error
    error: str | None = None
    result: Any = None  # the Done event's `bundle`
    metrics: list[Event] = field(default_factory=list)  # the events (bert/train/events.py) drained so far
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    last_seen: float = field(default_factory=time.time)
    stop_event: StopEvent = field(default_factory=StopEvent)
    info: dict = field(default_factory=dict)
    _queue: queue.Queue = field(default_factory=queue.Queue)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.stop_event.job_id = self.id

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    @property
    def stop_reason(self) -> str | None:
        return self.stop_event.reason if self.stop_event.is_set() else None

    def stop(self, reason: str = USER) -> None:
        """Ask the job to stop; it keeps the best model so far. Safe to call twice (the first
        reason is kept)."""
        self.stop_event.stop(reason)

    def heartbeat(self) -> None:
        self.last_seen = time.time()

    def drain(self) -> list[Event]:
        """Move events the thread produced into `metrics`; return the new ones."""
        new = []
        while True:
            try:
                new.append(self._queue.get_nowait())
            except queue.Empty:
                break
        self.metrics.extend(new)
        return new

    def _emit(self, m: Event) -> None:
        if isinstance(m, Done) and m.bundle is not None:
            self.result = m.bundle
            m = replace(m, bundle=None)  # the session gets the model from `result`
        self._queue.put(m)

    def _run(self, on_finish: Callable[[Job], None]) -> None:
        self.status, self.started = "running", time.time()
        yield_to_pages()
        try:
            self.status = drive(self, self.fn, self._emit, self.id)
        finally:
            self.fn = None  # its closure holds the data and the base model: free them
            self.finished = time.time()
            release_memory()  # before the next job starts: what this one freed goes back first
            on_finish(self)


class JobManager:
    def __init__(
        self,
        max_running: int | None = None,
        heartbeat_timeout: float = 90.0,
        max_queue: int | None = None,
        max_seconds: float | None = None,
    ):
        self.max_running = max_running or default_max_running()
        self.heartbeat_timeout = heartbeat_timeout
        self.max_queue = max_queue or budget.max_queue()
        self.max_seconds = max_seconds or budget.max_job_seconds()
        self._jobs: list[Job] = []
        self._lock = threading.Lock()
        # no browser sessions here (TrainingJobs has them): the page's heartbeats decide
        self.reaper = Reaper(heartbeat_timeout, alive=lambda session_id: None, max_seconds=self.max_seconds)

    def _session_of_job(self, job: Job) -> str | None:
        return None

    def submit(self, owner: str, kind: str, fn: JobFn, title: str = "", student: str | None = None) -> Job:
        """Queue a job for `owner`. A second Start click (same owner and kind, still active) returns
        the job already there. Raises LimitError when `student` (default: the owner) already has an
        active job, or when the queue is full."""
        student = student or owner
        with self._lock:
            for job in self._jobs:
                if job.owner == owner and job.kind == kind and job.active:
                    return job
            mine = next((j for j in self._jobs if j.student == student and j.active), None)
            if mine is not None:
                raise LimitError(self._one_job_message(mine, owner))
            running = sum(1 for j in self._jobs if j.status == "running")
            waiting = sum(1 for j in self._jobs if j.status == "queued" and not j.stop_event.is_set())
            if running >= self.max_running and waiting >= self.max_queue:
                raise LimitError(busy_message(waiting, self.max_queue))
            job = Job(owner=owner, kind=kind, fn=fn, title=title, student=student, max_seconds=self.max_seconds)
            self._jobs.append(job)
        self._schedule()
        return job

    @staticmethod
    def _one_job_message(job: Job, owner: str) -> str:
        where = "" if job.owner == owner else " in another tab or window of this browser"
        if job.stop_event.is_set():
            return f"Your {KINDS.get(job.kind, job.kind)} job{where} is stopping; start again in a few seconds."
        return one_job_message(job.kind, job.status, where)

    def counts(self) -> dict:
        """Jobs running and waiting, and the caps (for the status page)."""
        with self._lock:
            running = sum(1 for j in self._jobs if j.status == "running")
            waiting = sum(1 for j in self._jobs if j.status == "queued")
        return {
            "running": running,
            "queued": waiting,
            "max_running": self.max_running,
            "max_queue": self.max_queue,
            "max_minutes": self.max_seconds / 60,
        }

    def jobs_of(self, owner: str) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs if j.owner == owner]

    def get(self, owner: str, job_id: int) -> Job | None:
        """A job by id, only if it belongs to `owner`: another session never sees it."""
        with self._lock:
            return next((j for j in self._jobs if j.id == job_id and j.owner == owner), None)

    def queue_position(self, job: Job) -> int:
        """0 when running or finished; 1 = next to start, and so on."""
        with self._lock:
            waiting = [j for j in self._jobs if j.status == "queued"]
        return waiting.index(job) + 1 if job in waiting else 0

    def running(self) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs if j.status == "running"]

    def reap(self, now: float | None = None) -> list[Job]:
        """One round of the reaper (app/jobs/worker.py): stop the jobs nobody follows any more
        and those over their time cap (in case one step takes long: the job's thread checks it
        too); a job stopped while waiting leaves the queue now. Returns the jobs stopped."""
        now = now or time.time()
        with self._lock:
            jobs = [(j, self._session_of_job(j)) for j in self._jobs]
        sweep = self.reaper.sweep(jobs, now)
        for job in sweep.gone:  # finished, its session gone: saved under its run code
            self.forget(job)
        with self._lock:
            for job in self._jobs:
                if job.status == "queued" and job.stop_event.is_set():  # stopped while waiting:
                    job.status, job.finished, job.fn = "stopped", now, None  # ends now, not at its turn
        self._schedule()
        return sweep.stopped

    def forget(self, job: Job) -> None:
        with self._lock:
            if not job.active and job in self._jobs:
                self._jobs.remove(job)

    def _schedule(self) -> None:
        with self._lock:
            running = sum(1 for j in self._jobs if j.status == "running")
            for job in self._jobs:
                if running >= self.max_running:
                    break
                if job.status == "queued" and job._thread is None:
                    if job.stop_event.is_set():
                        job.status, job.finished = "stopped", time.time()
                        continue
                    job.status = "running"
                    job._thread = threading.Thread(
                        target=job._run, args=(self._finished,), name=f"job-{job.id}-{job.kind}", daemon=True
                    )
                    job._thread.start()
                    running += 1

    def _finished(self, job: Job) -> None:
        self._schedule()

    def wait(self, job: Job, timeout: float = 60.0) -> bool:
        """Block until `job` finished and its thread has ended (for tests and the command line): its
        thread frees the job's model after the job is done, and a process that exits meanwhile aborts
        (the thread is stopped inside torch's freeing of a tensor)."""
        end = time.time() + timeout
        while job.active and time.time() < end:
            time.sleep(0.02)
        if job._thread is not None:
            job._thread.join(max(0.0, end - time.time()))
        return not job.active


# ---- the manager the pages use ----


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
        self.reaper = Reaper(heartbeat_timeout, session_grace_s, alive, max_seconds=self.max_seconds)
        self._session_of: dict[int, str | None] = {}
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

    def submit_spec(
        self,
        owner: str,
        spec: JobSpec,
        session_id: str | None = None,
        base=None,
        corpus=None,
        recorder=None,
        load_base=None,
    ) -> tuple[Job, bool]:
        """`submit_for` of `run_job(spec)`, with this process's own base model, corpus and attention
        recorder when the page has them (else resolved from the spec: the base by `load_base`)."""

        def fn(stop):
            return run_job(spec, stop, base=base, corpus=corpus, recorder=recorder, load_base=load_base)

        return self.submit_for(owner, spec.kind, fn, title=spec.title, session_id=session_id, student=spec.student)

    # ---- the job backend interface by run code (app/jobs/ray_backend.py has the same) ----
    def _by_code(self, code: str) -> Job | None:
        with self._lock:
            return next((j for j in self._jobs if j.info.get("code") == code), None)

    def find(self, student: str, kind: str) -> str | None:
        """The run code of `student`'s active job of `kind`, or None."""
        with self._lock:
            job = next((j for j in self._jobs if j.student == student and j.kind == kind and j.active), None)
        return job.info.get("code") if job is not None else None

    def poll(self, code: str, since: int = 0) -> tuple[list[dict], str]:
        """(events as dicts after the first `since`, state) of job `code`; "lost" when unknown."""
        job = self._by_code(code)
        if job is None:
            return [], "lost"
        job.drain()
        return [m.to_dict() for m in job.metrics[since:]], job.status

    def stop(self, code: str, reason: str = USER) -> None:
        job = self._by_code(code)
        if job is not None:
            job.stop(reason)

    def heartbeat(self, codes: list[str]) -> None:
        for code in codes:
            job = self._by_code(code)
            if job is not None:
                job.heartbeat()

    def active_of(self, owner: str, kind: str) -> Job | None:
        return next((j for j in self.jobs_of(owner) if j.kind == kind and j.active), None)

    def reattach(self, owner: str, code: str, kind: str, session_id: str | None = None) -> Job | None:
        """None: a job here is followed by the session that started it, by its number."""
        return None

    def _session_of_job(self, job: Job) -> str | None:
        return self._session_of.get(job.id)

    def reap(self, now: float | None = None) -> list[Job]:
        """The reaper's round (JobManager.reap), then forget the finished jobs nobody came back
        for in `keep_finished_s` (their model is freed; the run is saved under its code)."""
        now = now or time.time()
        stopped = super().reap(now)
        with self._lock:
            stale = [j for j in self._jobs if not j.active and now - j.last_seen > self.keep_finished_s]
            for j in stale:
                self._jobs.remove(j)
                self._session_of.pop(j.id, None)
                self.reaper.forget(j.id)
        return stopped

    def forget(self, job: Job) -> None:
        super().forget(job)
        with self._lock:
            if job not in self._jobs:
                self._session_of.pop(job.id, None)
                self.reaper.forget(job.id)

    def cleanup(self) -> dict:
        """The disk cleanup (app/jobs/saved_runs.py), sparing the folders of jobs still active."""
        with self._lock:
            busy = {f"job-{j.id}-" for j in self._jobs if j.active}
        root = jobs_dir()
        folders = {d.name for d in root.iterdir()} if root.is_dir() else set()
        in_use = {name for name in folders if any(name.startswith(b) for b in busy)}
        self.last_cleanup = {**saved_runs.cleanup(busy=in_use), "at": time.time()}
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


_manager: TrainingJobs | None = None
_manager_lock = threading.Lock()


def manager() -> TrainingJobs:
    """The one job manager of this server (shared by every session). Module-level, not in
    st.cache_resource: nothing a client sends can clear it (app/server/guard.py)."""
    global _manager
    with _manager_lock:
        if _manager is None:
            jm = TrainingJobs()
            try:
                jm.cleanup()  # what a killed server left: job folders, half-saved runs
            except Exception:  # noqa: BLE001 - a cleanup problem must not stop the app
                log.exception("cleanup at start")
            jm.start_watchdog()
            _manager = jm
        return _manager
