"""The job backend the pages use: the in-process manager (BERT_EXPLORER_BACKEND=local, the
default) or the Ray cluster's (ray). Both take a JobSpec and give jobs the pages read alike."""

from __future__ import annotations

from bert import settings
from bert.errors import BertExplorerError

BACKENDS = ("local", "ray")


class BackendError(BertExplorerError):
    """BERT_EXPLORER_BACKEND names no backend."""


def backend_name() -> str:
    name = (settings.text("BERT_EXPLORER_BACKEND") or "local").strip().lower()
    if name not in BACKENDS:
        raise BackendError(f"BERT_EXPLORER_BACKEND must be one of {', '.join(BACKENDS)}, not {name!r}.")
    return name


def ready() -> str | None:
    """None when this server can take jobs, else what stops it (shown instead of every page: in
    ray mode an unreachable cluster, or workers that do not see the shared folder). The local
    backend is always ready, and is not built here: Home draws before torch is imported."""
    try:
        if backend_name() == "local":
            return None
        job_backend()
    except BertExplorerError as e:
        return str(e)
    return None


def job_backend():
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
