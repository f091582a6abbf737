"""Session-state keys of the two training pages (kept apart from app/state.py).

What a session made must survive reruns and page switches, so nothing here lives only in a
widget: an uploaded file's bytes are copied under FT_UPLOAD / PT_UPLOAD when it arrives
(Streamlit forgets a file_uploader's value when another page runs), and a finished job's model,
metrics and report are moved into FT_RESULTS / PT_RESULTS (the server-side job is then
forgotten, so the session's copy is the one in memory; the run is also saved on disk under its
run code, app/jobs/saved_runs.py). A Fine-tuning file stays until its student removes it; a
Pre-training file is dropped once its job has started (app/run_session/uploads.py).
"""

from __future__ import annotations

import streamlit as st

from .. import students

FT_JOB = "ft_job_id"  # int | None: the fine-tuning job this session follows
PT_JOB = "pt_job_id"  # int | None: the pre-training job this session follows
FT_RESULTS = "ft_results"  # list[dict]: finished fine-tuning runs, newest last
PT_RESULTS = "pt_results"  # list[dict]: finished pre-training runs, newest last
FT_UPLOAD = "ft_upload"  # dict {name, data, id} | None: the training file's bytes
FT_VAL_UPLOAD = "ft_val_upload"  # same for the validation file
PT_UPLOAD = "pt_upload"  # same for an uploaded pre-training .txt
FT_PARSED = "ft_parsed"  # dict: (upload id, text col, label col) -> LabelledData | error
UPLOAD_PARSED = "upload_parsed"  # dict upload key -> ((reader, content hash, name), what it read | error)
PT_PARSED = "pt_parsed"  # dict: upload id -> the corpus made of it | error (one file at a time)
FT_NOTICE = "ft_notice"  # str | None: a message to show once (e.g. "already running")
PT_NOTICE = "pt_notice"
HD_JOB = "hd_job_id"  # the same three for a per-token head's job (a tagger, a reader: the Fine-tuning page)
HD_RESULTS = "hd_results"
HD_NOTICE = "hd_notice"
DC_JOB = "dc_job_id"  # the dictionary job (the Features page) and its notice
DC_NOTICE = "dc_notice"
FREED = "train_freed_uploads"  # dict upload key -> file name: uploads freed when their job started (Pre-training)
UPLOAD = "upload"  # the data-source choice "my own file" on both pages
UPLOAD_GEN = "train_upload_gen"  # int: part of the upload widgets' keys; +1 resets them

MAX_MODELS = 3  # finished models a session keeps, both pages together


def init_training() -> None:
    students.owner()  # this session's owner id, before any job is looked up
    ss = st.session_state
    for key in (FT_RESULTS, PT_RESULTS, HD_RESULTS):
        if key not in ss:
            ss[key] = []
    for key in (FT_JOB, PT_JOB, HD_JOB, DC_JOB, FT_UPLOAD, FT_VAL_UPLOAD, PT_UPLOAD, FT_NOTICE, PT_NOTICE, HD_NOTICE):
        if key not in ss:
            ss[key] = None
    for key in (FT_PARSED, FREED):
        if key not in ss:
            ss[key] = {}


def upload_key(name: str) -> str:
    """The key of an upload widget (changes when free_uploads resets them)."""
    return f"{name}_{st.session_state.get(UPLOAD_GEN, 0)}"


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
