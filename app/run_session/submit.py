"""Submitting a page's job, whatever it trains: this session's active job of a kind (the one its
page then follows), or a new one submitted with the page's model, the class's admission and the
run's attention recorder registered for the Compare page."""

from __future__ import annotations

import streamlit as st

import bert
from bert.train.attention_snapshots import AttentionSnapshots

from ..jobs.backend import JobBackend, JobHandle
from ..jobs.spec import FINETUNE, PRETRAIN, JobSpec
from ..model_sources import load_model
from ..server import new_students
from ..students import owner
from . import session as ts
from . import snapshots
from .follow import current_session_id, job_key

# what the attention snapshots of a kind of job are called
SNAPSHOT_NAMES = {FINETUNE: "fine-tuning", PRETRAIN: "pre-training"}


def active_job(jm: JobBackend, kind: str) -> JobHandle | None:
    """This session's active job of `kind` (then the job its page follows), or None."""
    ts.init_training()
    existing = jm.active_of(owner(), kind)
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
        owner(),
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
