"""Finished runs in this session: collected from their jobs, reopened from their run codes.

Nothing a session made is lost on rerun: a finished job's model, curves and report are moved
into st.session_state (`collect`), registered with app.state.add_user_model so the other pages
can pick it, and the server-side job is forgotten. A saved run's model (a job's, a reopened
one) is kept as a handle on the server's one copy (app/jobs/run_models.py), loaded again from disk
when used after the server let it go. A session keeps at most MAX_MODELS models (both pages
together); the oldest is dropped, and stays on disk under its code.
"""

from __future__ import annotations

import time
from dataclasses import is_dataclass

import streamlit as st

import bert
from bert import DataError
from bert.task_heads import TASK_HEADS
from bert.train.events import last as last_event

from .. import state
from ..jobs import saved_runs
from ..jobs.backend import JobBackend, job_backend
from ..jobs.records import Saved, SaveFailed, loaded_record, run_record
from ..jobs.run_models import SavedBundle
from ..jobs.spec import DICTIONARY, FINETUNE, PRETRAIN, SEQ2SEQ, TASK_HEAD
from ..jobs.worker import stop_message
from ..students import student_key
from . import session as ts
from .follow import current_job, job_key, notice_errors
from .names import unique_model_name
from .run_size import record_speed, speed_key

MAX_MODELS = ts.MAX_MODELS
TRAINED = (FINETUNE, PRETRAIN, TASK_HEAD)  # the kinds of job whose results a session keeps


def results_key(kind: str) -> str:
    return {FINETUNE: ts.FT_RESULTS, TASK_HEAD: ts.HD_RESULTS}.get(kind, ts.PT_RESULTS)


def notice_key(kind: str) -> str:
    return {FINETUNE: ts.FT_NOTICE, TASK_HEAD: ts.HD_NOTICE, DICTIONARY: ts.DC_NOTICE}.get(kind, ts.PT_NOTICE)


def collect(kind: str, jm: JobBackend | None = None) -> dict | None:
    """If this session's job of `kind` has finished, move what it made into session_state:
    returns the new result (or None). The model is registered for the other pages."""
    ts.init_training()
    jm = jm or job_backend()
    key = job_key(kind)
    job = current_job(kind, jm)
    if job is None:
        st.session_state[key] = None
        return None
    if job.active:
        return None
    job.drain()
    info = job.info
    st.session_state[key] = None
    jm.forget(job)
    if job.result is None:
        # nothing to keep: it failed before training or was stopped while waiting
        msg = job.error or (
            "Stopped before it started: nothing was trained."
            if job.status == "stopped"
            else "The job ended without a model."
        )
        st.session_state[notice_key(kind)] = ("error" if job.error else "info", msg)
        return None
    res = run_record(kind, job.metrics, info, job.status, job.error, job.stop_reason)
    failed = last_event(job.metrics, SaveFailed)
    res.update(
        job_id=job.id,
        finished=job.finished,
        code=info.get("code"),
        saved=last_event(job.metrics, Saved) is not None,
        student=job.student or student_key(),  # who trained it (as its run.json says): who may post it
    )
    if failed:
        st.session_state[notice_key(kind)] = ("error", failed.message)
    if kind == FINETUNE and res["done"] is not None and is_dataclass(args := info.get("args")):
        key = speed_key(args.checkpoint, args.batch_size, args.max_length, args.freeze_layers, args.freeze_embeddings)
        record_speed(key, res["done"].examples_per_s)
    bundle = job.result
    if res["saved"] and res["code"] and not isinstance(bundle, SavedBundle):  # a handle, the server one copy
        bundle = saved_runs.adopt_run(res["code"], bundle)
    job.result = None
    return add_result(kind, res, bundle, job.title or bundle.name)


