"""The Fine-tuning page's per-token shapes, "label every word" (a tagger) and "find the answer" (a
reader): their data (built-in or an upload, read by bert/data/tagged.py / bert/data/squad.py), a
few settings, Start, the live curves and the results (app/training/task_head_results.py). The job is
the one life cycle's (kind TASK_HEAD): Stop, run codes, the budget and the memory guard as today's runs.
"""

from __future__ import annotations

import streamlit as st

from bert.checkpoint.builtins import available_builtins
from bert.data.squad import read_squad
from bert.data.tagged import read_tagged
from bert.task_heads import TASK_HEADS
from bert.train.device import server_device
from bert.train.events import TaskHeadStart
from bert.train.events import last as last_event
from bert.train.precision import server_precision
from bert.train.task_head_args import for_task_head

from .. import state
from ..figures.task_heads import task_head_curves
from ..formatting import md_escape
from ..jobs.backend import job_backend
from ..jobs.budget import LimitError
from ..jobs.spec import TASK_HEAD
from ..jobs.task_head_job import BUILTIN
from ..run_session import controls
from ..run_session import session as ts
from ..run_session.finished import collect
from ..run_session.follow import POLL_S, live_job, notice_errors
from ..run_session.progress import task_head_progress
from ..run_session.reports import base_bundle
from ..run_session.uploads import read_upload, remember_upload
from ..students import owner
from ..ui import links, show_figure
from ..ui.errors import show_errors
from . import board_buttons
from . import page as view
from .start import check_head_settings, start_head
from .task_head_results import PAGE, show_task_head_result

CLASSIFY = "classify"
SHAPES = {CLASSIFY: "Classify the text", "tagger": "Label every word", "reader": "Find the answer"}
ABOUT = {
    "tagger": "A new layer gives every token one score per tag (a part of speech, a name's type); each word's "
    "tag is read at its **first piece** (the other pieces of a word are ignored in the loss). Upload a "
    "CoNLL/BIO file (a word and its tag per line, a blank line between sentences) or JSON Lines of "
    '`{"tokens": [...], "tags": [...]}`.',
    "reader": "A new layer gives every passage token two scores: how likely the answer **starts** there, and "
    "how likely it **ends** there; the answer is the best span (start before end, at most 30 tokens). "
    "Passages longer than the window are read in overlapping windows. Upload a SQuAD v1.1 or v2.0 JSON file.",
}
UPLOAD_KINDS = {"tagger": ["conll", "txt", "tsv", "bio", "iob", "jsonl", "json"], "reader": ["json"]}


SHAPE = links.Param(
    "shape", "ft_shape", "choice", default=CLASSIFY, choices=list(SHAPES), codes=("text", "words", "answer")
)


def task_shape() -> str:
    """The task shape picker at the top of the Fine-tuning page (in its link: ?shape=words)."""
    links.view(SHAPE)
    ts.seed("ft_shape", CLASSIFY, list(SHAPES))
    shape = st.radio("Task shape", list(SHAPES), key="ft_shape", horizontal=True, format_func=SHAPES.get)
    ts.remember("ft_shape")
    return shape


def _data(head: str):
    """The chosen data: None for the built-in set, else the upload read (errors shown by the caller)."""
    key = f"hd_{head}_source"
    ts.seed(key, "builtin", ["builtin", ts.UPLOAD])
    builtin = for_task_head(head).data
    source = st.radio(
        "Data",
        ["builtin", ts.UPLOAD],
        key=key,
        horizontal=True,
        format_func=lambda s: "Upload a file" if s == ts.UPLOAD else f"Built-in: {BUILTIN[builtin]}",
    )
    ts.remember(key)
    if source == "builtin":
        st.caption(
            "Brown Corpus (1961 American English): 3,000 press sentences, its 87 tags folded into 16 parts of speech."
            if head == "tagger"
            else "600 questions over 120 short invented biographies, made by this project from templates: "
            "easy, regular text, for seeing the task's shape."
        )
        return None
    up = st.file_uploader("Your file", type=UPLOAD_KINDS[head], key=ts.upload_key(f"hd_{head}_file"))
    key = f"hd_{head}_upload"
    stored = remember_upload(key, up)
    if stored is None:
        st.info("Upload a file to train on it.", icon=":material/upload_file:")
        return False
    data = read_upload(key, stored, read_tagged if head == "tagger" else read_squad)
    st.success(md_escape(f"{stored['name']}: {data.summary()}"), icon=":material/check_circle:")
    for note in data.notes:
        st.caption(md_escape(note))
    return data


