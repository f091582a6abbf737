"""The job backend the pages use: the in-process manager (BERT_EXPLORER_BACKEND=local, the
default) or the Ray cluster's (ray). Both take a JobSpec and give jobs the pages read alike: what
the pages may call is `JobBackend` and `JobHandle` here, and nothing outside app/jobs/ imports a
backend itself (tests/test_layout.py). How a job runs to its end and is stopped, in both, is
app/jobs/worker.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bert import settings
from bert.errors import BertExplorerError

if TYPE_CHECKING:
    import bert
    from bert.train.events import Event

    from .spec import JobSpec

BACKENDS = ("local", "ray")


class BackendError(BertExplorerError):
    """BERT_EXPLORER_BACKEND names no backend."""


@runtime_checkable
class StopSignal(Protocol):
    """What a page reads of a job's stop: is it asked, and why (USER, TIME, SESSION)."""

    def is_set(self) -> bool: ...

    @property
    def reason(self) -> str | None: ...


@runtime_checkable
class JobHandle(Protocol):
    """One job as the pages follow it: app/jobs/local.py's `Job`, app/jobs/remote_job.py's `RemoteJob`."""

    id: Any  # what the session keeps to find it again (`JobBackend.get`)
    owner: str
    kind: str
    title: str
    student: str
    status: str  # queued, running, done, stopped, error (lost: its Ray node went away)
    error: str | None
    info: dict  # what the page shows of it; the page sets it once the job is submitted
    metrics: list  # its events (bert/train/events.py) drained so far
    started: float | None
    finished: float | None
    last_seen: float
    result: Any  # the trained model once it ended (the page takes it and sets None)

    @property
    def active(self) -> bool: ...

    @property
    def stop_event(self) -> StopSignal: ...

    @property
    def stop_reason(self) -> str | None: ...

    def stop(self, reason: str = ...) -> None: ...

    def heartbeat(self) -> None: ...

    def drain(self) -> list[Event]: ...


@runtime_checkable
class JobBackend(Protocol):
    """The calls the pages make on this server's backend (`job_backend()`)."""

    max_running: int
    max_queue: int
    last_cleanup: dict | None

    def submit_spec(
        self,
        owner: str,
        spec: JobSpec,
        session_id: str | None = None,
        base: bert.Bundle | None = None,
        corpus: Any = None,
        recorder: Any = None,
        load_base: Callable[[str], bert.Bundle] | None = None,
    ) -> tuple[JobHandle, bool]:
        """(the new job, True), or (the owner's active job of that kind, False); LimitError over a
        cap. `base`, `corpus`, `recorder`: the page's own objects, used where the job runs in this
        process; `load_base` loads the base model by its source name where it does not."""
        ...

    def active_of(self, owner: str, kind: str) -> JobHandle | None: ...

    def jobs_of(self, owner: str) -> list[JobHandle]: ...

    def get(self, owner: str, job_id: Any) -> JobHandle | None: ...

    def find(self, student: str, kind: str) -> str | None:
        """The run code of `student`'s active job of `kind`, or None."""
        ...

    def reattach(self, owner: str, code: str, kind: str, session_id: str | None = None) -> JobHandle | None:
        """Follow job `code` (started before a refresh, or on another replica) from this session,
        where the backend can; else None."""
        ...

    def queue_position(self, job: JobHandle) -> int: ...

    def reap(self, now: float | None = None) -> list[JobHandle]:
        """One round of app/jobs/worker.py's reaper; the jobs it stopped."""
        ...

    def forget(self, job: JobHandle) -> None: ...

    def poll(self, code: str, since: int = 0) -> tuple[list[dict], str]: ...

    def stop(self, code: str, reason: str = ...) -> None: ...

    def heartbeat(self, codes: list[str]) -> None: ...

    def counts(self) -> dict: ...

    def cleanup(self) -> dict: ...

    def wait(self, job: JobHandle, timeout: float = 60.0) -> bool: ...


def take_ended(jm: JobBackend, job: JobHandle) -> bool:
    """Whether `job` has ended (False while it waits or runs); an ended one is drained of its last
    events and forgotten by `jm`, so the page that collects it is the last to see it."""
    if job.active:
        return False
    job.drain()
    jm.forget(job)
    return True


def precision_refused() -> str | None:
    """Why this machine cannot train in the setting BERT_EXPLORER_PRECISION (None: it can). Only a
    value other than auto or fp32 asks torch (bert/train/precision.py), so Home still draws first."""
    value = settings.text("BERT_EXPLORER_PRECISION")
    if value.lower() in ("", "auto", "fp32"):
        return None
    from bert.train.precision import server_precision  # imports torch

    try:
        server_precision()
    except BertExplorerError as e:
        return f"the setting BERT_EXPLORER_PRECISION ({value}): {e}."
    return None


def backend_name() -> str:
    name = (settings.text("BERT_EXPLORER_BACKEND") or "local").strip().lower()
    if name not in BACKENDS:
        raise BackendError(f"BERT_EXPLORER_BACKEND must be one of {', '.join(BACKENDS)}, not {name!r}.")
    return name


def ready() -> str | None:
    """None when this server can take jobs, else what stops it (shown instead of every page: a
    training precision this machine cannot run, in ray mode an unreachable cluster, or workers that
    do not see the shared folder). The local backend is always ready, and is not built here: Home
    draws before torch is imported (the precision asks torch only when set to something but auto/fp32)."""
    try:
        refused = precision_refused()
        if refused or backend_name() == "local":
            return refused
        job_backend()
    except BertExplorerError as e:
        return str(e)
    return None


def job_backend() -> JobBackend:
    """This server's job backend (one per process)."""
    if backend_name() == "ray":
        if not settings.outside("RAY_ADDRESS"):  # before importing ray, which reads its settings once
            raise BackendError("BERT_EXPLORER_BACKEND=ray needs RAY_ADDRESS, the Ray head's host:port.")
        settings.set_outside_defaults()  # before ray is imported: it reads them once
        try:
            from .ray_backend import ray_jobs  # imports ray: only in ray mode
        except ImportError:
            raise BackendError(
                "BERT_EXPLORER_BACKEND=ray needs Ray: install requirements-cluster.txt (make setup-cluster)."
            ) from None
        return ray_jobs()
    from .local import manager

    return manager()
