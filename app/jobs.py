"""Background training jobs: one thread per running job, a queue of events, a stop event.

No `st.*` call happens here: a page's `@st.fragment(run_every=...)` calls `job.drain()` and
`job.heartbeat()`, and redraws. One `JobManager` serves the whole server (cache it with
`st.cache_resource`): at most `max_running` jobs train at once, the others wait in order.
A job belongs to the session that started it; a job whose session stops polling (tab closed)
is stopped after `heartbeat_timeout` seconds, and what it trained so far is kept.

Caps (app/budget.py), each refused with a message (`LimitError`) before anything is allocated:
at most `max_queue` jobs wait; a student (`student`: one browser, or one session) has at most one
job running or waiting; a job trains at most `max_seconds`, then stops itself and keeps its best
model. Why a job stopped is `job.stop_reason` (USER, TIME, SESSION), also on `job.stop_event.reason`
so the job's function can see it (e.g. skip its report when nobody is left to read it).
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from bert import settings
from bert.errors import BertExplorerError
from bert.events import Done, Error, Event

from . import budget
from .budget import LimitError

log = logging.getLogger(__name__)

USER, TIME, SESSION = "user", "time", "session"  # why a job stopped
KINDS = {"finetune": "fine-tuning", "pretrain": "pre-training"}


def stop_message(reason: str | None, max_seconds: float | None = None) -> str:
    """What the page says about a job that stopped early."""
    if reason == TIME:
        minutes = f"{(max_seconds or budget.max_job_seconds()) / 60:g}"
        return f"Stopped at this server's limit of {minutes} minutes per job; the best model so far is kept."
    if reason == SESSION:
        return "Stopped because its browser tab was closed; the model trained so far is kept."
    return "Stopped early: the best model so far is kept."


class StopEvent(threading.Event):
    """A threading.Event that also says why it was set; `hurry` when nobody is left to see the
    end (the tab was closed): bert.finetune then skips its last scoring."""

    reason: str | None = None

    @property
    def hurry(self) -> bool:
        return self.reason == SESSION

    def stop(self, reason: str = USER) -> None:
        if not self.is_set():
            self.reason = reason
        self.set()


JobFn = Callable[[threading.Event], Iterator[Event]]
_ids = itertools.count(1)


def default_max_running() -> int:
    # one job a core, each on one thread (BERT_EXPLORER_JOB_THREADS): a class taking turns gets
    # the most runs an hour (benchmarks/class_queue.py); set 1 on a 1 GB host
    return settings.whole("BERT_EXPLORER_MAX_JOBS", default=max(1, os.cpu_count() or 1))


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
    metrics: list[Event] = field(default_factory=list)  # the events (bert/events.py) drained so far
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    last_seen: float = field(default_factory=time.time)
    stop_event: StopEvent = field(default_factory=StopEvent)
    info: dict = field(default_factory=dict)
    _queue: queue.Queue = field(default_factory=queue.Queue)
    _thread: threading.Thread | None = None

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

    def over_time(self, now: float | None = None) -> bool:
        return bool(
            self.max_seconds
            and self.started
            and self.status == "running"
            and (now or time.time()) - self.started > self.max_seconds
        )

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

    def _run(self, on_finish: Callable[[Job], None]) -> None:
        self.status, self.started = "running", time.time()
        try:
            for m in self.fn(self.stop_event):
                if self.over_time() and not self.stop_event.is_set():
                    self.stop(TIME)
                if isinstance(m, Done) and m.bundle is not None:
                    self.result = m.bundle
                    m = replace(m, bundle=None)  # the session gets the model from `result`
                if isinstance(m, Error):
                    self.error = m.message or "training stopped"
                self._queue.put(m)
            if self.error:
                self.status = "error"
            else:
                self.status = "stopped" if self.stop_event.is_set() else "done"
        except BertExplorerError as e:
            self.status, self.error = "error", str(e)
        except Exception as e:  # never let a thread die silently; the page shows the message
            log.exception("job %s failed", self.id)
            self.status, self.error = "error", f"unexpected error: {type(e).__name__}: {e}"
        finally:
            self.fn = None  # its closure holds the data and the base model: free them
            self.finished = time.time()
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
                raise LimitError(
                    f"The server is busy: {waiting} jobs are already waiting for a free slot "
                    f"(at most {self.max_queue}). Try again in a few minutes."
                )
            job = Job(owner=owner, kind=kind, fn=fn, title=title, student=student, max_seconds=self.max_seconds)
            self._jobs.append(job)
        self._schedule()
        return job

    @staticmethod
    def _one_job_message(job: Job, owner: str) -> str:
        what = KINDS.get(job.kind, job.kind)
        where = "" if job.owner == owner else " in another tab or window of this browser"
        if job.stop_event.is_set():
            return f"Your {what} job{where} is stopping; start again in a few seconds."
        state = "waiting for a slot" if job.status == "queued" else "running"
        return (
            f"You already have a {what} job {state}{where}: one job per student at a time. "
            f"Stop it or let it finish first."
        )

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
        """Stop jobs whose session stopped polling (dropped from the queue if not started) and jobs
        over their time cap (in case one step takes long: the job's thread checks it too)."""
        now = now or time.time()
        stopped = []
        with self._lock:
            for job in self._jobs:
                if job.status == "queued" and job.stop_event.is_set():  # stopped while waiting:
                    job.status, job.finished, job.fn = "stopped", now, None  # ends now, not at its turn
                if job.over_time(now) and not job.stop_event.is_set():
                    job.stop(TIME)
                if job.active and now - job.last_seen > self.heartbeat_timeout:
                    job.stop(SESSION)
                    if job.status == "queued":
                        job.status, job.finished = "stopped", now
                    stopped.append(job)
        self._schedule()
        return stopped

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
        """Block until `job` finished (for tests and the command line)."""
        end = time.time() + timeout
        while job.active and time.time() < end:
            time.sleep(0.02)
        return not job.active
