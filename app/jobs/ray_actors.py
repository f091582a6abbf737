"""What runs on the Ray cluster (app/jobs/ray_backend.py starts and polls it): one `Registry`
actor holding the class-wide caps for every replica, and one `JobActor` a job.

The registry is one actor, so its methods run one at a time: two replicas never both queue a
student's second job. A job's actor runs the same `run_job(spec)` as the local backend in a
thread of its own, driven to its end as there (app/jobs/worker.py: the time cap, Stop, the end
state), and keeps its events as `to_dict()` dicts.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import ray

from bert.train.attention_snapshots import AttentionSnapshots

from .spec import JobSpec, busy_message, one_job_message
from .worker import USER, StopEvent, drive

NAMESPACE = "bert-explorer"
REGISTRY = "registry"


@ray.remote(num_cpus=0)
class Registry:
    """Who has which job, across every replica: the caps of app/jobs/budget.py, class-wide."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}  # code -> student, kind, owner, state, times

    def enqueue(self, code: str, student: str, kind: str, owner: str, max_queue: int, slots: int) -> str | None:
        """None when the job may be queued (it is then registered), else the message to show."""
        active = [j for j in self.jobs.values() if j["state"] in ("queued", "running")]
        mine = next((j for j in active if j["student"] == student), None)
        if mine is not None:
            where = "" if mine["owner"] == owner else " in another tab, window or replica of this browser"
            return one_job_message(mine["kind"], mine["state"], where)
        running = sum(1 for j in active if j["state"] == "running")
        waiting = sum(1 for j in active if j["state"] == "queued")
        if running >= slots and waiting >= max_queue:
            return busy_message(waiting, max_queue)
        now = time.time()
        self.jobs[code] = {"student": student, "kind": kind, "owner": owner, "state": "queued", "at": now, "seen": now}
        return None

    def set_state(self, code: str, state: str) -> None:
        if code in self.jobs:
            self.jobs[code]["state"] = state
            self.jobs[code]["changed"] = time.time()

    def find(self, student: str, kind: str) -> str | None:
        for code, j in self.jobs.items():
            if j["student"] == student and j["kind"] == kind and j["state"] in ("queued", "running"):
                return code
        return None

    def adopt(self, code: str, owner: str) -> None:
        if code in self.jobs:
            self.jobs[code]["owner"] = owner

    def collected(self, code: str, owner: str) -> None:
        """The session following job `code` has all its events: its actor gives its core back.
        A replica whose session was followed elsewhere since (adopt) leaves it to that one."""
        j = self.jobs.get(code)
        if j is not None and j["owner"] == owner:
            try:
                ray.kill(ray.get_actor(code, namespace=NAMESPACE))
            except Exception:  # noqa: BLE001 - already gone
                pass

    def heartbeat(self, codes: list[str]) -> None:
        now = time.time()
        for c in codes:
            if c in self.jobs:
                self.jobs[c]["seen"] = now

    def state_of(self, code: str) -> str | None:
        j = self.jobs.get(code)
        return j["state"] if j is not None else None

    def position(self, code: str) -> int:
        queued = sorted((j["at"], c) for c, j in self.jobs.items() if j["state"] == "queued")
        return next((i + 1 for i, (_, c) in enumerate(queued) if c == code), 0)

    def counts(self) -> dict[str, int]:
        states = [j["state"] for j in self.jobs.values()]
        return {"running": states.count("running"), "queued": states.count("queued")}

    def unseen(self, timeout_s: float) -> list[str]:
        """Active jobs no replica heartbeated for `timeout_s` (their sessions are gone)."""
        now = time.time()
        return [c for c, j in self.jobs.items() if j["state"] in ("queued", "running") and now - j["seen"] > timeout_s]

    def forget(self, code: str) -> None:
        self.jobs.pop(code, None)

    def expired(self, keep_s: float) -> list[str]:
        now = time.time()
        return [
            c
            for c, j in self.jobs.items()
            if j["state"] not in ("queued", "running") and now - j.get("changed", now) > keep_s
        ]


@ray.remote(num_cpus=1, max_restarts=0)
class JobActor:
    """One job: `run_job(spec)` in a thread, its events kept as dicts for any replica to poll."""

    def __init__(self, spec: dict[str, Any], max_seconds: float, load_base=None) -> None:
        from .worker import run_job  # on the worker

        self.spec = JobSpec.from_dict(spec)
        self.load_base = load_base  # the base model by its source name (the replica's loader)
        self.max_seconds = max_seconds
        self.events: list[dict[str, Any]] = []
        self.state, self.error = "running", None
        self.started, self.finished = time.time(), None
        self.stop_event = StopEvent()
        # attention over training, recorded here; replicas fetch the new snapshots with each poll
        self.recorder = AttentionSnapshots.from_settings(self.spec.probe) if self.spec.probe else None
        self.registry = ray.get_actor(REGISTRY, namespace=NAMESPACE)
        self.registry.set_state.remote(self.spec.code, "running")
        self._thread = threading.Thread(target=self._run, args=(run_job,), name=f"job-{self.spec.code}", daemon=True)
        self._thread.start()

    def _run(self, run_job) -> None:
        try:
            self.state = drive(
                self,
                lambda stop: run_job(self.spec, stop, recorder=self.recorder, load_base=self.load_base),
                lambda m: self.events.append(m.to_dict()),
                self.spec.code,
            )
        finally:
            self.finished = time.time()
            self.registry.set_state.remote(self.spec.code, self.state)

    def poll(self, since: int, snapshots_after: int | None = None) -> dict[str, Any]:
        """Events after the first `since`, and (when asked) attention snapshots of steps after `snapshots_after`."""
        state = self.state  # first: once it has ended, every event (and snapshot) is here
        return {
            "snapshots": None
            if self.recorder is None or snapshots_after is None
            else self.recorder.after(snapshots_after),
            "events": self.events[since:],
            "state": state,
            "error": self.error,
            "stop_reason": self.stop_event.reason if self.stop_event.is_set() else None,
            "started": self.started,
            "finished": self.finished,
            "node": ray.get_runtime_context().get_node_id(),
        }

    def stop(self, reason: str = USER) -> None:
        self.stop_event.stop(reason)


@ray.remote(num_cpus=0)
def write_marker(path: str) -> str:
    """A file written by a worker: the replica checks it sees it (one folder for all nodes)."""
    Path(path).write_text("seen by a worker\n", encoding="utf-8")
    return ray.get_runtime_context().get_node_id()
