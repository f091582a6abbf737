"""Session-state keys of the two training pages (kept apart from app/state.py).

What a session made must survive reruns and page switches, so nothing here lives only in a
widget: an uploaded file's bytes are copied under FT_UPLOAD / PT_UPLOAD when it arrives
(Streamlit forgets a file_uploader's value when another page runs), and a finished job's model,
metrics and report are moved into FT_RESULTS / PT_RESULTS (the server-side job is then
forgotten, so the only copy is this session's).
"""
from __future__ import annotations

import uuid

import streamlit as st

OWNER = "train_owner"               # str: this session's owner id for app.jobs (never shown)
FT_JOB = "ft_job_id"                # int | None: the fine-tuning job this session follows
PT_JOB = "pt_job_id"                # int | None: the pre-training job this session follows
FT_RESULTS = "ft_results"           # list[dict]: finished fine-tuning runs, newest last
PT_RESULTS = "pt_results"           # list[dict]: finished pre-training runs, newest last
FT_UPLOAD = "ft_upload"             # dict {name, data, id} | None: the training file's bytes
FT_VAL_UPLOAD = "ft_val_upload"     # same for the validation file
PT_UPLOAD = "pt_upload"             # same for an uploaded pre-training .txt
FT_PARSED = "ft_parsed"             # dict: (upload id, text col, label col) -> LabelledData | error
FT_NOTICE = "ft_notice"             # str | None: a message to show once (e.g. "already running")
PT_NOTICE = "pt_notice"

MAX_RESULTS = 3                     # finished models kept per page and session (memory)


def init() -> None:
    ss = st.session_state
    if OWNER not in ss:
        ss[OWNER] = uuid.uuid4().hex
    for key in (FT_RESULTS, PT_RESULTS):
        if key not in ss:
            ss[key] = []
    for key in (FT_JOB, PT_JOB, FT_UPLOAD, FT_VAL_UPLOAD, PT_UPLOAD, FT_NOTICE, PT_NOTICE):
        if key not in ss:
            ss[key] = None
    if FT_PARSED not in ss:
        ss[FT_PARSED] = {}


def owner() -> str:
    """This session's owner id: jobs are looked up with it, so a session only sees its own."""
    init()
    return st.session_state[OWNER]


# --- settings that survive a page switch ------------------------------------------------------
# Streamlit deletes a widget's value when a page without that widget runs. The training pages
# seed each widget from a plain dict before drawing it and copy the values back after.

SAVED = "train_saved_settings"


def seed(key: str, default, options=None) -> None:
    """Give widget `key` its saved value (or `default`) unless it already has one. With
    `options`, a saved value no longer among them falls back to the default."""
    ss = st.session_state
    saved = ss.setdefault(SAVED, {})
    if key in ss and (options is None or ss[key] in options):
        return
    value = saved.get(key, default)
    if options is not None and value not in options:
        value = default if default in options else (options[0] if options else None)
    ss[key] = value


def remember(*keys: str) -> None:
    ss = st.session_state
    saved = ss.setdefault(SAVED, {})
    for k in keys:
        if k in ss:
            saved[k] = ss[k]
