"""The Decoder page's job in this session: starting it (a button callback), following it by the
session's owner id (a session never reaches another's job), and keeping what it made.

A finished job's model, curves and settings move into st.session_state under RESULT (the newest
only: a session holds one trained encoder-decoder), and the server-side job is forgotten. The run
is saved under its run code like the other trainings' (app/jobs/saved_runs.py): `reopen` brings it
back after a refresh or a restart, for a day.
"""

from __future__ import annotations

import uuid

import streamlit as st

from bert.errors import DataError, InputError
from bert.seq2seq.model import decoder_refusal
from bert.seq2seq.tasks import TASKS, Pairs, task_pairs
from bert.train.events import last as last_event
from bert.train.seq2seq import TINY, Seq2SeqArgs

from ..jobs import saved_runs
from ..jobs.backend import job_backend
from ..jobs.budget import LimitError
from ..jobs.records import Saved, SaveFailed, loaded_record
from ..jobs.seq2seq_job import Seq2SeqBudget, seq2seq_budget, seq2seq_spec
from ..jobs.spec import KINDS, PRETRAIN, SEQ2SEQ
from ..model_sources import in_hand, load_model
from ..run_session import session as ts
from ..run_session.follow import current_session_id, notice_errors
from ..run_session.reports import base_bundle
from ..server import new_students
from ..students import owner, student_key
from ..trained_decoder import RESULT

JOB = "s2s_job_id"  # int | None: the job this session follows
NOTICE = "s2s_notice"  # (level, text) | None: a message from a callback, shown once
UPLOAD = "s2s_upload"  # dict {name, data, id} | None: an uploaded CSV's bytes


def init() -> None:
    ts.init_training()
    for key in (JOB, RESULT, NOTICE, UPLOAD):
        st.session_state.setdefault(key, None)


def current_job(jm=None):
    """This session's job, or None."""
    jid = st.session_state.get(JOB)
    return None if jid is None else (jm or job_backend()).get(owner(), jid)


def encoder_for(source: str):
    """The base bundle of an encoder choice (None for the tiny fresh one); InputError when gone."""
    if source == TINY:
        return None
    base = base_bundle(source)
    if base is None:
        raise InputError("That model is no longer in this session: pick another encoder.")
    return base


def budget(args: Seq2SeqArgs, pairs: Pairs | None, base) -> Seq2SeqBudget:
    """The job's budget for these settings: an upload's pairs, or the built-in task's as the job
    makes them (base None: the tiny fresh encoder)."""
    if pairs is None:
        every = task_pairs(args.task, args.train_pairs, args.valid_pairs, args.seed)
    else:
        every = (pairs,)
    return seq2seq_budget(args, list(every), base)


def on_start(args: Seq2SeqArgs, pairs: Pairs | None) -> None:
    """Start button: queue the job for this session (pairs: an upload, None: the built-in task)."""
    ss = st.session_state
    ss[NOTICE] = None
    with notice_errors(NOTICE, "starting the decoder training"):
        base = encoder_for(args.encoder)
        if base is not None and args.from_encoder and (why := decoder_refusal(base.config)):
            raise InputError(why)
        if why := budget(args, pairs, base).refusal():
            raise LimitError(why)
        what = pairs.label if pairs is not None else TASKS[args.task].title
        code = saved_runs.new_code()
        info = {"task": what, "code": code}
        spec = seq2seq_spec(code, args, pairs, student=student_key(), title=f"decoder on {what}", info=info)
        new_students.admit(spec.student, new_students.client_address())  # a browser never seen before costs a token
        job, new = job_backend().submit_spec(
            owner(), spec, session_id=current_session_id(), base=base, load_base=load_model
        )
        if new:
            job.info = {**spec.info}  # its run code, for the result
        ss[JOB] = job.id


def collect(jm=None) -> dict | None:
    """If this session's job has finished, keep what it made under RESULT and return it."""
    jm = jm or job_backend()
    job = current_job(jm)
    if job is None:
        st.session_state[JOB] = None
        return None
    if job.active:
        return None
    job.drain()
    st.session_state[JOB] = None
    jm.forget(job)
    failed = last_event(job.metrics, SaveFailed)  # on a worker, an unsaved run does not come back
    if job.result is None:
        msg = job.error or (failed and failed.message)
        msg = msg or ("Stopped before it started: nothing was trained." if job.status == "stopped" else "")
        st.session_state[NOTICE] = ("error" if job.error or failed else "info", msg or "The job ended without a model.")
        return None
    if failed:
        st.session_state[NOTICE] = ("error", failed.message)
    res = {
        "bundle": in_hand(job.result),  # a worker's run comes back from the run store: its model loaded here
        "metrics": list(job.metrics),
        "status": job.status,
        "error": job.error,
        "stop_reason": job.stop_reason,
        "title": job.title,
        "run": uuid.uuid4().hex,  # names this run in caches: a later run's figures are never this one's
        "code": job.info.get("code"),
        "saved": last_event(job.metrics, Saved) is not None,
        "finished": job.finished,
    }
    job.result = None
    st.session_state[RESULT] = res
    return res


def reopen(text: str) -> dict:
    """A saved Decoder on top run back in this session (RESULT) from its run code (typed by the
    student: checked to be exactly 6 letters and digits); InputError / DataError with a message
    otherwise, and for a code of another page's run."""
    code = saved_runs.parse_code(text)
    res = st.session_state.get(RESULT)
    if res and res.get("code") == code:
        return res
    bundle, record = saved_runs.open_run(code)
    kind = record.get("kind")
    if kind != SEQ2SEQ:
        page = "Pre-training" if kind == PRETRAIN else "Fine-tuning"
        raise DataError(f"Run {code} is a {KINDS.get(kind, 'training')} run: reopen it on the {page} page.")
    rec = loaded_record(record)
    res = {
        "bundle": in_hand(bundle),
        "metrics": rec["metrics"],
        "status": rec.get("status"),
        "error": rec.get("error"),
        "stop_reason": rec.get("stop_reason"),
        "title": record.get("name") or bundle.name,
        "run": uuid.uuid4().hex,
        "code": code,
        "saved": True,
        "finished": record.get("saved"),
    }
    st.session_state[RESULT] = res
    return res


def reopen_callback(widget_key: str) -> None:
    """The "Reopen" button: the run becomes this page's result, or the notice says why not."""
    with notice_errors(NOTICE, "reopening the run"):
        res = reopen(st.session_state.get(widget_key, ""))
        st.session_state[NOTICE] = ("info", f"Run {res['code']} is open: {res['title']}.")
