"""Background training jobs: one thread per running job, a queue of metrics, a stop event.

No `st.*` call happens here: a page's `@st.fragment(run_every=...)` calls `job.drain()` and
`job.heartbeat()`, and redraws. One `JobManager` serves the whole server (cache it with
`st.cache_resource`): at most `max_running` jobs train at once, the others wait in order.
A job belongs to the session that started it; a job whose session stops polling (tab closed)
is stopped after `heartbeat_timeout` seconds, and what it trained so far is kept.
"""
from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from bert.errors import BertExplorerError

log = logging.getLogger(__name__)

JobFn = Callable[[threading.Event], Iterator[dict]]
_ids = itertools.count(1)


def default_max_running() -> int:
    env = os.environ.get("BERT_EXPLORER_MAX_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, (os.cpu_count() or 2) // 2)


@dataclass(eq=False)
class Job:
    owner: str
    kind: str
    fn: JobFn
    title: str = ""
    id: int = field(default_factory=lambda: next(_ids))
    status: str = "queued"            # queued, running, done, stopped, error
    error: str | None = None
    result: Any = None                # what the "done" event carried under "bundle"
    metrics: list[dict] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    last_seen: float = field(default_factory=time.time)
    stop_event: threading.Event = field(default_factory=threading.Event)
    _queue: queue.Queue = field(default_factory=queue.Queue)
    _thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    def stop(self) -> None:
        """Ask the job to stop; it keeps the best model so far. Safe to call twice."""
        self.stop_event.set()

    def heartbeat(self) -> None:
        self.last_seen = time.time()

    def drain(self) -> list[dict]:
        """Move metrics the thread produced into `metrics`; return the new ones."""
        new = []
        while True:
            try:
                new.append(self._queue.get_nowait())
            except queue.Empty:
                break
        self.metrics.extend(new)
        return new

    def _run(self, on_finish: Callable[["Job"], None]) -> None:
        self.status, self.started = "running", time.time()
        try:
            for m in self.fn(self.stop_event):
                if "bundle" in m:
                    self.result = m["bundle"]
                    m = {k: v for k, v in m.items() if k != "bundle"}
                if m.get("event") == "error":
                    self.error = m.get("message", "training stopped")
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
            self.finished = time.time()
            on_finish(self)


class JobManager:
    def __init__(self, max_running: int | None = None, heartbeat_timeout: float = 90.0):
        self.max_running = max_running or default_max_running()
        self.heartbeat_timeout = heartbeat_timeout
        self._jobs: list[Job] = []
        self._lock = threading.Lock()

    def submit(self, owner: str, kind: str, fn: JobFn, title: str = "") -> Job:
        """Queue a job for `owner`. A session may have one active job per kind: a second Start
        click returns the job already running instead of starting another."""
        with self._lock:
            for job in self._jobs:
                if job.owner == owner and job.kind == kind and job.active:
                    return job
            job = Job(owner=owner, kind=kind, fn=fn, title=title)
            self._jobs.append(job)
        self._schedule()
        return job

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
        """Stop jobs whose session stopped polling; drop them from the queue if not started."""
        now = now or time.time()
        stopped = []
        with self._lock:
            for job in self._jobs:
                if job.active and now - job.last_seen > self.heartbeat_timeout:
                    job.stop()
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
                    job._thread = threading.Thread(target=job._run, args=(self._finished,),
                                                   name=f"job-{job.id}-{job.kind}", daemon=True)
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