def _args(head: str, base_source: str):
    """The run's TaskHeadArgs from the page's settings."""
    ss = st.session_state
    max_length = int(ss[f"hd_{head}_max_length"])
    return for_task_head(
        head,
        checkpoint=base_source,
        max_length=max_length,
        stride=min(for_task_head(head).stride, max_length // 4),  # a shorter window shares less
        lr=float(ss[f"hd_{head}_lr"]),
        epochs=int(ss[f"hd_{head}_epochs"]),
        max_train=int(ss[f"hd_{head}_max_train"]),
        precision=server_precision(),
        device=server_device(),
    )


def on_start(head: str, data, base_source: str) -> None:
    """Start button callback."""
    ss = st.session_state
    with notice_errors(ts.HD_NOTICE, "starting the job"):
        if job_backend().active_of(owner(), TASK_HEAD) is not None:
            ss[ts.HD_NOTICE] = ("info", "Your fine-tuning job is already running.")
            return
        base = base_bundle(base_source)
        if base is None:
            ss[ts.HD_NOTICE] = ("error", "That model is no longer in this session: pick another one.")
            return
        args = _args(head, base_source)
        if data is not None:
            args.data = data.source
        try:
            start_head(base, base_source, args, data)
            ss[ts.HD_NOTICE] = None
        except LimitError as e:
            ss[ts.HD_NOTICE] = ("error", str(e))


def _fits(head: str, data, base_source: str) -> bool:
    """The budget line under the settings (steps, memory, minutes), or what is over a cap, or why
    the base model cannot be read: False then."""
    fits = False
    with show_errors("the model"):
        base = base_bundle(base_source)
        if base is None:
            return False
        est = check_head_settings(base, _args(head, base_source), data or None)
        if est["ok"]:
            st.caption(est["line"])
        else:
            st.error(md_escape(est["line"]), icon=view.ICON_ERR)
        fits = est["ok"]
    return fits


def _settings(head: str) -> str:
    d = for_task_head(head)
    sources = list(dict.fromkeys([d.checkpoint, *available_builtins(), *map(state.session_key, state.user_models())]))
    defaults = {
        "base": d.checkpoint,
        "max_length": d.max_length,
        "lr": d.lr,
        "epochs": d.epochs,
        "max_train": d.max_train,
    }
    for k, v in defaults.items():
        ts.seed(f"hd_{head}_{k}", v, sources if k == "base" else None)
    with st.expander("Model and training settings (the defaults are measured: see the caption below Start)"):
        c1, c2, c3 = st.columns(3)
        c1.selectbox("Start from", sources, key=f"hd_{head}_base")
        c2.number_input("Max tokens per input", 16, 512, key=f"hd_{head}_max_length", step=16)
        c3.number_input("Learning rate", 1e-6, 1e-2, key=f"hd_{head}_lr", format="%.1e", step=1e-5)
        c1.number_input("Epochs", 1, 10, key=f"hd_{head}_epochs")
        c2.number_input("Use at most this many examples", 20, 20_000, key=f"hd_{head}_max_train", step=100)
    ts.remember(*[f"hd_{head}_{k}" for k in defaults])
    return st.session_state[f"hd_{head}_base"]


def task_head_page(head: str) -> None:
    """The whole flow of one per-token shape."""
    st.markdown(ABOUT[head])
    new_result = collect(TASK_HEAD)  # the page's "Reopen a run" box above opens these runs too
    if new_result is not None:
        st.session_state[PAGE.select_key] = new_result["name"]
    st.header("1. Data")
    data = False
    with show_errors("the data"):
        data = _data(head)
    st.header("2. Settings")
    base_source = _settings(head)
    fits = _fits(head, data, base_source)
    st.header("3. Train")
    task, inputs = TASK_HEADS[head].task, (head, data or None, base_source)
    job = controls.start_section(
        PAGE, job_backend(), TASK_HEAD, f"Start: {task}", on_start, inputs, data is False or not fits
    )
    if job is not None and job.active:
        st.fragment(run_every=POLL_S)(_live_panel)()
    view.results_section(PAGE, "4. Results", show_task_head_result)


def _live_panel() -> None:
    job = live_job(TASK_HEAD)
    if job is None:
        return
    board_buttons.push_live(job)  # a run shown live on the class board (its end: push_ended)
    start = last_event(job.metrics, TaskHeadStart)
    controls.live_progress(job, job_backend(), *task_head_progress(job.metrics))
    show_figure.show(task_head_curves(job.metrics, start.steps if start else None), "heads-live-curves", key="hd_live")
    controls.stop_button(PAGE, job, "Stop (keeps the best model so far)", "Stopping… (the best model so far is kept)")
    board_buttons.live_share(job)
