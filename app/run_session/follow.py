"""This session's training jobs: submitting one (or finding the one already active), which one
each page follows (by the session's owner id, so a session never reaches another's; who counts as
one student is app/students.py's), and the live panel's poll.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import streamlit as st

import bert
from bert import BertExplorerError
from bert.train.attention_snapshots import AttentionSnapshots

from .. import students
from ..jobs.backend import JobBackend, JobHandle, job_backend
from ..jobs.spec import DICTIONARY, FINETUNE, PRETRAIN, TASK_HEAD, JobSpec
from ..model_sources import load_model
from ..server import new_students
from . import session as ts
from . import snapshots

log = logging.getLogger("bert_explorer")

# The live panel's refresh interval. Each refresh rebuilds the curves (plotly) in a script run
# (a fraction of a second of processor, scripts/loadtest.py measures it): a refresh every
# POLL_S keeps a class of watching tabs cheap and still looks live.
POLL_S = 2.0


def current_session_id() -> str | None:
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        return ctx.session_id if ctx is not None else None
    except Exception:  # noqa: BLE001
        return None


def job_key(kind: str) -> str:
    """The session-state key of the job of `kind` this session follows."""
    return {FINETUNE: ts.FT_JOB, TASK_HEAD: ts.HD_JOB, DICTIONARY: ts.DC_JOB}.get(kind, ts.PT_JOB)


def current_job(kind: str, jm: JobBackend | None = None) -> JobHandle | None:
    """This session's followed job of `kind` (looked up by owner: never another session's)."""
    ts.init_training()
    jm = jm or job_backend()
    jid = st.session_state.get(job_key(kind))
    if jid is None:
        return _reattached(kind, jm)
    return jm.get(students.owner(), jid)


def _reattached(kind: str, jm: JobBackend) -> JobHandle | None:
    """This student's job started from another replica or before a refresh (in ray mode the
    registry knows it by the browser), followed from this session from now on; None where the
    backend follows a job only from the session that started it (local)."""
    code = jm.find(students.student_key(), kind)
    if code is None:
        return None
    job = jm.reattach(students.owner(), code, kind, session_id=current_session_id())
    if job is not None:
        st.session_state[job_key(kind)] = job.id
    return job


@contextmanager
def notice_errors(notice_key: str, what: str):
    """Like app.ui.errors.show_errors, for button callbacks: the message is kept under
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


def tick(job: JobHandle, jm: JobBackend | None = None) -> list[dict]:
    """One poll of the live panel: heartbeat, reap abandoned jobs, drain new metrics."""
    job.heartbeat()
    (jm or job_backend()).reap()
    return job.drain()


def live_job(kind: str) -> JobHandle | None:
    """The live panel's job of `kind`, after one tick; None when this session follows none. When
    the job has finished, the page runs again instead (a full run collects the result)."""
    job = current_job(kind)
    if job is None:
        return None
    tick(job)
    if not job.active:
        st.rerun()
    return job


# what the attention snapshots of a kind of job are called
SNAPSHOT_NAMES = {FINETUNE: "fine-tuning", PRETRAIN: "pre-training"}


def active_job(jm: JobBackend, kind: str) -> JobHandle | None:
    """This session's active job of `kind` (then the job its page follows), or None."""
    ts.init_training()
    existing = jm.active_of(students.owner(), kind)
    if existing is not None:
        st.session_state[job_key(kind)] = existing.id
    return existing


def submit(
    jm: JobBackend,
    spec: JobSpec,
    args,
    label: str,
    recorder: AttentionSnapshots | None,
    base: bert.Bundle | None = None,
    corpus=None,
) -> tuple[JobHandle, bool]:
    """Submit `spec` as this session's job of its kind (or get the one already active) and make it
    the job its page follows. A new job gets the spec's info (with its settings, `args`) for the
    page; its attention snapshots are registered under `label`."""
    new_students.admit(spec.student, new_students.client_address())  # a browser never seen before costs a token
    job, new = jm.submit_spec(
        students.owner(),
        spec,
        session_id=current_session_id(),
        base=base,
        corpus=corpus,
        recorder=recorder,
        load_base=load_model,  # where the job runs without the page's model: the pickers' safe loader
    )
    if new and recorder is not None:
        snapshots.register(f"{label} ({SNAPSHOT_NAMES[spec.kind]}, job {job.id})", recorder)
    if new:
        job.info = {**spec.info, "args": args}
    st.session_state[job_key(spec.kind)] = job.id
    return job, new