def add_result(kind: str, res: dict, bundle: bert.Bundle, name: str) -> dict:
    """Register a result's model for the other pages and keep it, at most MAX_MODELS in all."""
    name = unique_model_name(name)
    bundle.name = name
    res.update(bundle=bundle, name=name, key=state.add_user_model(name, bundle, select=False), added=time.time())
    st.session_state[results_key(kind)].append(res)
    dropped = []
    while True:
        everything = [(r, k) for k in TRAINED for r in st.session_state[results_key(k)]]
        if len(everything) <= MAX_MODELS:
            break
        old, k = min(everything, key=lambda rk: rk[0].get("added", 0))
        st.session_state[results_key(k)].remove(old)
        _unregister(old)
        dropped.append(old)
    if dropped:
        kept = "; ".join(  # a run its student's newer runs removed from the disk has no code to give
            f"{d['name']} (run code {d['code']})" if d.get("saved") and saved_runs.is_saved(d["code"]) else d["name"]
            for d in dropped
        )
        st.session_state[notice_key(kind)] = (
            "info",
            f"This session keeps its last {MAX_MODELS} models: {kept} was removed. "
            f"Reopen a run with its code (for a day), or download a model to keep it.",
        )
    return res


def _unregister(res: dict) -> None:
    name = res.get("name")
    models = state.user_models()
    if name in models and models[name] is res.get("bundle"):
        del models[name]
        st.session_state.get(state.USER_MODEL_IDS, {}).pop(name, None)


def reopen(text: str) -> dict:
    """A saved run back in this session from its run code (typed by the student: checked to be
    exactly 6 letters and digits). InputError / DataError with a message otherwise."""
    ts.init_training()
    code = saved_runs.parse_code(text)
    for kind in TRAINED:
        for res in st.session_state[results_key(kind)]:
            if res.get("code") == code:
                return res
    kind = saved_runs.run_record_of(code)[1].get("kind")
    if kind == SEQ2SEQ:
        raise DataError(f"Run {code} is a decoder training run: reopen it on the Decoder on top page.")
    if kind == DICTIONARY:
        raise DataError(f"Run {code} is a dictionary of features: reopen it on the Features page.")
    if kind not in TRAINED:
        raise DataError(f"Run {code} cannot be opened here.")
    bundle, record = saved_runs.open_run(code)
    res = {**loaded_record(record), "job_id": code, "finished": record.get("saved"), "saved": True, "code": code}
    return add_result(kind, res, bundle, record.get("name") or bundle.name)


def reopen_callback(kind: str, widget_key: str, select_key: str) -> None:
    """The "Reopen" button: the run goes to its page's results (and is selected there)."""
    with notice_errors(notice_key(kind), "reopening the run"):
        res = reopen(st.session_state.get(widget_key, ""))
        if res["kind"] == kind:
            st.session_state[select_key] = res["name"]
            st.session_state[notice_key(kind)] = ("info", f"Run {res['code']} is open: {res['name']}.")
        else:
            st.session_state[notice_key(kind)] = ("info", f"Run {res['code']} ({res['name']}) {_where(res)}.")


def _where(res: dict) -> str:
    """Where a reopened run of another page (or task shape) is shown."""
    if res["kind"] == TASK_HEAD:
        task = TASK_HEADS[res["info"]["args"].head].task
        return f"is shown on the Fine-tuning page under “{task}”, and is in the sidebar's model list"
    other = "Pre-training" if res["kind"] == PRETRAIN else "Fine-tuning"
    return f"is a {other.lower()} run: it is on the {other} page, and in the sidebar's model list"


def results(kind: str) -> list[dict]:
    ts.init_training()
    return st.session_state[results_key(kind)]


def result_status(res: dict) -> str | None:
    """The line a result shows when it stopped early (why), or None."""
    if res.get("status") == "stopped" or (res.get("done") is not None and res["done"].stopped):
        if res.get("kind") == PRETRAIN and res.get("stop_reason") in (None, "user"):
            return "Stopped early: the model as it was then is kept."
        return stop_message(res.get("stop_reason"))
    return None


def run_code_line(res: dict) -> str | None:
    if not res.get("saved") or not res.get("code"):
        return None
    until = time.strftime("%H:%M on %d %b", time.localtime((res.get("finished") or time.time()) + saved_runs.TTL_S))
    return (
        f"Run code **{res['code']}**: this run is saved on the server until {until}. After a refresh "
        f"or a restart, type the code under “Reopen a run” to get it back."
    )


def use_model(key: str) -> None:
    """Button callback: make a result the model of the other pages."""
    st.session_state[state.MODEL_SOURCE] = key
