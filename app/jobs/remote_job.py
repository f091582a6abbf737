"""A replica's mirror of one job on the Ray cluster (`RemoteJob`): what its actor's polls said, read
by the pages as they read a local `Job` (app/jobs/local.py), and filled by app/jobs/ray_backend.py's poller."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import ray

from .records import Report, Saved, SaveFailed, read_event
from .spec import DICTIONARY
from .worker import USER

log = logging.getLogger("bert_explorer")


class _RemoteStop:
    """What a page reads of a job's stop: is it set, why."""

    def __init__(self, job: RemoteJob):
        self._job = job

    def is_set(self) -> bool:
        return self._job.stop_reason is not None or self._job.stop_asked is not None

    @property
    def reason(self) -> str | None:
        return self._job.stop_reason or self._job.stop_asked


@dataclass(eq=False)
class RemoteJob:
    """A replica's mirror of one Ray job, read by the pages as a local `Job`."""

    owner: str
    kind: str
    id: str  # the run code
    title: str = ""
    student: str = ""
    status: str = "queued"  # queued, running, done, stopped, error, lost
    error: str | None = None
    info: dict = field(default_factory=dict)
    metrics: list = field(default_factory=list)
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    last_seen: float = field(default_factory=time.time)
    session_id: str | None = None
    node: str | None = None  # the Ray node training it
    stop_reason: str | None = None
    stop_asked: str | None = None
    actor: Any = None
    seen: int = 0  # events fetched from the actor so far
    recorder: Any = None  # the page's AttentionSnapshots, filled from the actor's (None: not recorded here)
    snapshots_after: int = -1  # the last step of a snapshot fetched so far
    _new: list = field(default_factory=list)
    _result: Any = None

    def __post_init__(self) -> None:
        self.stop_event = _RemoteStop(self)

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    def heartbeat(self) -> None:
        self.last_seen = time.time()

    def update(self, polled: dict[str, Any]) -> None:
        """What one poll of the actor said (JobActor.poll)."""
        new = [_event(d, self.kind) for d in polled["events"]]
        self.seen += len(polled["events"])
        self.metrics.extend(new)
        self._new.extend(new)
        self.started, self.finished = polled["started"], polled["finished"]
        self.error, self.stop_reason = polled["error"], polled["stop_reason"]
        self.status, self.node = polled["state"], polled["node"]
        if self.recorder is not None and polled.get("snapshots"):
            self.snapshots_after = self.recorder.extend(polled["snapshots"])

    def drain(self) -> list:
        new, self._new = self._new, []
        return new

    def stop(self, reason: str = USER) -> None:
        if self.stop_asked is None and self.stop_reason is None:
            self.stop_asked = reason
            try:
                if self.status == "queued":
                    ray.kill(self.actor)  # never started: nothing to keep
                    self.status, self.finished, self.stop_reason = "stopped", time.time(), reason
                else:
                    self.actor.stop.remote(reason)
            except Exception:  # noqa: BLE001 - already gone: the next poll says so
                log.info("stopping job %s: its actor is gone", self.id)

    @property
    def result(self):
        """The model, from the run store (shared by every node) once the job saved it (a dictionary
        job has none: its page opens its run by code, app/jobs/dictionary_job.py)."""
        if self.kind == DICTIONARY:
            return None
        if self._result is None and not self.active and any(isinstance(m, Saved) for m in self.metrics):
            from .saved_runs import open_run

            self._result = open_run(self.id)[0]
        return self._result

    @result.setter
    def result(self, value) -> None:
        self._result = value


def _event(d: dict[str, Any], kind: str):
    """A polled event dict back as an event (the job's own kinds first: report, saved, save_failed)."""
    name = d.get("event")
    if name == Report.event:
        return Report(
            seconds=d.get("seconds", 0.0), report={k: v for k, v in d.items() if k not in ("event", "seconds")}
        )
    if name == Saved.event:
        return Saved(code=d["code"])
    if name == SaveFailed.event:
        return SaveFailed(message=d.get("message", ""))
    return read_event(d, kind)
